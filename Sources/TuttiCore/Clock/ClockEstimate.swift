/// A follower's current belief about the shared clock: an offset at a reference local
/// time and a drift, with their uncertainty. Maps local time to coordinator time and back.
public struct ClockEstimate: Equatable, Sendable, CustomStringConvertible {
    /// Coordinator time minus local time, at `reference`.
    public var offset: Int64
    /// The local time `offset` applies to.
    public var reference: LocalTime
    /// How much faster the coordinator's clock runs than the local one (0.0001 = 100 ppm).
    public var drift: Double
    /// A bound (about 95 %) on the offset's error at `reference`, nanoseconds, assuming the
    /// path's smallest delays are the same both ways (nothing can see an asymmetry).
    public var uncertainty: Int64
    /// The smallest delay towards the coordinator plus the smallest delay back, in
    /// nanoseconds: half of it bounds the offset's error if the path were wholly one-sided.
    public var minimumRoundTrip: Int64
    /// How many readings (buckets) towards the coordinator the estimate rests on.
    public var sampleCount: Int
    /// A bound on the drift's error (per unit), including how far a crystal may wander.
    public var driftUncertainty: Double
    /// When the last exchange came: the bound grows with the time since (holdover).
    public var lastExchange: LocalTime

    public init(offset: Int64, reference: LocalTime, drift: Double, uncertainty: Int64,
                minimumRoundTrip: Int64, sampleCount: Int, driftUncertainty: Double = 0, lastExchange: LocalTime? = nil) {
        self.offset = offset
        self.reference = reference
        self.drift = drift
        self.uncertainty = uncertainty
        self.minimumRoundTrip = minimumRoundTrip
        self.sampleCount = sampleCount
        self.driftUncertainty = driftUncertainty
        self.lastExchange = lastExchange ?? reference
    }

    /// The bound on the offset's error at `local`: it grows with the drift's uncertainty
    /// away from the reference, and beyond the last exchange (holdover through an outage).
    public func uncertainty(at local: LocalTime) -> Int64 {
        let away = Double(abs(local - reference)) + Double(max(0, local - lastExchange))
        return uncertainty + Int64((away * driftUncertainty).rounded(.up))
    }

    public func offset(at local: LocalTime) -> Int64 {
        offset + Int64((Double(local - reference) * drift).rounded())
    }

    public func coordinatorTime(at local: LocalTime) -> CoordinatorTime {
        CoordinatorTime(nanoseconds: local.nanoseconds + offset(at: local))
    }

    public func localTime(at coordinator: CoordinatorTime) -> LocalTime {
        // Solve c = l + offset + drift * (l - ref) for l.
        let c = Double(coordinator.nanoseconds - offset) + drift * Double(reference.nanoseconds)
        return LocalTime(nanoseconds: Int64((c / (1 + drift)).rounded()))
    }

    public var description: String {
        "offset \((Double(offset) / 1e6).fixed(3)) ms, drift \((drift * 1e6).fixed(2, sign: true)) ppm "
            + "(±\((driftUncertainty * 1e6).fixed(2))), ±\((Double(uncertainty) / 1e3).fixed(1)) µs "
            + "(rtt \((Double(minimumRoundTrip) / 1e3).fixed(1)) µs, n=\(sampleCount))"
    }
}
