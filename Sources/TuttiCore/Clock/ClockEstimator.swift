/// Turns time exchanges, and the audio stream's own packets, into a `ClockEstimate`.
///
/// Every reading is one message's trip between the clocks: an exchange gives two (the
/// request's, towards the coordinator, and the answer's, back), an RTP packet stamped with
/// its send time gives one (from the coordinator, 50 a second). Each reading is the offset
/// plus or minus that trip's delay, and delay is never negative, so the offset line lies
/// under every reading towards the coordinator and over every reading from it. The
/// estimator keeps the quickest reading of each short bucket per path (`DelayEnvelope`) over
/// a long window, and fits lines against them (`EnvelopeFit`): the drift is the exchanges'
/// slope and the stream's, combined by their errors (and with what was known of it before,
/// while readings are few); the offset lies midway between the requests' floor and the
/// answers' on that drift (the smallest delay each way, taken as equal). Only the quickest
/// readings count, so jitter and loss do not move the estimate: they only thin out the
/// readings near the floor. The stream's packets share the slope but keep a floor of their
/// own (a larger packet may cross the path more slowly).
///
/// The uncertainty is a bound (about 95 %) on the estimate's error, from how densely the
/// readings crowd each floor (a sparse floor may lie lower than the quickest readings seen),
/// the drift's error carried from those readings to the present, and how long since the last
/// exchange. A coordinator restart (its clock jumps) is recognised after a few consistent
/// outliers, and the estimator starts again, keeping the drift it knew.
///
/// A follower that restarts (the same host, the same boot: the same local clock) may resume
/// from the estimate it had when it stopped (`resume(from:)`): its bound grown by the drift's
/// error and the crystal's wander over the time since. It is checked against every fit of
/// the new readings: while both bounds overlap, the estimate is their overlap (so the
/// remembered line holds until the new readings know better, and hands over without a jump);
/// when they do not (either clock is not the one remembered: a reboot), it is forgotten.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Local time the readings are kept for.
        public var window: Int64 = 120_000_000_000
        /// Each path keeps its quickest reading per bucket of this much local time.
        public var bucket: Int64 = 200_000_000
        /// Fit the drift only once the exchanges span this much local time.
        public var minimumDriftSpan: Int64 = 2_000_000_000
        /// Drift is searched within ± this (1000 ppm), far beyond real crystals.
        public var maximumDrift: Double = 0.001
        /// What is known of the drift before any reading (a bound on real crystals: 500 ppm),
        /// and after a coordinator restart, of the drift known before it (its crystal, or
        /// another machine's close to it: 20 ppm). The fit takes over as it grows more precise.
        public var priorDriftError: Double = 500e-6
        public var restartDriftError: Double = 20e-6
        /// How fast a crystal's rate may wander (per second of holdover), beyond the drift's
        /// own uncertainty: the bound grows by this much per second without exchanges.
        public var wander: Double = 1e-6
        /// Refit at most this often (readings arrive up to 150 times a second)...
        public var refitInterval: Int64 = 100_000_000
        /// ...or, once the drift is known so well that the estimate, carried on between fits,
        /// moves by under a microsecond in this long from what a fit would say, as seldom as
        /// keeps it so: at 4 ppm every 250 ms, at 1 ppm every second... A refit runs over the
        /// whole window (some 500 k instructions): at 10 a second it was a locked follower's
        /// largest cost after decoding.
        public var settledRefitInterval: Int64 = 250_000_000
        /// ...but at least this often.
        public var longestRefitInterval: Int64 = 1_000_000_000
        /// ...except in the first this much local time of readings (the opening burst), when
        /// every reading refits. Those readings do not count for the drift.
        public var lockingSpan: Int64 = 250_000_000
        /// An exchange this far from the prediction (plus its round trip) is an outlier...
        public var jumpThreshold: Int64 = 20_000_000
        /// ...and this many in a row mean the coordinator's clock jumped.
        public var jumpCount: Int = 3
        public init() {}
    }

    public let configuration: Configuration
    /// The drift's bound is this many of its standard errors. Calibrated by simulation: the
    /// offset's bound covers the true error at least 95 % of the time (ClockEstimatorTests).
    static let boundFactor = 3.0
    /// Follower → coordinator (t2 − t1), coordinator → follower (t3 − t4), and the stream
    /// (send time − arrival).
    private var toward: DelayEnvelope
    private var back: DelayEnvelope
    private var stream: DelayEnvelope
    /// Readings are kept relative to this offset (nanoseconds), for precision in the fit.
    private var base: Int64 = 0
    private var outliers: [ClockSample] = []
    /// The newest exchange's local time.
    private var lastExchange: LocalTime?
    /// The local time of the first exchange since the estimator (re)started: the readings of
    /// its first `lockingSpan` (the opening burst) do not count for the drift.
    private var lockStart: Int64?
    /// The drift known before (a coordinator restart, or this follower's own, remembered) and
    /// a bound on its error (per unit), used until the new readings span enough time.
    private var priorDrift: (drift: Double, error: Double)?
    /// The estimate this follower had before it restarted, until the new readings are as sharp.
    public private(set) var remembered: ClockEstimate?
    /// Whether a remembered estimate was found wrong by the new readings, and forgotten.
    public private(set) var rememberedRejected = false
    /// Readings changed since the last fit, which was at this local time.
    private var dirty = false
    private var lastFit: Int64 = .min
    public private(set) var estimate: ClockEstimate?
    /// Times the coordinator's clock jumped (it restarted) and the estimator started again.
    public private(set) var resets = 0
    /// Stream readings offered, and ignored as impossible (a clock that jumped).
    public private(set) var streamReadings = 0
    public private(set) var rejectedStreamReadings = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        toward = DelayEnvelope(side: .above, bucket: configuration.bucket)
        back = DelayEnvelope(side: .below, bucket: configuration.bucket)
        stream = DelayEnvelope(side: .below, bucket: configuration.bucket)
    }

    /// The local time of the first exchange the estimate is made of (nil before one).
    public var lockedSince: LocalTime? { lockStart.map { LocalTime(nanoseconds: $0) } }

    /// Whether recent exchanges disagree with the estimate (the coordinator may have restarted).
    public var isSuspect: Bool { !outliers.isEmpty }

    /// Adds a time exchange.
    public mutating func add(_ sample: ClockSample) {
        guard sample.roundTrip >= 0, sample.t4 >= sample.t1 else { return }
        if let estimate, toward.count >= configuration.jumpCount {
            let predicted = estimate.offset(at: sample.localMidpoint)
            if abs(sample.offset - predicted) > configuration.jumpThreshold + sample.roundTrip {
                outliers.append(sample)
                if outliers.count >= configuration.jumpCount { restart() }
                return
            }
        }
        outliers = []
        take(sample)
    }

    /// Adds an audio packet's trip: the coordinator stamped it `sent`, and it arrived here at
    /// `arrived` (the kernel's stamp). Readings that would mean a negative delay (beyond what
    /// the estimate's own error allows: the coordinator's clock jumped, or the packet lies)
    /// or an absurd one are ignored.
    public mutating func addStreamReading(sent: CoordinatorTime, arrived: LocalTime) {
        streamReadings += 1
        guard let estimate else { return }
        let y = sent.nanoseconds - arrived.nanoseconds
        let line = estimate.offset(at: arrived)
        guard y - line <= 2 * estimate.uncertainty(at: arrived) + 20_000, line - y < 1_000_000_000 else {
            rejectedStreamReadings += 1
            return
        }
        if stream.add(.init(x: arrived.nanoseconds, y: y - base), drift: estimate.drift * 1e9) { dirty = true }
        refitIfDue(newest: arrived)
    }

    public mutating func reset() {
        toward.removeAll()
        back.removeAll()
        stream.removeAll()
        outliers = []
        estimate = nil
        lastExchange = nil
        lockStart = nil
        dirty = false
        lastFit = .min
    }

    /// Resumes from what this follower knew before it restarted: `estimate`, from a process
    /// that read the same local clock as this one. It counts from the next exchange on, and
    /// only while the new readings agree with it.
    /// An estimate whose figures no real lock has (a drift beyond `maximumDrift`, a negative
    /// bound) is ignored: it comes from a file, which may be damaged.
    public mutating func resume(from estimate: ClockEstimate) {
        guard Self.isPlausible(estimate, maximumDrift: configuration.maximumDrift) else { return }
        remembered = estimate
        rememberedRejected = false
        priorDrift = (estimate.drift, min(configuration.priorDriftError, max(estimate.driftUncertainty, configuration.wander)))
    }

    /// Whether `estimate`'s figures are those a lock can have.
    public static func isPlausible(_ estimate: ClockEstimate, maximumDrift: Double = Configuration().maximumDrift) -> Bool {
        abs(estimate.drift) <= maximumDrift && estimate.uncertainty >= 0 && estimate.minimumRoundTrip >= 0
            && estimate.driftUncertainty >= 0 && estimate.driftUncertainty <= maximumDrift
    }

    /// The remembered estimate disagrees with the readings: another clock. Forget it.
    private mutating func forgetRemembered() {
        remembered = nil
        rememberedRejected = true
        priorDrift = nil
    }

    /// The coordinator's clock jumped: start again from the outliers, keeping the drift.
    private mutating func restart() {
        let kept = outliers
        priorDrift = estimate.map { ($0.drift, configuration.restartDriftError) } ?? priorDrift
        remembered = nil
        reset()
        resets += 1
        for s in kept { take(s) }
    }

    private mutating func take(_ sample: ClockSample) {
        if estimate == nil, toward.isEmpty {
            base = sample.offset
            lockStart = sample.t1.nanoseconds
        }
        let drift = (estimate?.drift ?? 0) * 1e9
        var changed = toward.add(.init(x: sample.t1.nanoseconds, y: sample.t2.nanoseconds - sample.t1.nanoseconds - base), drift: drift)
        changed = back.add(.init(x: sample.t4.nanoseconds, y: sample.t3.nanoseconds - sample.t4.nanoseconds - base), drift: drift) || changed
        lastExchange = sample.t4
        dirty = dirty || changed
        estimate?.lastExchange = sample.t4
        refitIfDue(newest: sample.t4)
    }

    private mutating func refitIfDue(newest: LocalTime) {
        // While locking (the first burst of exchanges) every reading may move the estimate by
        // much, and the fits are small: each is fitted at once, not a tenth of a second later.
        let locking = toward.points.first.map { newest.nanoseconds - $0.x < configuration.lockingSpan } ?? true
        // How long the estimate may be carried on before it drifts a microsecond from a fit's.
        let carried = 1_000 / max(estimate?.driftUncertainty ?? 1, 1e-12)
        let interval = carried > Double(configuration.settledRefitInterval)
            ? Int64(min(carried, Double(configuration.longestRefitInterval))) : configuration.refitInterval
        guard dirty, estimate == nil || locking || newest.nanoseconds - lastFit >= interval else { return }
        dirty = false
        lastFit = newest.nanoseconds
        refit(newest: newest)
    }

    /// A bound on a fit's slope error (ns per s): `boundFactor` standard errors of its least
    /// squares, or before there is enough history for them, its floors' errors across the
    /// span (the program's slope).
    static func slopeBound(_ fit: EnvelopeFit, span: Int64) -> Double {
        if let error = fit.slopeError { return boundFactor * error }
        let roundTrip = fit.intercepts.count >= 2 ? fit.intercepts[0] - fit.intercepts[1] : 0
        let gaps = fit.gaps.prefix(2).map { $0 ?? roundTrip / 2 }
        let floors = gaps.reduce(0, +) / Double(gaps.count)
        return 4 * max(1, floors) / (Double(span) / 1e9)
    }

    private mutating func refit(newest: LocalTime) {
        let horizon = newest.nanoseconds - configuration.window
        toward.expire(before: horizon)
        back.expire(before: horizon)
        stream.expire(before: horizon)
        guard let first = toward.points.first, !back.isEmpty else { estimate = nil; return }
        let reference = newest.nanoseconds
        let span = reference - first.x
        // What is known of the drift before these readings: the drift the estimator had before
        // the coordinator restarted (the same crystals, or nearly), or any crystal's.
        let prior = (slope: (priorDrift?.drift ?? 0) * 1e9, error: (priorDrift?.error ?? configuration.priorDriftError) * 1e9)
        // The opening burst (a reading a millisecond) crowds the first buckets far more
        // densely than any later ones, so their quickest readings lie nearer the floors than
        // any later bucket's. The levels may use them (both ways alike), but the drift's line
        // would pivot on them (in a bench run a follower's first fit read −54 ppm against a
        // truth of 0, and its offset jumped by 100 µs): the drift is fitted without them.
        var towardForDrift = toward, backForDrift = back
        if let start = lockStart, span >= configuration.minimumDriftSpan {
            towardForDrift.expire(before: start + configuration.lockingSpan)
            backForDrift.expire(before: start + configuration.lockingSpan)
        }
        let fitsDrift = span >= configuration.minimumDriftSpan && towardForDrift.count >= 4 && !backForDrift.isEmpty
        let maximumSlope = configuration.maximumDrift * 1e9
        // The drift: the exchanges' fit, the stream's, and the prior, each counted by its
        // error (as a standard error here; bounds are `boundFactor` of them).
        var slope = prior.slope
        var driftError = prior.error  // ns per s, a bound
        if fitsDrift, let own = EnvelopeFit([towardForDrift, backForDrift], reference: reference, maximumSlope: maximumSlope) {
            var estimates = [(slope: own.slope, sigma: Self.slopeBound(own, span: span) / Self.boundFactor)]
            if let firstSent = stream.points.first, reference - firstSent.x >= configuration.minimumDriftSpan, stream.count >= 8,
               let streamFit = EnvelopeFit([stream], reference: reference, maximumSlope: maximumSlope),
               streamFit.gaps[0] != nil {
                // The stream's packets take their own way through both hosts, and its floor
                // may move where the exchanges' does not (its sender's pace, larger packets):
                // its readings' scatter cannot show that. How far the two slopes part beyond
                // both their errors is counted as the stream's own error, so a stream that
                // agrees sharpens the drift and one that does not leaves it to the exchanges.
                let sigma = Self.slopeBound(streamFit, span: reference - firstSent.x) / Self.boundFactor
                let apart = streamFit.slope - own.slope
                let excess = max(0, apart * apart - estimates[0].sigma * estimates[0].sigma - sigma * sigma)
                estimates.append((streamFit.slope, (sigma * sigma + excess).squareRoot()))
            }
            estimates.append((prior.slope, prior.error / Self.boundFactor))
            let weights = estimates.map { 1 / max($0.sigma * $0.sigma, 1e-9) }
            let total = weights.reduce(0, +)
            slope = zip(estimates, weights).reduce(0) { $0 + $1.0.slope * $1.1 } / total
            slope = min(max(slope, -maximumSlope), maximumSlope)
            driftError = min(maximumSlope, Self.boundFactor / total.squareRoot())
        }
        // The levels: every path's floor on that drift.
        guard let fit = EnvelopeFit([toward, back, stream], reference: reference, maximumSlope: maximumSlope, fixedSlope: slope) else {
            estimate = nil
            return
        }
        let up = fit.intercepts[0], down = fit.intercepts[1]
        let roundTrip = up - down
        // Each way: how far the floor may lie beyond the quickest reading (without enough
        // readings to tell, half the round trip: the offset can be no further off than that),
        // plus the drift's error carried from that reading to the present.
        let uncertainty = [0, 1].reduce(0.0) { sum, i in
            sum + ((fit.gaps[i] ?? max(0, roundTrip) / 2) + driftError * abs(fit.touching[i])) / 2
        }
        var offset = (up + down) / 2  // from `base`
        var bound = uncertainty
        if let remembered {
            // Both bounds hold the truth: it lies where they overlap. No overlap: the
            // remembered line belongs to another clock. Once the new readings' bound lies
            // within the remembered one, they know better, and it is no longer needed.
            let then = LocalTime(nanoseconds: reference)
            let kept = (offset: Double(remembered.offset(at: then) - base), bound: Double(remembered.uncertainty(at: then)))
            let low = max(offset - bound, kept.offset - kept.bound), high = min(offset + bound, kept.offset + kept.bound)
            if low > high {
                forgetRemembered()
            } else if low > offset - bound || high < offset + bound {
                offset = (low + high) / 2
                bound = (high - low) / 2
            } else {
                self.remembered = nil
            }
        }
        estimate = ClockEstimate(
            offset: base + Int64(offset.rounded()), reference: LocalTime(nanoseconds: reference),
            drift: fit.slope / 1e9, uncertainty: Int64(bound.rounded(.up)),
            minimumRoundTrip: Int64(roundTrip.rounded()), sampleCount: toward.count,
            driftUncertainty: driftError / 1e9 + configuration.wander, lastExchange: lastExchange ?? newest)
    }
}
