import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Clock estimator")
struct ClockEstimatorTests {
    /// A follower whose clock reads `t`, and a coordinator whose clock reads
    /// `offset + (1 + drift) * t`, exchanging over a path with random queueing delay.
    struct Link {
        var offset: Int64
        var drift: Double
        var random: SeededRandom
        var baseDelay: Int64 = 200_000
        var jitter: Int64 = 2_000_000
        /// Probability that a leg sees queueing delay at all.
        var busy = 0.7

        func coordinator(at t: Int64) -> CoordinatorTime {
            CoordinatorTime(nanoseconds: offset + t + Int64((Double(t) * drift).rounded()))
        }

        mutating func leg() -> Int64 {
            baseDelay + (Double.random(in: 0..<1, using: &random) < busy ? Int64.random(in: 0...jitter, using: &random) : 0)
        }

        mutating func exchange(at t: Int64) -> ClockSample {
            let d1 = leg(), d2 = leg(), processing: Int64 = 30_000
            return ClockSample(t1: LocalTime(nanoseconds: t), t2: coordinator(at: t + d1),
                               t3: coordinator(at: t + d1 + processing), t4: LocalTime(nanoseconds: t + d1 + processing + d2))
        }
    }

    @Test func sampleArithmetic() {
        let s = ClockSample(t1: LocalTime(nanoseconds: 100), t2: CoordinatorTime(nanoseconds: 1_150),
                            t3: CoordinatorTime(nanoseconds: 1_160), t4: LocalTime(nanoseconds: 220))
        #expect(s.roundTrip == 110)
        #expect(s.offset == 995)
    }

    /// Drift up to ±500 ppm; queueing on 30 % of legs (typical), or on 70 % (a congested link,
    /// where few exchanges are clean and the bound is looser).
    @Test(arguments: [-500.0, -200.0, 0.0, 200.0, 500.0], [(0.3, Int64(20_000)), (0.7, Int64(60_000))])
    func tracksOffsetAndDriftThroughJitter(ppm: Double, load: (busy: Double, bound: Int64)) {
        var link = Link(offset: 3_700_000_000, drift: ppm * 1e-6, random: SeededRandom(seed: UInt64(ppm + 1000)))
        link.busy = load.busy
        var estimator = ClockEstimator()
        var t: Int64 = 10_000_000_000
        for i in 0..<120 {
            estimator.add(link.exchange(at: t))
            t += i < 20 ? 10_000_000 : 1_000_000_000
        }
        let e = try! #require(estimator.estimate)
        let now = LocalTime(nanoseconds: t)
        let error = estimator.estimate!.coordinatorTime(at: now) - link.coordinator(at: t)
        #expect(abs(error) < load.bound, "offset error \(error) ns, estimate \(e)")
        #expect(abs(e.drift - ppm * 1e-6) < 3e-6, "drift \(e.drift * 1e6) ppm, want \(ppm)")
        #expect(e.uncertainty < load.bound * 2)
        #expect(e.minimumRoundTrip >= 360_000 && e.minimumRoundTrip < 500_000, "\(e.minimumRoundTrip)")
        // The inverse mapping agrees.
        let back = e.localTime(at: e.coordinatorTime(at: now))
        #expect(abs(back - now) <= 2)
    }

    @Test func burstAloneLocksWithinAFewExchanges() {
        var link = Link(offset: -42_000_000, drift: 0, random: SeededRandom(seed: 9))
        var estimator = ClockEstimator()
        var t: Int64 = 1_000_000_000
        for _ in 0..<10 {
            estimator.add(link.exchange(at: t))
            t += 10_000_000
        }
        let e = try! #require(estimator.estimate)
        #expect(abs(e.coordinatorTime(at: LocalTime(nanoseconds: t)) - link.coordinator(at: t)) < 500_000)
        #expect(e.drift == 0)  // too short a span to fit drift
    }

    @Test func coordinatorRestartIsDetectedAndFollowed() {
        var link = Link(offset: 5_000_000_000, drift: 0, random: SeededRandom(seed: 3), jitter: 100_000)
        var estimator = ClockEstimator()
        var t: Int64 = 1_000_000_000
        for _ in 0..<30 { estimator.add(link.exchange(at: t)); t += 100_000_000 }
        link.offset = -77_000_000_000  // the coordinator restarted: its clock is elsewhere now
        estimator.add(link.exchange(at: t)); t += 100_000_000
        // One outlier is ignored...
        #expect(abs(estimator.estimate!.offset - 5_000_000_000) < 1_000_000)
        for _ in 0..<5 { estimator.add(link.exchange(at: t)); t += 100_000_000 }
        // ...a run of them is a restart.
        #expect(estimator.resets == 1)
        #expect(abs(estimator.estimate!.coordinatorTime(at: LocalTime(nanoseconds: t)) - link.coordinator(at: t)) < 1_000_000)
    }

    @Test func impossibleSamplesAreIgnored() {
        var estimator = ClockEstimator()
        estimator.add(ClockSample(t1: LocalTime(nanoseconds: 100), t2: CoordinatorTime(nanoseconds: 0),
                                  t3: CoordinatorTime(nanoseconds: 1_000), t4: LocalTime(nanoseconds: 50)))
        #expect(estimator.estimate == nil)
    }
}
