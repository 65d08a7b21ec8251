import Foundation
import Testing
import TuttiNet
import TuttiNode

extension IntegrationTests {
/// The default transport, multicast (TTL 1), inside a network namespace this test makes
/// (loopback up, a multicast route on it), so the host's own network is never touched.
@Suite("Multicast in a network namespace", .timeLimit(.minutes(2)))
struct MulticastTests {
    final class Namespace {
        let name = "tutti-test-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        init?(multicastRoute: Bool = true) {
            guard ChildProcess.output(["ip", "netns", "add", name]) != nil else { return nil }
            _ = ChildProcess.output(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"])
            if multicastRoute { _ = ChildProcess.output(["ip", "netns", "exec", name, "ip", "route", "add", "224.0.0.0/4", "dev", "lo"]) }
        }
        deinit { _ = ChildProcess.output(["ip", "netns", "del", name]) }
        func exec(_ args: [String]) -> [String] { ["ip", "netns", "exec", name] + args }
    }

    @Test func followersReceiveTheMulticastStreamInSync() throws {
        guard let ns = Namespace() else {
            Issue.record("cannot create a network namespace (needs root and iproute2)")
            return
        }
        let h = try Harness("multicast")
        defer { withExtendedLifetime(ns) {} }
        try h.start("coordinator", ns.exec([Harness.binary, "coordinator", Harness.demoSong, "--clock-listen", "127.0.0.1:5005"]))
        #expect(Harness.wait(timeout: 5) { h.log("coordinator").contains("multicast 239.255.77.77:5004") })
        for name in ["a", "b"] {
            try h.start(name, ns.exec([Harness.binary, "follower", "--coordinator", "127.0.0.1",
                                        "--output", "wav:" + h.path(name + ".wav"), "--status-interval", "1"]))
        }
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") && h.log("b").contains("state: playing") })
        Thread.sleep(forTimeInterval: 4)
        #expect(h.log("a").contains("on multicast 239.255.77.77:5004"))
        let a = try #require(Analysis.readWAV(h.path("a.wav")))
        let b = try #require(Analysis.readWAV(h.path("b.wav")))
        let startA = try #require(Int64(try String(contentsOfFile: h.path("a.wav.start"), encoding: .utf8)))
        let startB = try #require(Int64(try String(contentsOfFile: h.path("b.wav.start"), encoding: .utf8)))
        // Put B on A's timeline (both use this host's monotonic clock).
        let shift = Int((startB - startA) * 48_000 / 1_000_000_000)
        let left = a.channels[0]
        let right = shift >= 0 ? [Float](repeating: 0, count: shift) + b.channels[0] : Array(b.channels[0].dropFirst(-shift))
        let skews = Analysis.skews(left, right, from: max(shift, 0) + 96_000, to: min(left.count, right.count) - 4_800)
        #expect(skews.count > 10, "too few comparable windows")
        #expect(Analysis.median(skews.map(abs)) < 60, "followers apart: \(skews)")
    }

    /// Multicast that cannot be joined (no route for it: "No such device"), and multicast
    /// joined but dropped on the way (nftables): either way the follower asks for unicast
    /// by itself, says so once, and plays.
    @Test func aFollowerMulticastDoesNotReachAsksForUnicastByItself() throws {
        guard let noRoute = Namespace(multicastRoute: false), let dropped = Namespace() else {
            Issue.record("cannot create a network namespace (needs root and iproute2)")
            return
        }
        let h = try Harness("multicast-fallback")
        defer { withExtendedLifetime((noRoute, dropped)) {} }
        let drop = "table inet tutti_test {\n chain input {\n  type filter hook input priority 0;\n  ip daddr 239.255.77.77 drop\n }\n}\n"
        try drop.write(toFile: h.path("drop.nft"), atomically: true, encoding: .utf8)
        guard ChildProcess.output(dropped.exec(["nft", "-f", h.path("drop.nft")])) != nil else {
            Issue.record("cannot load an nftables rule (needs nftables)")
            return
        }
        for (ns, name) in [(noRoute, "a"), (dropped, "b")] {
            try h.start("coordinator-" + name, ns.exec([Harness.binary, "coordinator", Harness.demoSong, "--clock-listen", "127.0.0.1:5005",
                                                        "--control-listen", "127.0.0.1:0"]))
            try h.start(name, ns.exec([Harness.followerBinary, "--coordinator", "127.0.0.1", "--output", "wav:" + h.path(name + ".wav")]))
        }
        #expect(Harness.wait(timeout: 20) { h.log("a").contains("state: playing") && h.log("b").contains("state: playing") },
                "a: \(h.log("a"))\nb: \(h.log("b"))")
        #expect(h.log("a").contains("cannot receive multicast (join multicast 239.255.77.77: No such device): asking the coordinator for the stream by unicast instead"), "\(h.log("a"))")
        #expect(h.log("b").contains("no stream on multicast for 3 s while the coordinator answers"), "\(h.log("b"))")
        for name in ["a", "b"] {
            #expect(h.log(name).components(separatedBy: "unicast").count <= 4, "said more than once: \(h.log(name))")
        }
        Thread.sleep(forTimeInterval: 2)
        for name in ["a", "b"] {
            let wav = try #require(Analysis.readWAV(h.path(name + ".wav")), "no recording of \(name)")
            let tail = wav.channels[0].suffix(48_000)
            #expect(tail.count == 48_000 && Analysis.rms(tail) > 0.01, "\(name) is silent")
        }
    }
}
}
