/// How early the stream's packets came: the least lead (presentation time minus arrival,
/// coordinator ns) a packet had over the last few seconds. A packet that came late has a
/// negative lead. Its room reports it, less how far ahead it writes (its headroom), and the
/// house makes a live zone's latency cover the worst its rooms saw (`LatencyTuner`).
/// Kept per span of `span` ns: the least is over the running span and the one before, so
/// that it covers at least one whole span whenever it is read.
public struct LeadWatch: Sendable, Equatable {
    public static let span: Int64 = 2_000_000_000
    private var start: Int64?
    private var least: Int64 = 0
    private var previous: Int64?

    public init() {}

    /// A packet presented at `presentation` came at `now` (both coordinator ns).
    public mutating func arrived(presentation: Int64, now: Int64) {
        observe(lead: presentation - now, at: now)
    }

    /// A lead of `lead` (ns), seen at `now`.
    public mutating func observe(lead: Int64, at now: Int64) {
        roll(now: now)
        if start == nil {
            start = now
            least = lead
        } else {
            least = min(least, lead)
        }
    }

    /// The least lead over the last one to two spans as of `now` (nil: no packet came in them).
    public func least(now: Int64) -> Int64? {
        guard let start else { return nil }
        if now - start >= 2 * Self.span { return nil }
        if now - start >= Self.span { return least }
        return previous.map { min($0, least) } ?? least
    }

    private mutating func roll(now: Int64) {
        guard let start, now - start >= Self.span else { return }
        previous = now - start < 2 * Self.span ? least : nil
        self.start = nil
    }
}
