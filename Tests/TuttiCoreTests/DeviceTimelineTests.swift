import Foundation
import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Device timeline and median filter")
struct DeviceTimelineTests {
    /// Reports with white jitter of ±200 µs around a device whose rate itself wanders
    /// between −230 and −30 ppm (as PulseAudio's null sink did): the anchor follows within 60 µs.
    @Test func followsAWanderingRateThroughJitteryReports() {
        var timeline = DeviceTimeline()
        var random = SeededRandom(seed: 5)
        var written: Int64 = 0
        var now: Int64 = 5_000_000_000
        var trueAnchor = 5_040_000_000.0
        var worst = 0.0
        for i in 0..<6_000 {  // 60 s of 10 ms writes
            let ppm = -130 + 100 * sin(Double(i) / 1_000)
            trueAnchor += ppm * 1e-6 * 10_000_000
            let jitter = Int64.random(in: -200_000...200_000, using: &random)
            let latency = Int64(trueAnchor) + AudioFormat.nanoseconds(forFrames: written) - now + jitter
            timeline.report(latency: latency, now: now, framesWritten: written)
            if i > 500, let a = timeline.anchor(at: now) { worst = max(worst, abs(Double(a) - trueAnchor)) }
            written += 480
            now += 10_000_000
        }
        #expect(worst < 60_000, "anchor off by up to \(worst) ns")
        #expect(timeline.jumps == 0)
    }

    @Test func followsAJumpAfterAFewReports() {
        var timeline = DeviceTimeline()
        var written: Int64 = 0
        var now: Int64 = 1_000_000_000
        var anchor: Int64 = 1_040_000_000
        for i in 0..<400 {
            if i == 200 { anchor += 30_000_000 }  // an underrun: everything is heard 30 ms later
            timeline.report(latency: anchor + AudioFormat.nanoseconds(forFrames: written) - now, now: now, framesWritten: written)
            written += 480
            now += 10_000_000
        }
        #expect(timeline.jumps == 1)
        #expect(abs((timeline.anchor(at: now) ?? 0) - anchor) < 1_000)
    }

    @Test func medianRejectsOddReadings() {
        var f = MedianFilter(width: 5)
        for v: Int64 in [10, 11, 9, 5_000, 10] { _ = f.add(v) }
        #expect(f.median == 10)
        f.reset()
        #expect(f.count == 0)
    }
}

extension DeviceTimelineTests {
    /// A device whose crystal runs 230 ppm fast (as PulseAudio's null sink did on our
    /// build machine): the timeline learns the rate and keeps the anchor within 100 µs.
    @Test func learnsTheDevicesRate() {
        var timeline = DeviceTimeline()
        var written: Int64 = 0
        var now: Int64 = 1_000_000_000
        let start = now
        var worst: Int64 = 0
        for i in 0..<4_000 {
            // The device consumes 48 000 × (1 + 230e-6) frames per local second.
            let trueAnchor = start + 40_000_000 - Int64(Double(now - start) * 230e-6)
            timeline.report(latency: trueAnchor + AudioFormat.nanoseconds(forFrames: written) - now, now: now, framesWritten: written)
            if i > 1_000, let a = timeline.anchor(at: now) { worst = max(worst, abs(a - trueAnchor)) }
            written += 480
            now += 10_000_000
        }
        #expect(worst < 100_000, "anchor off by up to \(worst) ns")
        #expect(timeline.jumps == 0)
    }
}
