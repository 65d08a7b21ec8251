import Foundation
import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Device timeline and median filter")
struct DeviceTimelineTests {
    /// A device whose true anchor is fixed, reporting latencies that wander by ±400 µs
    /// (slowly, like PulseAudio's interpolation): the timeline stays within a few tens of µs.
    @Test func smoothsWanderingLatencyReports() {
        var timeline = DeviceTimeline()
        let trueAnchor: Int64 = 5_000_000_000
        var written: Int64 = 0
        var now: Int64 = 5_000_000_000
        var worst: Int64 = 0
        for i in 0..<6_000 {  // 60 s of 10 ms writes
            let wander = Int64(400_000 * sin(Double(i) / 150))
            let latency = trueAnchor + AudioFormat.nanoseconds(forFrames: written) - now + wander
            timeline.report(latency: latency, now: now, framesWritten: written)
            if i > 1_000, let a = timeline.anchor(at: now) { worst = max(worst, abs(a - trueAnchor)) }
            written += 480
            now += 10_000_000
        }
        #expect(worst < 150_000, "anchor off by up to \(worst) ns")
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
