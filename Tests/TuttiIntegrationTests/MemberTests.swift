import Foundation
import Testing
import TuttiAPI
import TuttiCore

extension IntegrationTests {
/// Members with credentials of their own (docs/security.md, "Members"): two followers that
/// hold the house key enrol, one of them signs what the coordinator would send with its own
/// credential to the other (refused), then is revoked: it hears noise and is told it is not
/// a member, cannot come back with the house key, and the other plays on through the move
/// to the stream's new key, which it got by itself.
@Suite("Members and revocation", .timeLimit(.minutes(2)))
struct MemberTests {
    @Test func aRevokedMemberNeitherHearsNorSteersAndTheOthersPlayOn() throws {
        let h = try Harness("members")
        let noise = try h.noiseSong(seconds: 40)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", noise, "--multicast", "off", "--clock-listen", clock, "--sdp", h.path("stream.sdp")])
        let url = try #require(h.controlURL())
        let follow = ["follower", "--coordinator", clock, "--unicast", "--status-interval", "1"]
        try h.tutti("a", follow + ["--name", "a", "--output", "wav:" + h.path("a.wav")])
        try h.tutti("b", follow + ["--name", "b", "--output", "null"])
        for room in ["a", "b"] {
            #expect(Harness.wait(timeout: 15) { h.log(room).contains("state: playing") && h.log(room).contains("enrolled as member") },
                    "\(room): \(h.log(room))")
            #expect((try FileManager.default.attributesOfItem(atPath: h.path("state/member-\(room).key"))[.posixPermissions] as? Int) == 0o600)
        }
        let before = try members(h, url)
        #expect(before.enrolment && before.keyGeneration == 0 && Set(before.members.compactMap(\.room)) == ["a", "b"], "\(before)")
        let sdpBefore = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)

        // b signs epoch ends and muting settings with its own credential, as itself and as
        // other members, to a's ports: a takes none of them.
        let ports = h.log("a").matches(of: #/on port (\d+)|clock port (\d+)/#).compactMap { $0.1.map(String.init) ?? $0.2.map(String.init) }
        #expect(ports.count == 2, "\(h.log("a"))")
        let settingsBefore = h.log("a").components(separatedBy: "room settings").count
        let forger = try h.start("forger", ["python3", Harness.packageRoot + "/bench/lib/stranger.py", "--coordinator", clock,
                                            "--follower", "127.0.0.1", "--ports", ports.joined(separator: ","),
                                            "--member-key", h.path("state/member-b.key")])
        #expect(forger.wait(timeout: 30) == 0, "\(h.log("forger"))")
        #expect(h.log("a").components(separatedBy: "room settings").count == settingsBefore, "a took settings from b: \(h.log("a"))")

        // Revoked: the stream moves to a key b does not get; a gets it by itself.
        let revoked = try h.ctl(["member", "revoke", "b"], server: url)
        #expect(revoked.code == 0 && revoked.out.contains("revoked b"), "\(revoked)")
        let revokedAt = Date()
        #expect(Harness.wait(timeout: 10) { h.log("coordinator").contains("the stream moved to its key of generation 1") }, "\(h.log("coordinator"))")
        let moved = Date().timeIntervalSince(revokedAt)
        #expect(moved < HouseKeyringDeadline.seconds, "the stream waited for a, which took the key within \(moved) s")
        #expect(h.log("a").contains("took the stream's key of generation 1"), "\(h.log("a"))")
        let after = try members(h, url)
        #expect(!after.enrolment && after.keyGeneration == 1 && after.members.map(\.room) == ["a"], "\(after)")
        let sdpAfter = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)
        #expect(sdpAfter.contains("inline:") && sdpAfter != sdpBefore, "the SDP file carries the new key")

        // b hears noise (its packets no longer open) and is told it is not a member.
        #expect(Harness.wait(timeout: 15) {
            h.log("b").contains("not one of its members") && (h.log("b").matches(of: #/unsealed (\d+)/#).last.map { Int($0.1)! > 100 } ?? false)
        }, "b: \(h.log("b"))")
        // Restarted without its credential, it cannot enrol again with the house key.
        h.stop("b")
        try FileManager.default.removeItem(atPath: h.path("state/member-b.key"))
        try h.tutti("b2", follow + ["--name", "b", "--output", "null"])
        #expect(Harness.wait(timeout: 10) { h.log("b2").contains("enrolment by the house key is closed") }, "b2: \(h.log("b2"))")
        #expect(!h.log("b2").contains("state: playing") && !h.log("b2").contains("enrolled as member"))
        #expect(try members(h, url).members.map(\.room) == ["a"])

        // a played on throughout: from half a second after it started to the end (3 s after the
        // stream moved to its new key at least), no silent 100 ms.
        Thread.sleep(forTimeInterval: max(0, 3 - Date().timeIntervalSince(revokedAt) + moved))
        h.stop("a")
        let wav = try #require(Analysis.readWAV(h.path("a.wav")))
        let left = wav.channels[0]
        #expect(left.count >= 6 * 48_000, "a played \(left.count) samples")
        var quiet = 0
        for block in stride(from: 24_000, to: left.count - 4_800, by: 4_800) where Analysis.rms(left[block..<(block + 4_800)]) < 0.01 {
            quiet += 1
        }
        #expect(quiet == 0, "\(quiet) silent 100 ms blocks in a")
    }

    func members(_ h: Harness, _ url: String) throws -> MembersView {
        let listed = try h.ctl(["members", "--json"], server: url)
        return try JSONDecoder().decode(MembersView.self, from: Data(listed.out.utf8))
    }
}

/// How long the coordinator waits at most for its members to take a new stream key.
enum HouseKeyringDeadline {
    static let seconds = 5.0
}
}
