import Foundation
import Testing
import TuttiAPI
import TuttiCore

extension IntegrationTests {
/// `tutti ctl calibrate` on the PulseAudio rig: the "microphone" is the monitor of the sink
/// that mixes the rooms (room A its left channel, room B its right; parec hears both, as a
/// microphone in a room hears both speakers). Room B's follower starts with a wrong
/// `--output-delay-ms 20`, so it plays 20 ms early; the calibration must find that and undo
/// it. Then the rooms' music, recorded apart (left and right), is within 100 µs.
@Suite("Calibration with a microphone", .serialized, .timeLimit(.minutes(3)))
struct CalibrationTests {
    @Test func theCLIAlignsARoomThatPlaysEarly() throws {
        let h = try Harness("calibrate")
        let rig = try PulseRig(h)
        let noise = try h.noiseSong(seconds: 60)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", noise, "--multicast", "off", "--clock-listen", clock])
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--sink", "roomA", "--name", "a", "--status-interval", "1"])
        try h.leanFollower("b", ["--coordinator", clock, "--unicast", "--sink", "roomB", "--name", "b", "--status-interval", "1",
                                 "--output-delay-ms", "20"])
        let api = try ControlAPI(h)
        let server = try #require(h.controlURL("coordinator"))
        #expect(Harness.wait(timeout: 15) { ((try? api.rooms) ?? []).filter(\.connected).count == 2 }, "\(h.log("coordinator"))")
        #expect(try api.rooms.first { $0.key == "b" }?.outputDelayMs == 20)
        Thread.sleep(forTimeInterval: 2)  // the clocks settle
        _ = try api.change("POST", "/transport/pause")  // quiet, as the command asks

        let calibrated = try h.run("ctl-calibrate", [Harness.binary, "ctl", "calibrate", "--mic", "pulse:capture.monitor", "--server", server],
                                   timeout: 90)
        #expect(calibrated.code == 0, "\(calibrated.out) \(calibrated.err) \(h.log("coordinator"))")
        print(calibrated.out)
        let rooms = try api.rooms
        let a = try #require(rooms.first { $0.key == "a" }), b = try #require(rooms.first { $0.key == "b" })
        // The truth on this rig: both rooms' sinks are one sink's channels, so no delay.
        #expect(abs(a.outputDelayMs - b.outputDelayMs) < 0.1, "a \(a.outputDelayMs) ms, b \(b.outputDelayMs) ms")
        #expect(min(a.outputDelayMs, b.outputDelayMs) < 0.1)
        let record = try #require(b.calibration)
        #expect(record.by == "ctl" && record.applied && abs(record.offsetMs) < 0.2, "\(record)")
        #expect((record.residualMs ?? 1) < 0.1, "the check pass: \(record)")
        #expect(calibrated.out.contains("after: the rooms within"), "\(calibrated.out)")

        // The music, with the new delays: recorded apart, the rooms within 100 µs.
        _ = try api.change("POST", "/transport/play")
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") && h.log("b").contains("state: playing") })
        Thread.sleep(forTimeInterval: 2)
        let recorder = try rig.record("capture")
        Thread.sleep(forTimeInterval: 5)
        recorder.terminate()
        let wav = try #require(Analysis.readWAV(h.path("capture.wav")), "no recording: \(h.log("capture"))")
        let skews = Analysis.skews(wav.channels[0], wav.channels[1], maxLag: 1_440, from: 4_800, to: wav.channels[0].count - 4_800)
        #expect(skews.count > 10, "too few comparable windows")
        let median = skews.sorted()[skews.count / 2]
        #expect(abs(median) < 100, "the rooms \(median) µs apart (median of \(skews.count) windows)")

        // A room that cannot be heard (muted) is said, and its delay is left alone.
        _ = try api.call("PUT", "/rooms/a", json: #"{"muted": true}"#)
        let muted = try h.run("ctl-calibrate-muted", [Harness.binary, "ctl", "calibrate", "--mic", "pulse:capture.monitor",
                                                             "--dry-run", "--server", server], timeout: 60)
        #expect(muted.code != 0 && muted.err.contains("not heard: a"), "\(muted)")
        #expect(try api.rooms.first { $0.key == "a" }?.outputDelayMs == a.outputDelayMs)
    }
}
}
