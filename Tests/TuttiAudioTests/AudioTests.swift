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
        let out = try ClockedOutput(clock: clock, bufferMilliseconds: 20, wavPath: path)
        let chunk = [Float](repeating: 0.25, count: 480 * 2)
        let start = clock.nanosecondsNow()
        var first: DeviceTiming?
        for _ in 0..<20 {  // 200 ms of audio
            #expect(try out.awaitDemand(frames: 480, timeout: 1_000_000_000))
            if let t = out.takeTiming(), first == nil || t.frame > 0 { first = t }
            try out.write(chunk)
        }
        let elapsed = clock.nanosecondsNow() - start
        // The device wants more only once just the buffer (20 ms) is ahead of real time.
        #expect(elapsed >= 160_000_000 && elapsed < 400_000_000, "\(elapsed / 1_000_000) ms")
        #expect(try out.awaitDemand(frames: 480, timeout: 0) == false)
        Thread.sleep(forTimeInterval: 0.1)  // an underrun of ~80 ms
        let timing = try #require(out.takeTiming())
        #expect(out.framesWritten > 9_600 + 3_000, "the underrun did not count as time")
        // The anchor did not move: frame n is still heard at start + n / 48 kHz.
        let anchor = try #require(first).anchor
        #expect(abs(timing.anchor - anchor) < 25_000)
        try out.write(chunk)
        out.close()
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect((data.count - 44) / 4 == Int(out.framesWritten), "the file's timeline has every frame")
        let startText = try String(contentsOfFile: path + ".start", encoding: .utf8)
        #expect(Int64(startText).map { abs($0 - start) < 50_000_000 } == true)
    }
}
