import Foundation
import Testing
import TuttiCore
@testable import TuttiAudio

struct TestClock: MonotonicClock {
    func nanosecondsNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

@Suite("Outputs")
struct AudioTests {
    @Test func wavHeaderDescribes16BitStereo48k() {
        let h = WAVWriter.header(dataBytes: 1000)
        #expect(h.count == 44)
        #expect(String(decoding: h[0..<4], as: UTF8.self) == "RIFF")
        #expect(String(decoding: h[8..<12], as: UTF8.self) == "WAVE")
        #expect(h[22] == 2 && h[24] == 0x80 && h[25] == 0xBB)  // 2 channels, 48000
        #expect(h[34] == 16)
        #expect(h[40] == 0xE8 && h[41] == 0x03)  // 1000 data bytes
    }

    @Test func clockedWavOutputRunsInRealTimeAndKeepsItsTimelineThroughUnderruns() throws {
        let path = NSTemporaryDirectory() + "tutti-clocked-\(getpid()).wav"
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: path + ".start") }
        let clock = TestClock()
        let out = try ClockedOutput(clock: clock, wavPath: path)
        let chunk = [Float](repeating: 0.25, count: 480 * 2)
        let start = clock.nanosecondsNow()
        var first: DeviceTiming?
        // Frame 0 is heard when it is written: before that there is no report to give.
        #expect(out.takeTiming() == nil)
        for _ in 0..<20 {  // 200 ms of audio, written whenever 20 ms or less is left
            if let t = out.takeTiming() {
                if first == nil || t.frame > 0 { first = t }
                try out.wait(until: t.heardAt.nanoseconds - 20_000_000)
            }
            try out.write(chunk)
        }
        let elapsed = clock.nanosecondsNow() - start
        #expect(elapsed >= 160_000_000 && elapsed < 400_000_000, "\(elapsed / 1_000_000) ms")
        // (A writer woken more than 20 ms late on a busy machine has run it dry already.)
        let before = out.underruns
        Thread.sleep(forTimeInterval: 0.1)  // an underrun of ~80 ms
        let timing = try #require(out.takeTiming())
        #expect(out.framesWritten > 9_600 + 3_000, "the underrun did not count as time")
        #expect(out.underruns == before + 1, "the device said it ran dry")
        // The anchor did not move: frame n is still heard at start + n / 48 kHz.
        let anchor = try #require(first).anchor
        #expect(abs(timing.anchor - anchor) < 25_000)
        try out.write(chunk)
        out.close()
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect((data.count - 44) / 4 == Int(out.framesWritten), "the file's timeline has every frame")
        let startText = try String(contentsOfFile: path + ".start", encoding: .utf8)
        #expect(Int64(startText).map { abs($0 - start) < 50_000_000 } == true)
        #expect(first?.anchor.nanoseconds == Int64(startText), "every report places frame 0 where the file's start does")
    }
}

/// The ALSA output on ALSA's null device (alsa-lib's `null` PCM, which plays nowhere and,
/// in Debian 12's alsa-lib, takes frames as fast as they come): it opens with the period and
/// buffer asked for, counts what it writes, and each timing report names the next frame
/// written and when it would be heard. Its timing
/// against a real clock is measured on the rig (`AlsaTests`), through ALSA's pulse plugin.
@Suite("ALSA output")
struct AlsaOutputTests {
    @Test func theNullDeviceTakesAPeriodAtATimeAndReportsItsTiming() throws {
        let clock = TestClock()
        let out = try AlsaOutput(device: "null", clock: clock, bufferFrames: 2_880, periodFrames: 480)
        #expect(out.name == "alsa:null")
        #expect(out.periodFrames == 480 && out.bufferFrames == 2_880, "period \(out.periodFrames), buffer \(out.bufferFrames)")
        #expect(out.framesWritten == 0 && !out.interrupted)
        let chunk = [Float](repeating: 0.25, count: out.periodFrames * 2)
        for k in 1...20 {
            try out.write(chunk)
            #expect(out.framesWritten == Int64(k * out.periodFrames))
            let before = clock.nanosecondsNow()
            let timing = try #require(out.takeTiming(), "a running device reports its timing")
            #expect(timing.frame == out.framesWritten, "the report names the next frame written")
            #expect(timing.uncertainty >= 0 && timing.uncertainty < 5_000_000)
            #expect(timing.measuredAt.nanoseconds >= before)
            // Nothing is queued in a device that plays at once: the next frame is heard now.
            #expect(abs(timing.heardAt.nanoseconds - timing.measuredAt.nanoseconds) < 5_000_000)
        }
        #expect(out.skipped == 0 && out.restarts == 0 && out.underruns == 0)
    }

    @Test func aDeviceThatIsNotThereIsAClearError() {
        #expect {
            _ = try AlsaOutput(device: "no-such-device-here", clock: TestClock())
        } throws: { error in
            "\(error)".contains("ALSA device no-such-device-here: cannot open")
        }
    }
}
