/// When the sender sends the stream's next packet, as a machine. Nothing presented at or
/// after the running epoch's cut goes at all. Live audio (a live input, whose frames
/// `LiveTimeline` places; a radio station) goes `latency` ahead of its presentation time:
/// it cannot go earlier than it comes. Stored audio (files, local or remote) goes up to
/// `lookahead` ahead, so that a room rides out a network that holds its packets for a few
/// hundred milliseconds (Wi-Fi power save, retries, scans): after a start the epoch's first
/// `latency` goes at once and the rest of the lookahead follows `burstSpeed` times faster
/// than real time, then the stream goes at real time, `lookahead` ahead. Commands still act
/// `cutLead` after they are given: the rooms are told where an epoch ends, and drop what
/// they hold past it. The same for every source and for the tests' in-memory sender.
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

    /// Presentation time minus send time for live audio (ns): the house's end-to-end latency
    /// (a live zone's moves with its network: `setLatency`).
    public private(set) var latency: Int64
    /// Presentation time minus send time for stored audio, once the burst after a start is
    /// over (ns; never less than `latency`).
    public let lookahead: Int64
    /// How many times faster than real time the lookahead fills after a start: a burst the
    /// rooms' links and sockets take without loss (2 s of audio in about 240 ms).
    public let burstSpeed: Int64
    /// Whether an epoch is streaming.
    public private(set) var streaming = false
    /// The running epoch ends here, if it is to end.
    public private(set) var cut: CoordinatorTime?
    /// When the running epoch began to stream (coordinator ns): its burst is counted from there.
    public private(set) var startedAt: Int64?

    public init(latency: Int64, lookahead: Int64? = nil, burstSpeed: Int64 = 8) {
        self.latency = latency
        self.lookahead = max(latency, lookahead ?? latency)
        self.burstSpeed = max(1, burstSpeed)
    }

    /// Live audio goes `latency` ahead of its presentation time from now on (ns; stored audio
    /// keeps its lookahead, or goes as far ahead as live audio if that is more).
    public mutating func setLatency(_ latency: Int64) {
        self.latency = latency
    }

    /// A new epoch starts streaming at `now` (with no end yet).
    public mutating func start(now: Int64) {
        streaming = true
        cut = nil
        startedAt = now
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

    /// When the packet presented at `presentation` is due to go (coordinator ns): `stored`
    /// says whether it is stored audio, which may go ahead.
    public func due(presentation: CoordinatorTime, stored: Bool) -> Int64 {
        let live = presentation.nanoseconds - latency
        guard stored, lookahead > latency, let from = startedAt else { return live }
        // After a start: what is heard within `latency` of the epoch's first packets goes at
        // once, and each further second of audio `1 / burstSpeed` s later.
        let filling = from + (live - from) / burstSpeed
        return min(live, max(presentation.nanoseconds - lookahead, filling))
    }

    /// What to do with the packet presented at `presentation`, at coordinator time `now`;
    /// `stored`: it is stored audio, which may go up to the lookahead ahead.
    public mutating func decide(presentation: CoordinatorTime, now: Int64, stored: Bool = false) -> Decision {
        if isPastCut(presentation) {
            streaming = false
            return .over
        }
        let due = due(presentation: presentation, stored: stored)
        return now < due ? .wait(until: due) : .send
    }
}
