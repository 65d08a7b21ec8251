import Foundation
import Testing
import TuttiCore
import TuttiNode

extension IntegrationTests {
/// Pairing a new machine with the code the coordinator shows: it gets the house key and plays;
/// a wrong code costs a try; a machine without a key, or with another house's, is told how
/// to pair.
@Suite("Pairing a new member", .timeLimit(.minutes(2)))
struct PairingTests {
    @Test func aPairedFollowerPlaysAndAnUnpairedOneIsToldHowToPair() throws {
        let h = try Harness("pair")
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--loop", "--multicast", "off", "--clock-listen", clock])
        let url = try #require(h.controlURL())
        let newKey = h.path("pi/house.key")  // the new machine's state folder
        let follow = ["follower", "--coordinator", clock, "--unicast", "--output", "null", "--status-interval", "1"]

        let unpaired = try h.run("unpaired", [Harness.binary] + follow + ["--key", newKey])
        #expect(unpaired.code != 0 && unpaired.err.contains("tutti pair CODE"), "\(unpaired.err)")

        let shown = try h.ctl(["pair", "--json"], server: url)
        let code = try #require((try? JSONDecoder().decode(PairingCode.self, from: Data(shown.out.utf8)))?.code, "\(shown)")
        #expect(h.log("coordinator").contains("pairing code \(code)"))

        // A stranger who spends five wrong proofs does not close the code on its member.
        for n in 1...5 {
            let wrong = try h.run("pair-wrong-\(n)", [Harness.binary, "pair", "AAAAA-AAAA\(n)", "--server", url, "--key", newKey])
            #expect(wrong.code != 0 && wrong.err.contains("wrong pairing code"), "\(wrong.err)")
        }
        #expect(!FileManager.default.fileExists(atPath: newKey))

        let paired = try h.run("pair", [Harness.binary, "pair", code.lowercased(), "--server", url, "--key", newKey])
        #expect(paired.code == 0 && paired.out.contains("paired"), "\(paired.out) \(paired.err)")
        let coordinatorKey = try String(contentsOfFile: h.path("state/house.key"), encoding: .utf8)
        #expect(try String(contentsOfFile: newKey, encoding: .utf8) == coordinatorKey)
        #expect((try FileManager.default.attributesOfItem(atPath: newKey)[.posixPermissions] as? Int) == 0o600)
        #expect(h.log("coordinator").contains("a new member paired"))

        let again = try h.run("pair-again", [Harness.binary, "pair", code, "--server", url, "--key", h.path("pi2/house.key")])
        #expect(again.code != 0 && again.err.contains("no pairing code is open"), "a code pairs one machine: \(again.err)")
        let twice = try h.run("pair-twice", [Harness.binary, "pair", code, "--server", url, "--key", newKey])
        #expect(twice.code != 0 && twice.err.contains("--replace"), "\(twice.err)")

        try h.tutti("a", follow + ["--name", "a", "--key", newKey])
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") }, "\(h.log("a"))")

        // A machine of another house is told it is not a member, and how to pair.
        let otherKey = h.path("other/house.key")
        try FileManager.default.createDirectory(atPath: h.path("other"), withIntermediateDirectories: true)
        try String(repeating: "ab", count: 32).write(toFile: otherKey, atomically: true, encoding: .utf8)
        try h.tutti("b", follow + ["--name", "b", "--key", otherKey])
        #expect(Harness.wait(timeout: 10) { h.log("b").contains("not a member of its house") && h.log("b").contains("tutti ctl pair") },
                "\(h.log("b"))")
        #expect(!h.log("b").contains("state: playing"))
    }
}
}
