import Foundation
import Testing
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiNode

/// The real binary on loopback: a coordinator and followers over real UDP sockets.
extension IntegrationTests {
@Suite("A house on loopback", .serialized, .timeLimit(.minutes(2)))
struct HouseTests {
    /// Starts a coordinator (unicast only) on free ports; returns its clock address.
    func coordinator(_ h: Harness, _ extra: [String] = [], inputs: [String] = [Harness.demoSong]) throws -> String {
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator"] + inputs + ["--multicast", "off", "--clock-listen", clock] + extra)
        #expect(Harness.wait(timeout: 5) { h.log("coordinator").contains("clock service") })
        return clock
    }

    func follower(_ h: Harness, _ name: String, clock: String, output: String) throws {
        try h.tutti(name, ["follower", "--coordinator", clock, "--unicast", "--output", output, "--status-interval", "1"])
    }

    /// Reads a WAV written by a follower with its `.start` time (CLOCK_MONOTONIC ns of frame 0).
    func followerWAV(_ path: String) throws -> (left: [Float], start: Int64) {
        let wav = try #require(Analysis.readWAV(path))
        let start = try #require(Int64(try String(contentsOfFile: path + ".start", encoding: .utf8)))
        return (wav.channels[0], start)
    }

    @Test func twoFollowersWritingWAVPlayInSyncAndALateOneJoinsInSync() throws {
        let h = try Harness("wav")
        // Noise: every 100 ms window of it has a sharp correlation peak. In the demo song's,
        // those just after a kick drum hold little but bass, and their peak is so broad that
        // the two rooms' slightly different resampling moved it by up to 300 µs.
        let clock = try coordinator(h, inputs: [try h.noiseSong(seconds: 20)])
        try follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
        Thread.sleep(forTimeInterval: 2.0)
        let lateStart = SystemClock().nanosecondsNow()
        try follower(h, "b", clock: clock, output: "wav:" + h.path("b.wav"))
        Thread.sleep(forTimeInterval: 5.0)
        #expect(h.log("a").contains("state: playing"))
        #expect(h.log("b").contains("state: playing"))
        // Stopped first, so that each file holds all it played (read while a follower writes,
        // a file held what its writer had flushed: once only 11 windows' worth of B).
        for name in ["a", "b"] { h.stop(name) }

        let a = try followerWAV(h.path("a.wav"))
        let b = try followerWAV(h.path("b.wav"))
        // Both files are on the same (this host's monotonic) timeline: align them.
        let shift = Int((b.start - a.start) * 48_000 / 1_000_000_000)
        #expect(shift > 0)
        let bOnA = [Float](repeating: 0, count: shift) + b.left
        let from = shift + 48_000  // a second after B began
        let skews = Analysis.skews(a.left, bOnA, from: from, to: min(a.left.count, bOnA.count) - 4_800)
        #expect(skews.count > 20, "too few comparable windows: \(skews.count)")
        // In sync: typically within a sample or two (the benchmark measures exactly).
        let typical = Analysis.median(skews.map(abs))
        let p90 = Analysis.percentile(skews.map(abs), 0.9)
        #expect(typical < 60 && p90 < 100, "skew between the followers: median \(typical) µs, p90 \(p90) µs: \(skews)")

        // The late follower made sound within 500 ms of starting.
        let firstSound = try #require(b.left.firstIndex { abs($0) > 0.01 })
        let soundAt = b.start + Int64(firstSound) * 1_000_000_000 / 48_000
        #expect(soundAt - lateStart < 500_000_000, "first sound \((soundAt - lateStart) / 1_000_000) ms after start")
    }

    @Test func followerOutputMatchesTheSource() throws {
        let h = try Harness("source")
        let clock = try coordinator(h)
        try follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
        Thread.sleep(forTimeInterval: 4.0)
        let a = try followerWAV(h.path("a.wav"))
        let correlation = try #require(Analysis.correlationWithSource(a.left, source: try Harness.demoSongLeft()),
                                       "the follower wrote too little sound")
        #expect(correlation > 0.9, "output does not match the source: correlation \(correlation)")
    }

    @Test func corruptTrackIsReportedByNameAndTheNextOnePlays() throws {
        let h = try Harness("corrupt")
        let bad = h.path("broken.mp3")
        _ = FileManager.default.createFile(atPath: bad, contents: Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
        _ = try coordinator(h, inputs: [bad, Harness.demoSong])
        #expect(Harness.wait(timeout: 5) { h.log("coordinator").contains("playing \(Harness.demoSong)") })
        let log = h.log("coordinator")
        #expect(log.contains("error:") && log.contains("broken.mp3"), "no error naming the file: \(log)")
    }

    @Test func garbageDatagramsAreDroppedAndPlaybackGoesOn() throws {
        let h = try Harness("garbage")
        let clock = try coordinator(h)
        let clockPort = UInt16(clock.split(separator: ":")[1])!
        let rtpPort = Harness.freePort()
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--port", "\(rtpPort)",
                          "--output", "wav:" + h.path("a.wav"), "--status-interval", "1"])
        Thread.sleep(forTimeInterval: 1.5)
        Harness.sendGarbage(to: rtpPort, count: 3_000, seed: 1)
        Harness.sendGarbage(to: clockPort, count: 3_000, seed: 2)
        Thread.sleep(forTimeInterval: 2.0)
        #expect(!h.log("coordinator").contains("Fatal"))
        #expect(h.log("a").contains("state: playing"))
        let a = try followerWAV(h.path("a.wav"))
        // Still playing the song after the flood: the last second has signal.
        #expect(Analysis.rms(a.left.suffix(48_000)[...]) > 0.01)
        // Every garbage datagram fails its SRTP tag before any parser sees it: counted as unsealed.
        let status = h.log("a").split(separator: "\n").last { $0.contains("unsealed") } ?? ""
        let unsealed = status.firstMatch(of: #/unsealed (\d+)/#).flatMap { Int($0.1) } ?? 0
        #expect(unsealed >= 2_900, "garbage not counted: \(status)")
    }

    @Test(arguments: [
        ["coordinator", "--control-listen", "nowhere"],
        ["coordinator", Harness.demoSong, "--frame-ms", "7"],
        ["coordinator", Harness.demoSong, "--latency-ms", "-5"],
        ["coordinator", "/no/such/file.mp3", "--multicast", "off", "--clock-listen", "127.0.0.1:0"],
        ["follower", "--config", "/no/such/follower.toml"],
        ["follower", "--coordinator", "127.0.0.1", "--output", "speakers"],
        ["follower", "--coordinator", "host:port:extra", "--output", "null"],
        ["coordinator", Harness.demoSong, "--no-such-flag"],
        ["coordinator", "--pcm", "-", "--pcm-format", "u8"],
        ["coordinator", "--pcm", "-", Harness.demoSong],
        ["coordinator", "pcm:/run/x.fifo?rate=22050"],
    ])
    func badCommandLinesFailWithAMessage(args: [String]) throws {
        let h = try Harness("cli")
        let child = try h.tutti("cli", args)
        let code = child.wait(timeout: 10)
        #expect(code != nil && code != 0, "exit code \(String(describing: code))")
        #expect(h.log("cli").count > 10, "no message for \(args)")
    }
}
}
