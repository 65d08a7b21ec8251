import Foundation
import Testing
import TuttiCore
import TuttiNet
@testable import TuttiAudio

extension IntegrationTests {
/// The output speaks PulseAudio's native protocol itself; here it meets a real server set
/// up as a user's is (cookie or same-user credentials, no anonymous access).
@Suite("PulseAudio output on a real server", .timeLimit(.minutes(2)))
struct PulseNativeTests {
    @Test func aServerWithItsUsualAuthenticationTakesTheStreamAndReportsItsTiming() throws {
        let h = try Harness("pulse-native")
        let runtime = h.path("pulse")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        h.environment["HOME"] = runtime
        h.environment["XDG_RUNTIME_DIR"] = runtime
        h.environment["PULSE_SERVER"] = "unix:\(runtime)/native"
        _ = try h.start("pulseaudio", [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
            "-L", "module-native-protocol-unix socket=\(runtime)/native",
            "-L", "module-null-sink sink_name=room rate=48000 channels=2",
        ])
        #expect(Harness.wait(timeout: 10) { FileManager.default.fileExists(atPath: "\(runtime)/native") })
        Thread.sleep(forTimeInterval: 0.3)
        let environment = ["PULSE_RUNTIME_PATH": runtime, "HOME": runtime]
        let out = try PulseOutput(sink: "room", clock: SystemClock(), clientName: "tutti", streamName: "tutti follower",
                                  sinkLatencyMilliseconds: 15, requestMilliseconds: 20, timingMilliseconds: 25, onlyIfRunning: true,
                                  environment: { environment[$0] })
        // The server gives the sink the latency asked for (the queue is sized for it).
        #expect(out.committedLatency == 15_000_000, "\(out.committedLatency)")

        // Two seconds of a tone, 20 ms at a time, kept 60 ms ahead of the server's read
        // index (20 ms at a time until the stream's first report, as a follower writes). A
        // monitor takes the sink's audio from the start: a null sink that has just been made
        // and has none starts taking it a second or two late.
        try h.start("monitor", ["parec", "-d", "room.monitor", "--latency-msec=10", "--raw"])
        Thread.sleep(forTimeInterval: 0.5)
        var timings: [DeviceTiming] = []
        var phase = 0.0
        let chunk = 960
        let clock = SystemClock()
        let end = clock.nanosecondsNow() + 10_000_000_000
        /// Sleeps until the stream holds 40 ms or less (by its last report), or 20 ms while
        /// it has none.
        func awaitRoom() throws {
            guard out.framesWritten >= 3 * chunk else { return }
            if let t = out.takeTiming() { timings.append(t) }
            guard let t = timings.last else { return try out.wait(until: clock.nanosecondsNow() + 20_000_000) }
            try out.wait(until: t.heardAt.nanoseconds + AudioFormat.nanoseconds(forFrames: out.framesWritten - t.frame)
                                - 40_000_000 - out.committedLatency)
        }
        var playing: Int64?
        while clock.nanosecondsNow() < end {
            try awaitRoom()
            if let t = out.takeTiming() { timings.append(t) }
            if playing == nil, !timings.isEmpty { playing = out.framesWritten }
            if let playing, out.framesWritten - playing >= 2 * 48_000 { break }
            var samples: [Float] = []
            for _ in 0..<chunk {
                let v = Float(sin(phase) * 0.3)
                samples += [v, v]
                phase += 2 * .pi * 440 / 48_000
            }
            try out.write(samples)
        }
        #expect(playing.map { out.framesWritten - $0 >= 2 * 48_000 } == true, "two seconds played")
        // The server answered the timing queries all along, and its read index kept pace
        // with time: 48 frames a millisecond, as the null sink plays them.
        #expect(timings.count > 30, "\(timings.count) timing reports")
        let first = try #require(timings.dropFirst(5).first), last = try #require(timings.last)
        let rate = Double(last.frame - first.frame) / (Double(last.heardAt.nanoseconds - first.heardAt.nanoseconds) / 1e9)
        #expect(abs(rate - 48_000) < 480, "read index advanced at \(rate) frames a second")
        #expect(timings.allSatisfy { $0.uncertainty < 20_000_000 && $0.delay < 200_000_000 })
        // What was written and not yet heard is what the writer kept queued, and the sink's latency.
        let queued = Double(out.framesWritten - last.frame) / 48
        #expect(queued > 20 && queued < 120, "\(queued) ms queued")
        #expect(out.underruns == 0, "the stream never ran dry")

        // The server knows the stream by its client's and its own names and role.
        try h.start("pactl", ["pactl", "list", "sink-inputs"])
        #expect(Harness.wait(timeout: 5) { ((try? String(contentsOfFile: h.path("pactl.out"), encoding: .utf8)) ?? "").contains("media.role") })
        let listing = (try? String(contentsOfFile: h.path("pactl.out"), encoding: .utf8)) ?? ""
        #expect(listing.contains("application.name = \"tutti\"") && listing.contains("media.role = \"music\""), "\(listing)")
    }
}
}
