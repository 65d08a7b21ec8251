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
@Suite("Calibration with a microphone", .serialized, .timeLimit(.minutes(4)))
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
        // The truth on this rig: both rooms' sinks are one sink's channels, so equal delays.
        // A pass measures to some tens of µs (bench/calibration: residuals of 11 to 135 µs
        // with the house paused), so 20 ms wrong must come back to within 0.3 ms here; the
        // music below is the issue's measure.
        #expect(abs(a.outputDelayMs - b.outputDelayMs) < 0.3, "a \(a.outputDelayMs) ms, b \(b.outputDelayMs) ms")
        #expect(min(a.outputDelayMs, b.outputDelayMs) == 0)
        let record = try #require(b.calibration)
        #expect(record.by == "ctl" && record.applied && abs(record.offsetMs) < 0.3, "\(record)")
        #expect((record.residualMs ?? 1) < 0.3, "the check pass: \(record)")
        #expect(calibrated.out.contains("after: the rooms within"), "\(calibrated.out)")

        try Self.musicIsTogether(h, rig, api)

        // A room that cannot be heard (muted) is said, and its delay is left alone.
        _ = try api.call("PUT", "/rooms/a", json: #"{"muted": true}"#)
        let muted = try h.run("ctl-calibrate-muted", [Harness.binary, "ctl", "calibrate", "--mic", "pulse:capture.monitor",
                                                             "--dry-run", "--server", server], timeout: 60)
        #expect(muted.code != 0 && muted.err.contains("not heard: a"), "\(muted)")
        #expect(try api.rooms.first { $0.key == "a" }?.outputDelayMs == a.outputDelayMs)
        // One calibration at a time: a second would hear the first one's probes.
        #expect(try api.call("POST", "/calibration").status == 200)
        let second = try api.call("POST", "/calibration")
        #expect(second.status == 409 && second.body.contains("a calibration is under way"), "\(second)")
    }

    /// The web remote does the same in Chromium, whose microphone is the same monitor (by a
    /// source remapped from it, as Chromium lists no monitor): calibrate, look, apply with
    /// one tap, and the check; then the music, as the CLI's.
    @Test func theWebRemoteCalibratesWithThePhonesMicrophone() throws {
        guard Browser.available else {
            print("CalibrationTests skipped: Chromium is not installed (deploy/test-setup.sh installs it)")
            return
        }
        let h = try Harness("calibrate-web")
        let rig = try PulseRig(h)
        // Chromium lists no monitor among its microphones: a source of its own that is one,
        // made its default.
        let source = try h.run("remap-source", ["pactl", "load-module", "module-remap-source", "master=capture.monitor", "source_name=mic",
                                                "channels=1", "channel_map=mono"])
        #expect(source.code == 0, "\(source)")
        h.environment["PULSE_SOURCE"] = "mic"
        let noise = try h.noiseSong(seconds: 60)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", noise, "--multicast", "off", "--clock-listen", clock])
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--sink", "roomA", "--name", "a", "--status-interval", "1",
                          "--output-delay-ms", "35"])
        try h.leanFollower("b", ["--coordinator", clock, "--unicast", "--sink", "roomB", "--name", "b", "--status-interval", "1"])
        let api = try ControlAPI(h)
        #expect(Harness.wait(timeout: 15) { ((try? api.rooms) ?? []).filter(\.connected).count == 2 }, "\(h.log("coordinator"))")
        Thread.sleep(forTimeInterval: 2)
        _ = try api.change("POST", "/transport/pause")
        let url = try #require(h.controlURL()), token = try #require(h.token)
        let browser = try Browser(h, url: url + "/#token=" + token, arguments: ["--use-fake-ui-for-media-stream", "--autoplay-policy=no-user-gesture-required"])
        func js(_ code: String) throws -> Any? { try browser.evaluate(code) }
        #expect(Harness.wait(timeout: 10) { (try? js("localStorage.getItem('tutti-token')")) as? String == token })
        _ = try js("document.getElementById('tab-rooms').click()")
        _ = try js("document.getElementById('calibrate').click()")
        // A try takes some 19 s (the microphone's second, 15.5 s of probes, the analysis);
        // one the house refuses is made again, twice at most.
        let shown = Harness.wait(timeout: 75) { (try? js("!!document.getElementById('calApply')")) as? Bool == true }
        try browser.screenshot("calibration-measured")
        let text = { (try? js("document.getElementById('calResult').textContent + ' | ' + document.getElementById('message').textContent")) as? String ?? "" }
        #expect(shown, "\(text()) \(h.log("coordinator")) \(h.log("chromium").suffix(2_000))")
        // Room a plays 35 ms early: b is heard 35 ms after it, and would get 0 ms and a 0 ms.
        #expect(text().contains("35.0"), "\(text())")
        _ = try js("document.getElementById('calApply').click()")
        #expect(Harness.wait(timeout: 75) { text().contains("now within") }, "\(text())")
        print("web calibration: \(text())")
        try browser.screenshot("calibration-checked")
        let rooms = try api.rooms
        let a = try #require(rooms.first { $0.key == "a" }), b = try #require(rooms.first { $0.key == "b" })
        // Headless Chromium's capture shifts sound by a render quantum (128 frames, 2.7 ms)
        // now and then; the reference room's probes between the others show it, and the page
        // records again. What it keeps, its capture's resampling still bends by some tens of
        // µs between probes (passes the house kept were 8 to 111 µs off; bench/NOTES.md). So
        // 35 ms wrong comes back to within 0.3 ms, as the CLI's, and the music to within
        // 200 µs, not the CLI's 100 (a CI run read 128 µs; runs here 6 to 75).
        #expect(min(a.outputDelayMs, b.outputDelayMs) == 0 && abs(a.outputDelayMs - b.outputDelayMs) < 0.3, "a \(a.outputDelayMs), b \(b.outputDelayMs)")
        #expect(a.calibration?.by == "web" && a.calibration?.applied == true && (a.calibration?.residualMs ?? 1) < 0.3, "\(String(describing: a.calibration))")
        try Self.musicIsTogether(h, rig, api, within: 200)
    }

    /// The music, with the new delays: rooms A and B recorded apart (left, right), within
    /// `within` µs of each other (the median of 100 ms windows).
    static func musicIsTogether(_ h: Harness, _ rig: PulseRig, _ api: ControlAPI, within: Double = 100) throws {
        _ = try api.change("POST", "/transport/play")
        #expect(Harness.wait(timeout: 10) { (try? api.rooms.allSatisfy { $0.report?.state == .playing }) == true })
        Thread.sleep(forTimeInterval: 2)
        let recorder = try rig.record("capture")
        Thread.sleep(forTimeInterval: 5)
        recorder.terminate()
        let wav = try #require(Analysis.readWAV(h.path("capture.wav")), "no recording: \(h.log("capture"))")
        let skews = Analysis.skews(wav.channels[0], wav.channels[1], maxLag: 1_440, from: 4_800, to: wav.channels[0].count - 4_800)
        #expect(skews.count > 10, "too few comparable windows")
        let median = skews.isEmpty ? .infinity : skews.sorted()[skews.count / 2]
        print("calibrated rooms' music: \(median) µs apart (median of \(skews.count) windows)")
        #expect(abs(median) < within, "the rooms \(median) µs apart (median of \(skews.count) windows)")
    }
}
}
