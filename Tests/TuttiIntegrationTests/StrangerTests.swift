import Foundation
import Testing
import TuttiNode

extension IntegrationTests {
/// A stranger host on the house network (its own network namespace behind the relay, with
/// the coordinator and a follower in theirs) that knows the protocol but not the house key:
/// bench/lib/stranger.py forges every clock-port message it can, to the coordinator and to
/// every UDP port of the follower's host, and stream packets of the stream's SSRC.
@Suite("Strangers on the house network", .timeLimit(.minutes(2)))
struct StrangerTests {
    @Test func aStrangerCanNeitherSteerSilenceAddRoomsNorAmplify() throws {
        let h = try Harness("stranger")
        guard let relay = try NetworkTests.Relay(h, delayMs: 0, jitterMs: 0, loss: 0) else { return }
        let noise = try h.noiseSong(seconds: 40)
        try h.start("coordinator", relay.hub([Harness.binary, "coordinator", noise, "--multicast", "off", "--sdp", h.path("stream.sdp"),
                                              "--clock-listen", "0.0.0.0:5005", "--control-listen", "127.0.0.1:18485"]))
        try h.start("a", relay.room(1, [Harness.binary, "follower", "--coordinator", "10.77.0.1:5005", "--unicast", "--name", "a",
                                        "--output", "wav:" + h.path("a.wav"), "--status-interval", "1"]))
        #expect(Harness.wait(timeout: 15) { h.log("a").contains("state: playing") }, "a: \(h.log("a"))")
        Thread.sleep(forTimeInterval: 1)
        // The follower's ports, as a stranger that watched the traffic would know them.
        let ports = h.log("a").matches(of: #/on port (\d+)|clock port (\d+)/#).compactMap { $0.1.map(String.init) ?? $0.2.map(String.init) }
        #expect(ports.count == 2, "\(h.log("a"))")
        // The stream's SSRC, as anyone who overhears it reads it in its clear headers.
        let sdp = (try? String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)) ?? ""
        let ssrc = try #require(sdp.firstMatch(of: #/a=ssrc:(\d+) /#)?.1, "\(sdp)")
        let stranger = try h.start("stranger", relay.room(2, ["python3", Harness.packageRoot + "/bench/lib/stranger.py",
                                                              "--coordinator", "10.77.0.1:5005", "--follower", "10.77.0.2",
                                                              "--ports", ports.joined(separator: ","),
                                                              "--rtp-port", ports.first ?? "0", "--ssrc", String(ssrc)]))
        #expect(stranger.wait(timeout: 60) == 0, "the stranger: \(h.log("stranger"))")
        let attackEnded = Date()
        Thread.sleep(forTimeInterval: 3)

        // It heard nothing but "not paired", never more bytes than it sent from that address.
        let out = try String(contentsOfFile: h.path("stranger.out"), encoding: .utf8)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: [String: Int]], "\(out)")
        let received = try #require(result["received"]), sent = try #require(result["sent"])
        #expect(received["other"] == 0, "the stranger received \(received)")
        #expect((received["bytes"] ?? .max) <= 40 * 3, "at most one short notice a second: \(received)")
        #expect((sent["datagrams"] ?? 0) > 2_000)

        // The coordinator lives, counted the forgeries, and knows one room.
        func dropped(_ log: String) -> Int {
            log.matches(of: #/(\d+) messages not signed with (?:this house's|this member's) key/#).reduce(0) { $0 + (Int($1.1) ?? 0) }
        }
        // Both count what they dropped, every 10 s (the first summary may hold only part of it).
        func unsealed(_ log: String) -> Int {
            log.matches(of: #/(\d+) packets not sealed with the house key/#).reduce(0) { $0 + (Int($1.1) ?? 0) }
        }
        _ = Harness.wait(timeout: 12) { dropped(h.log("coordinator")) >= 100 && dropped(h.log("a")) >= 100 && unsealed(h.log("a")) >= 1_200 }
        // Every forged stream packet was refused (plain, and sealed with another key).
        #expect(unsealed(h.log("a")) >= 1_200, "the follower took forged stream packets: \(h.log("a"))")
        let coordinator = h.log("coordinator")
        #expect(!coordinator.contains("Fatal") && !coordinator.contains("fatal"), "\(coordinator)")
        #expect(dropped(coordinator) >= 100, "coordinator: \(coordinator)")
        #expect(dropped(h.log("a")) >= 100, "the follower did not count the forgeries: \(h.log("a"))")
        let rooms = try roomNames(relay)
        #expect(rooms == ["a"], "rooms: \(rooms)")

        // The room played on through it all: no silence (an epoch end), no mute (settings).
        let status = h.log("a").split(separator: "\n").filter { $0.contains("room settings") }
        #expect(status.count == 1, "the follower took settings from a stranger: \(status)")
        let wav = try #require(Analysis.readWAV(h.path("a.wav")))
        let left = wav.channels[0]
        // Every 100 ms from half a second after the room started (before the stranger began) to the end.
        #expect(left.count >= 6 * 48_000, "the room played \(left.count) samples")
        var quiet = 0
        for block in stride(from: 24_000, to: left.count - 4_800, by: 4_800) {
            if Analysis.rms(left[block..<(block + 4_800)]) < 0.01 { quiet += 1 }
        }
        #expect(quiet == 0, "\(quiet) silent 100 ms blocks (the attack ended \(Date().timeIntervalSince(attackEnded)) s ago)")
    }

    /// The rooms the coordinator knows, asked inside its namespace (its API listens there on loopback).
    func roomNames(_ relay: NetworkTests.Relay) throws -> [String] {
        let script = "import json,urllib.request;print(json.dumps([r['name'] for r in json.load(urllib.request.urlopen('http://127.0.0.1:18485/api/v1/rooms', timeout=5))]))"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = relay.hub(["python3", "-c", script])
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        p.waitUntilExit()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        return (try? JSONSerialization.jsonObject(with: data) as? [String]) ?? ["(unreadable: \(String(decoding: data, as: UTF8.self)))"]
    }
}
}
