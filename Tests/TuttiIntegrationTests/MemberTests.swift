import Foundation
import Testing
import TuttiAPI
import TuttiFollower
import TuttiCore
import TuttiNet
import TuttiNode
import TuttiSecurity

extension IntegrationTests {
/// Members with credentials of their own (docs/security.md, "Members"): two followers that
/// hold the house key enrol, one of them signs what the coordinator would send with its own
/// credential to the other (refused), plays into the other's room with the stream's group key
/// (refused: the coordinator's tag for the other is not its to make), then is revoked: it hears noise and is told it is not
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
        let metricsPort = Harness.freePort()
        try h.tutti("a", follow + ["--name", "a", "--output", "wav:" + h.path("a.wav"), "--metrics-listen", "127.0.0.1:\(metricsPort)"])
        try h.tutti("b", follow + ["--name", "b", "--output", "null"])
        for room in ["a", "b"] {
            #expect(Harness.wait(timeout: 15) { h.log(room).contains("state: playing") && h.log(room).contains("enrolled as member") },
                    "\(room): \(h.log(room))")
            #expect((try FileManager.default.attributesOfItem(atPath: memberKeyPath(h, room))[.posixPermissions] as? Int) == 0o600)
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
                                            "--member-key", memberKeyPath(h, "b")])
        #expect(forger.wait(timeout: 30) == 0, "\(h.log("forger"))")
        #expect(h.log("a").components(separatedBy: "room settings").count == settingsBefore, "a took settings from b: \(h.log("a"))")

        // b plays into a's room: packets of the stream's SSRC sealed with the group key it
        // holds, due 100 ms ahead, at sequence numbers all over the range; tagged for b alone,
        // or with b's tag relabelled as a's. a drops them all, and plays on.
        let unsealedBefore = unsealed(h.log("a"))
        let injected = try inject(h, as: "b", posingAs: "a", into: Int(ports[0])!)
        #expect(Harness.wait(timeout: 5) { unsealed(h.log("a")) - unsealedBefore >= injected / 2 }, "a: \(h.log("a"))")
        // Counted as they come (the follower's metrics), not at its next 10-second summary.
        let untagged = { (try? OperationsTests.scrape(metricsPort).body.value("tutti_follower_packets_untagged_total")) ?? nil }
        #expect(Harness.wait(timeout: 5) { (untagged() ?? 0) >= 1 }, "a's untagged packets: \(String(describing: untagged())) \(h.log("a"))")

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
        try FileManager.default.removeItem(atPath: memberKeyPath(h, "b"))
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
        var quiet: [Double] = []
        for block in stride(from: 24_000, to: left.count - 4_800, by: 4_800) where Analysis.rms(left[block..<(block + 4_800)]) < 0.01 {
            quiet.append(Double(block) / 48_000)
        }
        // Where in the recording, and what a said, so that a failure says why.
        #expect(quiet.isEmpty, "\(quiet.count) silent 100 ms blocks in a, at \(quiet) s of \(Double(left.count) / 48_000) s: \(h.log("a").suffix(4000))")
    }

    /// A credential belongs to its house: a follower whose coordinator was reinstalled (a new
    /// house key, given with `--key`) enrols anew in the new house from the same state
    /// folder, and keeps the old house's credential; a credential kept before credentials
    /// were per house is tried, found to be another house's, and the follower enrols anew.
    @Test func aFollowerOfTwoHousesOneAfterTheOtherEnrolsInEach() throws {
        let h = try Harness("two-houses")
        let noise = try h.noiseSong(seconds: 40)
        let clock = "127.0.0.1:\(Harness.freePort())"
        let serve = ["coordinator", noise, "--loop", "--multicast", "off", "--clock-listen", clock, "--control-listen", "127.0.0.1:0"]
        let follow = ["follower", "--coordinator", clock, "--unicast", "--output", "null", "--status-interval", "1", "--name", "hall"]
        try h.tutti("coordinator", serve)
        try h.tutti("a", follow)
        #expect(Harness.wait(timeout: 15) { h.log("a").contains("state: playing") && h.log("a").contains("enrolled as member") },
                "\(h.log("a"))")
        let first = memberKeyPath(h, "hall")
        #expect(FileManager.default.fileExists(atPath: first), "\(first)")
        h.stop("a")
        h.stop("coordinator")

        // The coordinator reinstalled: a state folder and a house key of its own.
        let house2 = h.path("house2")
        try FileManager.default.createDirectory(atPath: house2, withIntermediateDirectories: true)
        try StateStore.writeHouseKey(HouseKey.generate(), to: house2 + "/house.key")
        try h.start("coordinator2", [Harness.binary] + serve, with: ["TUTTI_STATE_DIR": house2])
        try h.tutti("a2", follow + ["--key", house2 + "/house.key"])
        #expect(Harness.wait(timeout: 15) { h.log("a2").contains("state: playing") && h.log("a2").contains("enrolled as member") },
                "\(h.log("a2"))")
        #expect(!h.log("a2").contains("not paired"), "\(h.log("a2"))")
        let second = memberKeyPath(h, "hall", houseKey: house2 + "/house.key")
        #expect(FileManager.default.fileExists(atPath: second) && FileManager.default.fileExists(atPath: first), "both credentials kept")
        h.stop("a2")

        // A credential kept before credentials were per house, the old house's, in house 2.
        try FileManager.default.removeItem(atPath: second)
        try FileManager.default.copyItem(atPath: first, toPath: h.path("state/member-hall.key"))
        try h.tutti("a3", follow + ["--key", house2 + "/house.key"])
        #expect(Harness.wait(timeout: 20) {
            h.log("a3").contains("is not one of this house's") && h.log("a3").contains("enrolled as member") && h.log("a3").contains("state: playing")
        }, "\(h.log("a3"))")
        #expect(FileManager.default.fileExists(atPath: h.path("state/member-hall.key")), "the old file is left as it is")
        #expect(FileManager.default.fileExists(atPath: second))
    }

    /// Where a member's credential is kept in the harness's state folder, for the house whose
    /// key is at `houseKey` (the harness's own by default).
    func memberKeyPath(_ h: Harness, _ name: String, houseKey: String? = nil) -> String {
        let key = HouseKey(hex: (try? String(contentsOfFile: houseKey ?? h.path("state/house.key"), encoding: .utf8)) ?? "")
        return StateFolder.memberKeyPath(in: h.path("state"), name: name, house: key?.fingerprint ?? "")
    }

    /// The follower's count of stream packets it would not open, as its last status line says.
    func unsealed(_ log: String) -> Int {
        log.matches(of: #/unsealed (\d+)/#).last.map { Int($0.1)! } ?? 0
    }

    /// Sends a room's stream port what member `name` can make of the stream: packets sealed
    /// with the group key (generation 0, the house key's), tagged with its own key. Returns
    /// how many were relabelled as member `victim`'s (half of them).
    func inject(_ h: Harness, as name: String, posingAs victim: String, into port: Int) throws -> Int {
        let houseKey = try #require(HouseKey(hex: String(contentsOfFile: h.path("state/house.key"), encoding: .utf8)))
        let member = try #require(MemberKey(text: String(contentsOfFile: memberKeyPath(h, name), encoding: .utf8)))
        let target = try #require(MemberKey(text: String(contentsOfFile: memberKeyPath(h, victim), encoding: .utf8))).id
        let sdp = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)
        let ssrc = try #require(sdp.firstMatch(of: #/a=ssrc:(\d+)/#).flatMap { UInt32($0.1) })
        let sealing = SRTPContext(houseKey.stream)
        let socket = try UDPSocket()
        let clock = SystemClock()
        var relabelled = 0
        for i in 0..<600 {
            let now = clock.nanosecondsNow()
            // Sealed for the stream's first two rollovers: a stream whose random first
            // sequence number was near the top has wrapped by now (a's rollover is then 1,
            // and packets sealed for 0 alone never open: the test failed so, now and then).
            for rollover: UInt32 in [0, 1] {
                let packet = RTPPacket(marker: false, sequenceNumber: SequenceNumber(UInt16(truncatingIfNeeded: i * 109)),
                                       timestamp: StreamTimestamp(UInt32(i) * 960), ssrc: ssrc,
                                       presentationTime: CoordinatorTime(nanoseconds: now + 100_000_000), epoch: UInt32(i % 8),
                                       sendTime: CoordinatorTime(nanoseconds: now), rollover: rollover,
                                       payload: [0xFC] + [UInt8](repeating: 0x55, count: 40))
                var bytes = packet.encode(taggedFor: [member.id])
                StreamTagKey.sign(&bytes, with: [member.streamTag])
                if i % 2 == 1, let slot = RTPPacket.memberTagSlots(in: bytes).first {
                    bytes[slot.at - 2] = UInt8(target >> 8)
                    bytes[slot.at - 1] = UInt8(target & 0xFF)
                    if rollover == 0 { relabelled += 1 }
                }
                try socket.send(try sealing.protectRTP(bytes, rollover: rollover), to: SocketAddress(address: 0x7F00_0001, port: UInt16(port)))
            }
            if i % 50 == 49 { Thread.sleep(forTimeInterval: 0.05) }
        }
        return relabelled
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
