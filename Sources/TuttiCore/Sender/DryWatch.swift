/// Whether a paced source (a remote one, read as fast as the timeline needs) that gave
/// nothing has lost its place on the timeline, as a machine. Pure: times come in.
///
/// Once the next packet is due to leave (`next` − latency) and the source still has nothing,
/// the rooms are to be told that the epoch's audio ends at `next`: they fade out there
/// together, rather than counting packets lost and asking for them. From then on, the source's
/// next frame goes on in a new epoch, `latency` from when it comes. A source that gave
/// nothing only briefly, and still has time to reach the rooms, goes on as it was.
public struct DryWatch: Sendable, Equatable {
    /// Presentation time minus send time (ns): the house's latency.
    public let latency: Int64
    /// The source gave nothing at its last read.
    public private(set) var stalled = false
    /// The rooms were told where the epoch's audio ends.
    public private(set) var announced = false

    public init(latency: Int64) {
        self.latency = latency
    }

    /// A new epoch: nothing is dry.
    public mutating func reset() {
        stalled = false
        announced = false
    }

    /// The source gave nothing at `now`; its next frame is presented at `next`. Returns
    /// where the epoch's audio ends when the rooms should be told so now (once an epoch).
    public mutating func ranDry(now: CoordinatorTime, next: CoordinatorTime) -> CoordinatorTime? {
        stalled = true
        guard !announced, now.nanoseconds + latency >= next.nanoseconds else { return nil }
        announced = true
        return next
    }

    /// A live input's writer paused; its next frame was to be presented at `next`. Returns
    /// where the epoch's audio ends (once an epoch).
    public mutating func writerPaused(next: CoordinatorTime) -> CoordinatorTime? {
        stalled = true
        guard !announced else { return nil }
        announced = true
        return next
    }

    /// The source has a frame again at `now`, presented at `next` on the current timeline:
    /// true when that frame can no longer reach the rooms in time (or they were told the
    /// epoch ended), so the timeline goes on from it anew.
    public mutating func resumed(now: CoordinatorTime, next: CoordinatorTime) -> Bool {
        guard stalled else { return false }
        stalled = false
        return announced || now.nanoseconds + latency / 2 > next.nanoseconds
    }
}
