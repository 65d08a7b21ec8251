import Foundation
import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Device timeline and median filter")
struct DeviceTimelineTests {
    /// A report of frame `frame` heard at `anchor + frame / 48 kHz`, taken at `now`, answered
    /// `rtt` late (and late by as much, as a slow sound server's answers are).
    static func report(anchor: Double, frame: Int64, now: Int64, rtt: Int64 = 0) -> DeviceTiming {
        DeviceTiming(frame: frame, heardAt: LocalTime(nanoseconds: Int64(anchor) + AudioFormat.nanoseconds(forFrames: frame) + rtt / 2),
                     measuredAt: LocalTime(nanoseconds: now), uncertainty: rtt)
    }

    /// A stream paused and flushed (an interruption) is heard on a timeline of its own after:
    /// the line starts again, from the first report on, with the rate it had measured.
    @Test func aRestartKeepsTheRateTheLineMeasured() throws {
        var timeline = DeviceTimeline()
        let slope = 200e-6  // the device takes 200 ppm longer per frame than nominal
        for i in 0..<50 {
            let frame = Int64(i) * 960
            timeline.report(Self.report(anchor: 1e9 + Double(AudioFormat.nanoseconds(forFrames: frame)) * slope, frame: frame,
                                        now: 1_000_000_000 + Int64(i) * 20_000_000))
        }
        #expect(abs(timeline.rateOffsetPPM - 200) < 1, "\(timeline.rateOffsetPPM) ppm")
        timeline.restart()
        #expect(timeline.heardAt(frame: 0) == nil && timeline.jumps == 1)
        #expect(abs(timeline.rateOffsetPPM - 200) < 1, "the rate stays: \(timeline.rateOffsetPPM) ppm")
        timeline.report(Self.report(anchor: 5e9, frame: 48_000, now: 5_000_000_000))
        let heard = try #require(timeline.heardAt(frame: 96_000))
        // Frame 48,000 heard at 6 s; 48,000 frames on, a second of the device's later.
        #expect(abs(Double(heard.nanoseconds) - (6e9 + 1e9 * (1 + slope))) < 1_000, "\(heard.nanoseconds)")
    }

    /// A device 200 ppm fast, reported every 10 ms from its start: with no slope for its first
    /// quarter second the line lags it by up to 20 µs; with the rate an earlier run measured,
    /// it holds within a microsecond from the first report, and then measures its own.
    @Test func aRememberedRateHoldsTheLineFromTheFirstReport() {
        func worstEarlyError(assuming ppm: Double?) -> (worst: Double, timeline: DeviceTimeline) {
            var timeline = DeviceTimeline()
            if let ppm { timeline.assumeRate(ppm: ppm) }
            var now: Int64 = 5_000_000_000
            var anchor = 5_040_000_000.0
            var worst = 0.0
            for i in 0..<40 {  // 400 ms
                let report = Self.report(anchor: anchor, frame: Int64(i) * 480, now: now, rtt: 100_000)
                timeline.report(report)
                // The line at the instant the reported frame is heard (where it is indexed).
                if i < 25, let a = timeline.anchor(at: report.heardAt.nanoseconds) { worst = max(worst, abs(Double(a) - (anchor + 50_000))) }
                anchor -= 200e-6 * 10_000_000
                now += 10_000_000
            }
            return (worst, timeline)
        }
        let fresh = worstEarlyError(assuming: nil), remembered = worstEarlyError(assuming: -200)
        #expect(fresh.worst > 10_000, "without a rate: \(fresh.worst) ns")
        #expect(remembered.worst < 1_000, "with the remembered rate: \(remembered.worst) ns")
        #expect(remembered.timeline.hasMeasuredRate && abs(remembered.timeline.rateOffsetPPM + 200) < 5)
        #expect(abs(remembered.timeline.localPerFrame - 1 / (1 + 200e-6)) < 1e-7)
        var unused = DeviceTimeline()
        unused.assumeRate(ppm: 50)
        #expect(!unused.hasMeasuredRate && unused.rateOffsetPPM == 50, "assumed, not measured")
    }

    /// Reports every 10 ms, most answered within 150 µs but some up to 2 ms late (a busy
    /// server), of a device whose rate wanders by 100 ppm over a minute: the anchor's error
    /// stays within 25 µs of its usual bias (half the quickest round trip, the same in every
    /// room), because slow answers count for little.
    @Test func followsAWanderingRateAndDiscountsSlowAnswers() {
        var timeline = DeviceTimeline()
        var random = SeededRandom(seed: 5)
        var now: Int64 = 5_000_000_000
        var trueAnchor = 5_040_000_000.0
        var errors: [Double] = []
        for i in 0..<6_000 {  // 60 s
            let ppm = -130 + 100 * sin(Double(i) / 5_000)  // a crystal warming up
            trueAnchor += ppm * 1e-6 * 10_000_000
            let slow = Int.random(in: 0..<10, using: &random) == 0
            let rtt = slow ? Int64.random(in: 200_000...2_000_000, using: &random) : Int64.random(in: 100_000...150_000, using: &random)
            timeline.report(Self.report(anchor: trueAnchor, frame: Int64(i) * 480, now: now, rtt: rtt))
            if i > 500, let a = timeline.anchor(at: now) { errors.append(Double(a) - trueAnchor) }
            now += 10_000_000
        }
        let bias = errors.sorted()[errors.count / 2]
        let worst = errors.map { abs($0 - bias) }.max() ?? .infinity
        #expect(bias > 40_000 && bias < 80_000, "bias \(bias) ns")
        #expect(worst < 25_000, "anchor off its bias by up to \(worst) ns")
        #expect(timeline.jumps == 0)
    }

    /// A device whose crystal runs ±230 ppm off the local clock: the timeline learns the
    /// rate, and says when a frame written now (heard 60 ms later) will be heard, to within
    /// nanoseconds: no part of the output's lead is carried at the wrong rate.
    @Test(arguments: [230e-6, -230e-6])
    func learnsTheDevicesRate(offset: Double) {
        var timeline = DeviceTimeline()
        let start: Int64 = 1_000_000_000
        let rate = 1 + offset  // device frames per nominal frame time
        func heard(_ frame: Int64) -> Double { Double(start) + Double(AudioFormat.nanoseconds(forFrames: frame)) / rate }
        var worst = 0.0
        for i in 0..<4_000 {
            let now = start + Int64(i) * 10_000_000
            // The sink reports which frame it plays now and that it is heard 10 ms later.
            let playing = Int64((Double(now - start) * rate * 48_000 / 1e9).rounded())
            timeline.report(DeviceTiming(frame: playing, heardAt: LocalTime(nanoseconds: Int64(heard(playing)) + 10_000_000),
                                         measuredAt: LocalTime(nanoseconds: now)))
            // The frame written now is heard 60 ms from now.
            let written = playing + Int64(0.06 * 48_000 * rate)
            if i > 1_000, let t = timeline.heardAt(frame: written) {
                worst = max(worst, abs(Double(t.nanoseconds) - heard(written) - 10_000_000))
            }
        }
        #expect(worst < 200, "frames heard off by up to \(worst) ns")
        #expect(abs(timeline.rateOffsetPPM + offset * 1e6) < 1)
        #expect(timeline.jumps == 0)
    }

    /// A sound server reports its latency (60 ms) in the device's own time, and the device's
    /// crystal runs 200 ppm off the local clock: converted at the measured rate, frames are
    /// heard where the timeline says to within a microsecond; taken as local time, the same
    /// reports put every frame 12 µs off (60 ms × 200 ppm), for as long as the device plays.
    @Test(arguments: [200e-6, -200e-6])
    func convertsTheDevicesLatencyAtItsRate(offset: Double) {
        func worst(converting: Bool) -> (error: Double, timeline: DeviceTimeline) {
            var timeline = DeviceTimeline()
            let start: Int64 = 3_000_000_000
            let rate = 1 + offset  // device frames per nominal frame time
            // Frame f is heard at local time start + f / (48 kHz × rate).
            func heard(_ frame: Int64) -> Double { Double(start) + Double(AudioFormat.nanoseconds(forFrames: frame)) / rate }
            var worst = 0.0
            for i in 0..<1_500 {  // 30 s, a report every 20 ms
                let now = start + 200_000_000 + Int64(i) * 20_000_000
                // The device says it will play what it holds (the frames up to `playing`,
                // 60 ms of its time) first: the latest of them is heard 60 ms of its time
                // from now.
                let latency: Int64 = 60_000_000
                let playing = Int64(((Double(now - start) * rate + Double(latency)) * 48_000 / 1e9).rounded())
                timeline.report(DeviceTiming(frame: playing, heardAt: LocalTime(nanoseconds: now + latency),
                                             measuredAt: LocalTime(nanoseconds: now), delay: converting ? latency : 0))
                if i > 500, let t = timeline.heardAt(frame: playing + 2_880) {
                    worst = max(worst, abs(Double(t.nanoseconds) - heard(playing + 2_880)))
                }
            }
            return (worst, timeline)
        }
        let converted = worst(converting: true), taken = worst(converting: false)
        #expect(converted.error < 1_000, "converted: off by up to \(converted.error) ns")
        #expect(taken.error > 11_000, "taken as local time: off by \(taken.error) ns")
        #expect(abs(converted.timeline.rateOffsetPPM + offset * 1e6) < 1)
        #expect(converted.timeline.jumps == 0)
    }

    /// A stream that has just started, on a device 100 ppm off the local clock (as far off as
    /// the null sink here, which runs fast; this one runs slow), reporting every 20 ms with
    /// ±20 µs of scatter: from 0.3 s on, the line's end stays within 35 µs of the truth (31 µs
    /// at worst over ten seeds).
    /// Without a slope until a second of history it drifted 63 µs off.
    @Test func followsTheDevicesRateFromItsFirstQuarterSecond() {
        var late = DeviceTimeline.Configuration()
        late.minimumSlopeSpan = 1_000_000_000
        #expect(Self.worstStart(DeviceTimeline.Configuration()) < 35_000)
        #expect(Self.worstStart(late) > 45_000)
    }

    /// The worst error of the line's end from 0.3 s to 2 s after a start, over ten seeds.
    static func worstStart(_ configuration: DeviceTimeline.Configuration) -> Double {
        var worst = 0.0
        for seed in UInt64(1)...UInt64(10) {
            var timeline = DeviceTimeline(configuration: configuration)
            var random = SeededRandom(seed: seed)
            let start: Int64 = 2_000_000_000
            for i in 0..<100 {  // 2 s
                let now = start + Int64(i) * 20_000_000
                let trueAnchor = Double(start) + 100e-6 * Double(now - start)
                let scatter = Double(Int64.random(in: -20_000...20_000, using: &random))
                timeline.report(Self.report(anchor: trueAnchor + scatter, frame: Int64(i) * 960, now: now))
                if now - start >= 300_000_000, let a = timeline.anchor(at: now) { worst = max(worst, abs(Double(a) - trueAnchor)) }
            }
        }
        return worst
    }

    @Test func theFirstReportAnchorsAtOnce() {
        var timeline = DeviceTimeline()
        #expect(timeline.heardAt(frame: 0) == nil)
        timeline.report(Self.report(anchor: 2_000_000, frame: 960, now: 1_000_000))
        #expect(timeline.heardAt(frame: 1_920) == LocalTime(nanoseconds: 2_000_000 + 40_000_000))
    }

    /// A sound server answers the stream's first timing query slowly (it is busy opening the
    /// stream), and that answer is late by as much: a room must not place its first sound on
    /// it. The line is settled once it holds a few reports, the quick ones then weighing most;
    /// an exact report (a clocked output's) is settled at once; a jump starts over.
    @Test func aFirstSoundWaitsForAFewReports() {
        var timeline = DeviceTimeline()
        let anchor = 1_040_000_000.0, quick: Int64 = 80_000
        var now: Int64 = 1_000_000_000
        timeline.report(Self.report(anchor: anchor, frame: 0, now: now, rtt: 600_000))
        let firstError = abs(Double(timeline.anchor(at: now) ?? 0) - (anchor + Double(quick) / 2))
        #expect(firstError > 200_000 && !timeline.isSettled, "\(firstError) ns")
        var reports = 1
        while !timeline.isSettled, reports < 50 {
            now += 40_000_000  // PulseOutput asks about every 40 ms
            timeline.report(Self.report(anchor: anchor, frame: Int64(reports) * 1_920, now: now, rtt: quick))
            reports += 1
        }
        #expect((4...6).contains(reports), "settled after \(reports) reports")
        let settledError = abs(Double(timeline.anchor(at: now) ?? 0) - (anchor + Double(quick) / 2))
        #expect(settledError < 2_000, "\(settledError) ns")

        var exact = DeviceTimeline()
        exact.report(Self.report(anchor: anchor, frame: 0, now: now))
        #expect(exact.isSettled)

        for k in 0..<timeline.configuration.jumpCount {  // the stream moved 30 ms
            now += 40_000_000
            timeline.report(Self.report(anchor: anchor + 30_000_000, frame: Int64(reports + k) * 1_920, now: now, rtt: quick))
        }
        #expect(timeline.jumps == 1 && !timeline.isSettled)
    }

    /// A sound card 150 ppm fast, its position reported exactly every 40 ms (an ALSA driver):
    /// a timeline that settles on the rate (`settleOnRate`) places no first sound until its
    /// reports span a quarter second (10 reports), and the line it then gives is within a few
    /// microseconds of the card (on a room's first three points and no slope, a card 150 ppm
    /// fast was played 47 µs early); with a rate remembered, it settles on three points.
    @Test func aCardsLineSettlesOnItsRate() {
        let slope = -150e-6  // 150 ppm fast: each frame takes that much less than nominal
        func anchor(at frame: Int64) -> Double { 1e9 + Double(AudioFormat.nanoseconds(forFrames: frame)) * slope }
        func run(_ configure: (inout DeviceTimeline) -> Void) -> (reports: Int, error: Double) {
            var configuration = DeviceTimeline.Configuration()
            configuration.settleOnRate = true
            var timeline = DeviceTimeline(configuration: configuration)
            configure(&timeline)
            var reports = 0
            var frame: Int64 = 0
            while !timeline.isSettled, reports < 50 {
                frame = Int64(reports) * 1_920
                // Each status call takes 2 µs (an exact report, of no duration, settles at once).
                timeline.report(Self.report(anchor: anchor(at: frame), frame: frame, now: 1_000_000_000 + Int64(reports) * 40_000_000,
                                            rtt: 2_000))
                reports += 1
            }
            let ahead = frame + 9_600  // a write's first frame, 200 ms on
            let truth = anchor(at: ahead) + Double(AudioFormat.nanoseconds(forFrames: ahead))
            return (reports, abs(Double(timeline.heardAt(frame: ahead)?.nanoseconds ?? 0) - truth))
        }
        let measured = run { _ in }
        #expect((9...11).contains(measured.reports), "settled after \(measured.reports) reports")
        #expect(measured.error < 3_000, "\(measured.error) ns off")
        let remembered = run { $0.assumeRate(ppm: -150) }
        #expect(remembered.reports <= 6, "\(remembered)")
        #expect(remembered.error < 2_000, "\(remembered)")
    }

    /// A jump (the stream moved 30 ms) starts a new line, but not a new rate: the device's
    /// crystal is the same, so the new line takes the rate the old one measured until its
    /// own reports span enough to measure it again.
    @Test func aJumpKeepsTheDevicesRate() {
        var timeline = DeviceTimeline()
        var now: Int64 = 1_000_000_000, i: Int64 = 0
        func report(shift: Double) {
            let anchor = 1_040_000_000 + shift + 100e-6 * Double(now - 1_000_000_000)  // 100 ppm slow
            timeline.report(Self.report(anchor: anchor, frame: i * 1_920, now: now, rtt: 80_000))
            now += 40_000_000
            i += 1
        }
        while now < 3_000_000_000 { report(shift: 0) }
        #expect(abs(timeline.rateOffsetPPM - 100) < 2, "\(timeline.rateOffsetPPM) ppm")
        for _ in 0..<timeline.configuration.jumpCount { report(shift: 30_000_000) }
        #expect(timeline.jumps == 1 && !timeline.hasMeasuredRate)
        #expect(abs(timeline.rateOffsetPPM - 100) < 2, "after the jump: \(timeline.rateOffsetPPM) ppm")
        for _ in 0..<3 { report(shift: 30_000_000) }
        // The anchor as a function of the instant a frame is heard, 70 ms after it was asked.
        let expected = 1_040_000_000 + 30_000_000 + 100e-6 * Double(now - 1_070_000_000) + 40_000
        #expect(abs(Double(timeline.anchor(at: now) ?? 0) - expected) < 2_000, "\(Double(timeline.anchor(at: now) ?? 0) - expected) ns, \(timeline.rateOffsetPPM) ppm")
    }

    /// The line is steady once its reports span two seconds, with none out of line since;
    /// one out of line makes it unsteady (the player asks quickly again, to tell a jump from
    /// a wild answer), and a jump starts it over.
    @Test func isSteadyOnceItsReportsSpanTwoSeconds() {
        var timeline = DeviceTimeline()
        var now: Int64 = 1_000_000_000
        var i: Int64 = 0
        func report(offset: Double = 0) {
            timeline.report(Self.report(anchor: 1_040_000_000 + offset, frame: i * 1_920, now: now, rtt: 80_000))
            now += 40_000_000
            i += 1
        }
        while now < 2_950_000_000 { report() }
        #expect(timeline.isSettled && !timeline.isSteady)
        while now < 3_200_000_000 { report() }
        #expect(timeline.isSteady)
        report(offset: 10_000_000)  // a wild answer
        #expect(!timeline.isSteady)
        report()
        #expect(timeline.isSteady && timeline.jumps == 0)
        for _ in 0..<timeline.configuration.jumpCount { report(offset: 30_000_000) }  // the stream moved 30 ms
        #expect(timeline.jumps == 1 && !timeline.isSteady)
    }

    /// Reports every 40 ms (a young line's pace) and every 100 ms (a steady one's), of a
    /// device 200 ppm off the local clock, answered in 80 to 200 µs (each late by half its
    /// round trip) with ±10 µs of scatter: after the first 5 s the line's anchor strays from
    /// its bias (about half the quickest round trip, the same in every room) by little more
    /// at the steady pace than at the young one, over ten seeds each (16.3 against 14.0 µs
    /// at worst, the round trips' spread, not the pace, making most of it).
    @Test func holdsTheLineAtTheSteadyPace() {
        func worst(every interval: Int64) -> Double {
            var worst = 0.0
            for seed in UInt64(1)...UInt64(10) {
                var timeline = DeviceTimeline()
                var random = SeededRandom(seed: seed)
                let start: Int64 = 2_000_000_000
                var now = start
                var errors: [Double] = []
                while now < start + 30_000_000_000 {
                    func trueAnchor(_ t: Int64) -> Double { Double(start) - 200e-6 * Double(t - start) }
                    let rtt = Int64.random(in: 80_000...200_000, using: &random)
                    let scatter = Double(Int64.random(in: -10_000...10_000, using: &random))
                    let frame = AudioFormat.frames(forNanoseconds: now - start)
                    timeline.report(Self.report(anchor: trueAnchor(now) + scatter, frame: frame, now: now, rtt: rtt))
                    now += interval
                    if now - start >= 5_000_000_000, let a = timeline.anchor(at: now) { errors.append(Double(a) - trueAnchor(now)) }
                }
                let bias = errors.sorted()[errors.count / 2]
                worst = max(worst, errors.map { abs($0 - bias) }.max() ?? .infinity)
            }
            return worst
        }
        let young = worst(every: 40_000_000), steady = worst(every: 100_000_000)
        #expect(young < 20_000 && steady < young * 1.25 + 1_000, "40 ms: \(young) ns, 100 ms: \(steady) ns")
    }

    @Test func followsAJumpAfterAFewReports() {
        var timeline = DeviceTimeline()
        var now: Int64 = 1_000_000_000
        var anchor = 1_040_000_000.0
        for i in 0..<400 {
            if i == 200 { anchor += 30_000_000 }  // the stream moved: everything is heard 30 ms later
            timeline.report(Self.report(anchor: anchor, frame: Int64(i) * 480, now: now))
            now += 10_000_000
        }
        #expect(timeline.jumps == 1)
        #expect(abs(Double(timeline.anchor(at: now) ?? 0) - anchor) < 1_000)
    }

    @Test func aFewWildReportsAreNotAJump() {
        var timeline = DeviceTimeline()
        var now: Int64 = 1_000_000_000
        for i in 0..<300 {
            let wild = i % 50 == 49  // one in fifty is 10 ms off
            timeline.report(Self.report(anchor: 1e9 + (wild ? 1e7 : 0), frame: Int64(i) * 480, now: now))
            now += 10_000_000
        }
        #expect(timeline.jumps == 0)
        #expect(abs((timeline.anchor(at: now) ?? 0) - 1_000_000_000) < 1_000)
    }

    @Test func medianRejectsOddReadings() {
        var f = MedianFilter(width: 5)
        for v: Int64 in [10, 11, 9, 5_000, 10] { _ = f.add(v) }
        #expect(f.median == 10)
        f.reset()
        #expect(f.count == 0)
    }

    /// The window kept sorted as values come and go gives the median a sort of the last
    /// `width` values gives, ties and all, before the window fills and after.
    @Test func medianMatchesSortingTheWindow() {
        var generator = SystemRandomNumberGenerator()
        for width in [1, 2, 5, 9] {
            var f = MedianFilter(width: width)
            var window: [Int64] = []
            for _ in 0..<500 {
                let v = Int64.random(in: -20...20, using: &generator)
                window.append(v)
                if window.count > width { window.removeFirst() }
                let got = f.add(v)
                let sorted = window.sorted()
                #expect(got == sorted[sorted.count / 2])
                #expect(f.count == window.count)
            }
        }
    }
}
