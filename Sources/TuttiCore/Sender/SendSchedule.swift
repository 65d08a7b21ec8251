/// When the sender sends the stream's next packet, as a machine: each packet goes
/// `latency` ahead of its presentation time, and nothing presented at or after the running
/// epoch's cut goes at all. The same for every source: a file, a live input (whose frames
/// `LiveTimeline` places), or the tests' in-memory sender.
public struct SendSchedule: Sendable, Equatable {
    public enum Decision: Equatable, Sendable {
        /// Send it now.
        case send
        /// Not yet: it is due at this coordinator time (ns).
        case wait(until: Int64)
        /// It lies at or past the epoch's cut: the epoch is over, and the sender rests until
        /// a new one starts.
        case over
    }

    /// Presentation time minus send time (ns): the house's end-to-end latency.
    public let latency: Int64
    /// Whether an epoch is streaming.
    public private(set) var streaming = false
    /// The running epoch ends here, if it is to end.
    public private(set) var cut: CoordinatorTime?

    public init(latency: Int64) {
        self.latency = latency
    }

    /// A new epoch starts streaming (with no end yet).
    public mutating func start() {
        streaming = true
        cut = nil
    }

    /// The running epoch ends at `time` (the earliest of its cuts counts).
    public mutating func cut(at time: CoordinatorTime) {
        cut = min(cut ?? time, time)
    }

    /// Nothing more to send in this epoch.
    public mutating func rest() {
        streaming = false
    }

    /// Whether a frame heard at `time` is past the running epoch's cut.
    public func isPastCut(_ time: CoordinatorTime) -> Bool {
        cut.map { time >= $0 } ?? false
    }

    /// What to do with the packet presented at `presentation`, at coordinator time `now`.
    public mutating func decide(presentation: CoordinatorTime, now: Int64) -> Decision {
        if isPastCut(presentation) {
            streaming = false
            return .over
        }
        let due = presentation.nanoseconds - latency
        return now < due ? .wait(until: due) : .send
    }
}
