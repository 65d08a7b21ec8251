import Foundation
import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Clock estimator")
struct ClockEstimatorTests {
    /// A follower whose clock reads true time `t`, and a coordinator whose clock reads
    /// `offset + (1 + drift) · t` (plus `step` from `stepAt` on: a restart), exchanging time
    /// over two paths (towards the coordinator and back) and streaming 50 packets a second
    /// back. The exchanges go as the follower's own session schedules them
    /// (`CoordinatorSession`, turned at every device wake, 20 ms apart, and whenever it is
    /// due), and its answers reach the estimator through it. Checks the estimate against the
    /// truth every 250 ms.
    struct Lab {
        var up: PathModel
        var down: PathModel
        var drift: Double
        var offset: Int64 = 3_700_000_000
        var step: Int64 = 0
        var stepAt = Int64.max
        /// How fast the stream's packets' floor moves apart from the exchanges' (ns per s of
        /// true time): a sender whose pace, or a path whose cost for larger packets, changes.
        var streamFloorRamp = 0.0
        var random: SeededRandom
        var estimator = ClockEstimator()
        /// The follower's side of the control channel; a new one is a new process.
        var session = CoordinatorSession(unicastPort: nil, reportsRoom: false)
        /// Time answers on their way back: when each arrives.
        var answers: [(arrives: Int64, message: ControlMessage)] = []
        /// (true time, error, bound) at every check.
        var checks: [(time: Int64, error: Int64, bound: Int64)] = []
        /// Time requests sent.
        var exchanges = 0

        init(up: PathModel, down: PathModel, drift: Double, seed: UInt64) {
            self.up = up
            self.down = down
            self.drift = drift
            random = SeededRandom(seed: seed)
        }

        func coordinator(at t: Int64) -> Int64 {
            offset + t + Int64((Double(t) * drift).rounded()) + (t >= stepAt ? step : 0)
        }

        /// Runs from true time `start` for `seconds`.
        mutating func run(from start: Int64 = 10_000_000_000, seconds: Int64) {
            let end = start + seconds * 1_000_000_000
            var nextWake = start, nextPacket = start, nextCheck = start
            var t = start
            answers.removeAll()
            while true {
                t = max(t, min(nextWake, session.nextTurn, nextPacket, nextCheck, answers.first?.arrives ?? .max))
                if t >= end { break }
                if let answer = answers.first, answer.arrives <= t {
                    answers.removeFirst()
                    for case let .sample(sample) in session.receive(answer.message, stamp: 0, arrived: LocalTime(nanoseconds: t)) {
                        estimator.add(sample)
                    }
                    continue
                }
                if t == nextWake || t >= session.nextTurn {
                    for action in session.turn(now: t, lock: ClockLock(estimator)) where action == .requestTime {
                        session.requestSent(originate: t)
                        exchanges += 1
                        guard let d1 = up.delay(sentAt: t, using: &random), let d2 = down.delay(sentAt: t + d1, using: &random) else { continue }
                        let processing: Int64 = 30_000
                        let answer = ControlMessage.timeResponse(
                            originate: UInt64(bitPattern: t), receive: NTPTimestamp(nanoseconds: coordinator(at: t + d1)),
                            transmit: NTPTimestamp(nanoseconds: coordinator(at: t + d1 + processing)), cookie: 1)
                        let arrives = t + d1 + processing + d2
                        answers.insert((arrives, answer), at: answers.firstIndex { $0.arrives > arrives } ?? answers.count)
                    }
                    if t == nextWake { nextWake = t + 20_000_000 }
                }
                if t == nextPacket {
                    if let d = down.delay(sentAt: t, using: &random) {
                        let moved = Int64(Double(t - start) / 1e9 * streamFloorRamp)
                        estimator.addStreamReading(sent: CoordinatorTime(nanoseconds: coordinator(at: t)),
                                                   arrived: LocalTime(nanoseconds: t + d + moved))
                    }
                    nextPacket = t + 20_000_000
                }
                if t == nextCheck {
                    if let e = estimator.estimate {
                        let local = LocalTime(nanoseconds: t)
                        checks.append((t, e.coordinatorTime(at: local).nanoseconds - coordinator(at: t), e.uncertainty(at: local)))
                    }
                    nextCheck = t + 250_000_000
                }
            }
        }

        /// The follower starts again: a new process, with a new session (its estimator is the
        /// test's to set).
        mutating func newProcess() {
            session = CoordinatorSession(unicastPort: nil, reportsRoom: false)
            answers.removeAll()
            exchanges = 0
        }

        /// The checks from `from` (true time) on.
        func checks(from: Int64) -> [(time: Int64, error: Int64, bound: Int64)] { checks.filter { $0.time >= from } }
    }

    /// A path as bench/network's relay makes it: a delay ± uniform jitter, and loss.
    static func path(_ delayMs: Double, _ jitterMs: Double, loss: Double = 0) -> PathModel {
        PathModel(delay: Int64(delayMs * 1e6), jitter: Int64(jitterMs * 1e6), loss: loss)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var up: PathModel
        var down: PathModel
        /// The error allowed after 15 s of settling, nanoseconds.
        var limit: Int64
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        var bursty = path(5, 2, loss: 0.02)
        (bursty.burstEvery, bursty.burstLength, bursty.burstDelay) = (2_000_000_000, 300_000_000, 25_000_000)
        // Hosts and relays add a small random cost to every packet: the floor is blurred.
        var blurred = path(5, 2, loss: 0.02)
        blurred.fuzz = 150_000
        return [
            Case(name: "wired (0.1 ± 0.05 ms)", up: path(0.1, 0.05), down: path(0.1, 0.05), limit: 10_000),
            Case(name: "5 ± 2 ms, 2 % loss", up: path(5, 2, loss: 0.02), down: path(5, 2, loss: 0.02), limit: 60_000),
            Case(name: "5 ± 2 ms, 2 % loss, blurred floor", up: blurred, down: blurred, limit: 60_000),
            Case(name: "20 ± 10 ms, 10 % loss", up: path(20, 10, loss: 0.1), down: path(20, 10, loss: 0.1), limit: 200_000),
            // The same smallest delay both ways, but far more jitter back than out.
            Case(name: "asymmetric jitter", up: path(3.5, 0.5), down: path(11, 8, loss: 0.05), limit: 100_000),
            Case(name: "bursty queueing", up: bursty, down: bursty, limit: 80_000),
        ]
    }()

    @Test("Offset and drift with known truth; the bound covers the error",
          arguments: cases, [-500e-6, -200e-6, 0, 200e-6, 500e-6])
    func tracksTheTruth(_ c: Case, drift: Double) throws {
        var lab = Lab(up: c.up, down: c.down, drift: drift, seed: UInt64(c.limit) &+ UInt64(bitPattern: Int64(drift * 1e7)))
        lab.run(seconds: 75)
        let settled = lab.checks(from: 25_000_000_000)
        let worst = settled.map { abs($0.error) }.max() ?? .max
        #expect(worst <= c.limit, "worst error \(worst) ns after settling")
        // The bound is about 95 %: over many runs it covers 98 to 100 % of checks (bench and
        // ClockEstimatorTests' cases), in any one run at least 80 %; and the error never
        // exceeds twice the bound.
        let all = lab.checks(from: 10_500_000_000)
        let covered = all.filter { abs($0.error) <= $0.bound }.count
        #expect(Double(covered) >= 0.8 * Double(all.count), "covered \(covered) of \(all.count)")
        let wild = all.filter { abs($0.error) > 2 * $0.bound }
        #expect(wild.isEmpty, "errors beyond twice the bound: \(wild.prefix(3))")
        let e = try #require(lab.estimator.estimate)
        #expect(abs(e.drift - drift) < e.driftUncertainty, "drift \(e.drift * 1e6) ppm, want \(drift * 1e6) ± \(e.driftUncertainty * 1e6)")
        // The smallest round trip: the two floors (a blurred floor lies a little higher), within
        // what the drift's error moves readings by.
        let floors = c.up.floor + c.down.floor
        #expect(e.minimumRoundTrip > floors - 2 * e.uncertainty - 20_000 && e.minimumRoundTrip < floors + c.up.fuzz + c.down.fuzz + 2 * e.uncertainty + 20_000,
                "round trip \(e.minimumRoundTrip), floors \(floors)")
    }

    /// The stream's floor creeping away from the exchanges' (here by 1 µs a second, a slope of
    /// 1 ppm that the clocks do not have) must not pass for drift: the exchanges disagree, so
    /// the stream counts for little.
    @Test func aStreamWhoseFloorMovesDoesNotSteerTheDrift() throws {
        for (name, up, down) in [("wired", Self.path(0.1, 0.05), Self.path(0.1, 0.05)), ("5 ± 2 ms", Self.path(5, 2), Self.path(5, 2))] {
            var lab = Lab(up: up, down: down, drift: 100e-6, seed: 11)
            lab.streamFloorRamp = 1_000
            lab.run(seconds: 60)
            let e = try #require(lab.estimator.estimate)
            #expect(abs(e.drift - 100e-6) < 0.3e-6, "\(name): drift \(e.drift * 1e6) ppm, want 100")
            let worst = lab.checks(from: 30_000_000_000).map { abs($0.error) }.max() ?? .max
            // Fitted jointly, as before, the wired path erred by 22 µs; apart, it errs by 1 to
            // 8 µs over seeds 11 to 20 (which seed lands where moves with any change upstream).
            #expect(worst <= (name == "wired" ? 10_000 : 40_000), "\(name): worst error \(worst) ns")
        }
    }

    @Test func locksWithinTheBurstAndExchangesLessOnceLocked() throws {
        var lab = Lab(up: Self.path(0.1, 0.05), down: Self.path(0.1, 0.05), drift: 100e-6, seed: 4)
        lab.run(seconds: 1)
        // After the 100 ms burst: locked to a few microseconds.
        let early = try #require(lab.checks.first { $0.time >= 10_250_000_000 })
        #expect(abs(early.error) < 20_000 && abs(early.error) <= early.bound)
        lab.run(from: 11_000_000_000, seconds: 59)
        let before = lab.exchanges
        lab.run(from: 70_000_000_000, seconds: 10)
        // Every 250 ms, taken at the first device wake inside the request's window (which
        // opens a quarter early), in pairs a millisecond apart: 5 pairs a second, not the 50
        // exchanges of a follower still locking.
        #expect(lab.exchanges - before <= 110, "a locked follower exchanges 4 to 5 pairs a second: \(lab.exchanges - before) in 10 s")
    }

    /// A restarted follower on a jittery path (5 ± 2 ms, 2 % loss): a quarter of a second
    /// after its first exchange its clock is within its bound and within 100 µs on every seed
    /// (the quickest of its first 100 exchanges, a millisecond apart, lies some 40 µs above
    /// each floor; with 20 exchanges 5 ms apart it was 100 to 220 µs off on 6 of 60 seeds);
    /// half a second after, within 60 µs.
    @Test func joinsAJitteryPathWithinHalfASecond() throws {
        var near = 0
        for seed in UInt64(20)..<UInt64(40) {
            var lab = Lab(up: Self.path(5, 2, loss: 0.02), down: Self.path(5, 2, loss: 0.02), drift: 40e-6, seed: seed)
            lab.run(seconds: 1)
            // Checks come every 250 ms from the start.
            let quarter = try #require(lab.checks.first { $0.time >= 10_250_000_000 })
            let half = try #require(lab.checks.first { $0.time >= 10_500_000_000 })
            #expect(abs(quarter.error) <= quarter.bound, "seed \(seed): \(quarter.error) ns off, bound \(quarter.bound)")
            #expect(abs(half.error) <= 60_000, "seed \(seed): \(half.error) ns off after 500 ms")
            if abs(quarter.error) <= 100_000 { near += 1 }
        }
        #expect(near == 20, "within 100 µs after 250 ms on \(near) of 20 seeds")
    }

    /// A follower that restarts resumes the lock it had (the same host clock): from the new
    /// process's first exchange it is as close as before, not the tens of microseconds a
    /// fresh lock on a jittery path starts with, and its bound covers the error throughout.
    /// As the new readings sharpen, their estimate takes over without a jump.
    @Test(arguments: [UInt64(30), 31, 32, 33])
    func aRestartedFollowerResumesItsClock(seed: UInt64) throws {
        var lab = Lab(up: Self.path(5, 2, loss: 0.02), down: Self.path(5, 2, loss: 0.02), drift: 40e-6, seed: seed)
        lab.run(seconds: 60)
        let kept = try #require(lab.estimator.estimate)
        let before = try #require(lab.checks.last)
        // Stopped at 70 s; the new process's first exchange comes 0.7 s later.
        lab.estimator = ClockEstimator()
        lab.estimator.resume(from: kept)
        lab.newProcess()
        lab.checks = []
        lab.run(from: 70_700_000_000, seconds: 30)
        #expect(!lab.estimator.rememberedRejected)
        let checks = lab.checks
        #expect(checks.count >= 100)
        for check in checks {
            #expect(abs(check.error) <= check.bound, "at \(check.time): error \(check.error), bound \(check.bound)")
        }
        // The first second: within a few µs of where the last run stood.
        for check in checks.prefix(4) {
            #expect(abs(check.error - before.error) < 5_000, "at \(check.time): \(check.error) ns, was \(before.error)")
        }
        // No jump as the new readings take over: consecutive checks (250 ms apart) move little.
        let moves = zip(checks, checks.dropFirst()).map { abs($1.error - $0.error) }
        #expect((moves.max() ?? 0) < 30_000, "largest move between checks \(moves.max() ?? 0) ns")
        #expect(lab.estimator.remembered == nil, "after 30 s the new readings know better")
    }

    /// A remembered lock from another coordinator clock (it rebooted, or its clock moved by
    /// more than the path's round trip) is forgotten at the first answer, and the follower
    /// locks as a new one does.
    @Test(arguments: [Int64(3_000_000_000), -25_000_000, 12_000_000])
    func aRememberedClockThatNoLongerHoldsIsForgotten(shift: Int64) throws {
        var lab = Lab(up: Self.path(5, 2, loss: 0.02), down: Self.path(5, 2, loss: 0.02), drift: 40e-6, seed: 7)
        lab.run(seconds: 30)
        var kept = try #require(lab.estimator.estimate)
        kept.offset += shift
        lab.estimator = ClockEstimator()
        lab.estimator.resume(from: kept)
        lab.newProcess()
        lab.checks = []
        lab.run(from: 41_000_000_000, seconds: 2)
        #expect(lab.estimator.rememberedRejected && lab.estimator.remembered == nil)
        let quarter = try #require(lab.checks.first { $0.time >= 41_250_000_000 })
        #expect(abs(quarter.error) <= 100_000 && abs(quarter.error) <= quarter.bound, "\(quarter)")
    }

    @Test func holdsOverAnOutageWithinItsBound() throws {
        var down = Self.path(5, 2, loss: 0.02), up = down
        up.outages = [(40_000_000_000, 45_000_000_000)]
        down.outages = up.outages
        var lab = Lab(up: up, down: down, drift: 150e-6, seed: 8)
        lab.run(seconds: 40)
        let before = try #require(lab.estimator.estimate)
        var holdover = lab
        holdover.run(from: 40_000_000_000, seconds: 5)
        let during = holdover.checks(from: 40_000_000_000)
        #expect(!during.isEmpty)
        for check in during {
            #expect(abs(check.error) <= check.bound, "at \(check.time): error \(check.error), bound \(check.bound)")
            #expect(abs(check.error) < 40_000)
        }
        #expect(during.last!.bound > before.uncertainty, "the bound grows without exchanges")
    }

    @Test func aCoordinatorRestartIsFollowedKeepingTheDrift() throws {
        var lab = Lab(up: Self.path(1, 0.5), down: Self.path(1, 0.5), drift: -300e-6, seed: 3)
        lab.offset = 120_000_000_000  // time answers carry NTP stamps: the clock stays positive
        lab.step = -77_000_000_000  // the coordinator restarted: its clock is elsewhere now
        lab.stepAt = 40_000_000_000
        lab.run(seconds: 29)
        #expect(lab.estimator.resets == 0)
        lab.run(from: 39_000_000_000, seconds: 3)
        #expect(lab.estimator.resets == 1)
        // Within half a second of the jump the estimate follows the new clock, and the drift
        // it knew carries on (the crystals did not change).
        let after = lab.checks(from: 40_500_000_000)
        #expect(!after.isEmpty && after.allSatisfy { abs($0.error) < 50_000 }, "\(after.map(\.error))")
        let e = try #require(lab.estimator.estimate)
        #expect(abs(e.drift + 300e-6) < e.driftUncertainty)
    }

    @Test func aFewOutliersAreNotARestart() {
        var lab = Lab(up: Self.path(0.2, 0.1), down: Self.path(0.2, 0.1), drift: 0, seed: 5)
        lab.run(seconds: 10)
        let offset = lab.estimator.estimate!.offset
        // Two wild exchanges (a clock misread, a forged answer) are ignored.
        for k in 0..<2 {
            let t: Int64 = 20_000_000_000 + Int64(k) * 10_000_000
            lab.estimator.add(ClockSample(t1: LocalTime(nanoseconds: t), t2: CoordinatorTime(nanoseconds: 9_000_000_000_000),
                                          t3: CoordinatorTime(nanoseconds: 9_000_000_000_100), t4: LocalTime(nanoseconds: t + 400_000)))
        }
        #expect(lab.estimator.resets == 0)
        #expect(abs(lab.estimator.estimate!.offset - offset) < 10_000)
        // Stream readings that would mean a negative delay are ignored too.
        lab.estimator.addStreamReading(sent: CoordinatorTime(nanoseconds: lab.coordinator(at: 20_000_000_000) + 50_000_000),
                                       arrived: LocalTime(nanoseconds: 20_000_000_000))
        #expect(lab.estimator.rejectedStreamReadings == 1)
    }

    @Test func sampleArithmetic() {
        let s = ClockSample(t1: LocalTime(nanoseconds: 100), t2: CoordinatorTime(nanoseconds: 1_150),
                            t3: CoordinatorTime(nanoseconds: 1_160), t4: LocalTime(nanoseconds: 220))
        #expect(s.roundTrip == 110)
        #expect(s.offset == 995)
    }

    @Test func impossibleSamplesAreIgnored() {
        var estimator = ClockEstimator()
        estimator.add(ClockSample(t1: LocalTime(nanoseconds: 100), t2: CoordinatorTime(nanoseconds: 0),
                                  t3: CoordinatorTime(nanoseconds: 1_000), t4: LocalTime(nanoseconds: 50)))
        #expect(estimator.estimate == nil)
    }

    @Test func theInverseMappingAgrees() throws {
        var lab = Lab(up: Self.path(2, 1), down: Self.path(2, 1), drift: 321e-6, seed: 6)
        lab.run(seconds: 20)
        let e = try #require(lab.estimator.estimate)
        let now = LocalTime(nanoseconds: 30_000_000_000)
        #expect(abs(e.localTime(at: e.coordinatorTime(at: now)) - now) <= 2)
    }
}

/// `CLOCK_STUDY=1 swift test --filter ClockEstimatorStudy`: the estimator over many seeds,
/// every path of `ClockEstimatorTests.cases` and five drifts; prints the error while it
/// settles (5–20 s after the first exchange, what a follower that just joined plays with)
/// and once settled (25–75 s), and how often the bound covers it. For tuning, not a check.
@Suite("Clock estimator study", .disabled(if: ProcessInfo.processInfo.environment["CLOCK_STUDY"] == nil))
struct ClockEstimatorStudy {
    @Test func errorsOverManySeeds() {
        func quantile(_ values: [Int64], _ q: Double) -> Double {
            let sorted = values.map { abs($0) }.sorted()
            return sorted.isEmpty ? .nan : Double(sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))]) / 1e3
        }
        var allEarly: [Int64] = [], allSettled: [Int64] = [], covered = 0, checks = 0, wild = 0
        for c in ClockEstimatorTests.cases {
            var early: [Int64] = [], settled: [Int64] = []
            for drift in [-500e-6, -200e-6, 0, 200e-6, 500e-6] {
                for seed in UInt64(100)..<UInt64(104) {
                    var lab = ClockEstimatorTests.Lab(up: c.up, down: c.down, drift: drift, seed: seed)
                    lab.run(seconds: 75)
                    for check in lab.checks(from: 15_000_000_000) where check.time < 30_000_000_000 { early.append(check.error) }
                    for check in lab.checks(from: 35_000_000_000) { settled.append(check.error) }
                    for check in lab.checks(from: 10_500_000_000) {
                        checks += 1
                        if abs(check.error) <= check.bound { covered += 1 }
                        if abs(check.error) > 2 * check.bound { wild += 1 }
                    }
                }
            }
            allEarly += early
            allSettled += settled
            print(String(format: "study %@: settling p50 %.1f p95 %.1f max %.1f µs; settled p50 %.1f p95 %.1f max %.1f µs",
                         c.name, quantile(early, 0.5), quantile(early, 0.95), quantile(early, 1),
                         quantile(settled, 0.5), quantile(settled, 0.95), quantile(settled, 1)))
        }
        print(String(format: "study all: settling p50 %.1f p95 %.1f µs; settled p50 %.1f p95 %.1f µs; bound covers %.2f %%, %d beyond twice it",
                     quantile(allEarly, 0.5), quantile(allEarly, 0.95), quantile(allSettled, 0.5), quantile(allSettled, 0.95),
                     100 * Double(covered) / Double(checks), wild))
    }
}
