/// Which of a remote source's statuses to tell the house: each change of what a listener
/// sees (its phase, title, station, whether it is live or can seek, its tags) at once, and
/// its buffer (rounded to what a bar shows) at most every `interval`. Pure: times come in.
public struct StatusThrottle: Sendable, Equatable {
    public var interval: Int64
    private var last: StreamStatus?
    private var lastAt: Int64 = 0

    public init(interval: Int64 = 500_000_000) {
        self.interval = interval
    }

    /// A new source: its first status is told at once.
    public mutating func reset() {
        last = nil
    }

    /// The status to tell at `now` (ns), rounded, or nil when there is nothing new to tell.
    public mutating func filter(_ status: StreamStatus, now: Int64) -> StreamStatus? {
        let rounded = status.rounded
        guard rounded != last else { return nil }
        let urgent = last.map {
            $0.phase != rounded.phase || $0.streamTitle != rounded.streamTitle || $0.station != rounded.station
                || $0.isLive != rounded.isLive || $0.canSeek != rounded.canSeek || $0.tags != rounded.tags || $0.remote != rounded.remote
        } ?? true
        guard urgent || now - lastAt >= interval else { return nil }
        last = rounded
        lastAt = now
        return rounded
    }
}
