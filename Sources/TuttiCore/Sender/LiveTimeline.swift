/// Where a live input's frames go on the timeline. A live input (a pipe another player
/// writes into) makes audio in real time by itself, so its frames are not paced: each is
/// heard `latency` after it arrived. The sender asks before it encodes each frame, taking
/// the frames still buffered to have arrived in order, the newest just now.
///
/// Pure: every time comes in as an argument.
public struct LiveTimeline: Sendable, Equatable {
    public enum Decision: Equatable, Sendable {
        /// Encode the frame and send it now: it is heard when the timeline says.
        case send
        /// Drop the frame: it waited too long in the pipe to be heard in time, or it would
        /// be heard before the epoch starts.
        case skip
        /// The epoch's first frame: the timeline starts with it, heard at `at`.
        case anchor(at: CoordinatorTime)
        /// The input's arrivals parted from the timeline by more than the tolerance (its
        /// writer paused, or its clock runs apart from ours): a new epoch starts with this
        /// frame, heard at `at`.
        case realign(at: CoordinatorTime)
    }

    /// From a frame's arrival to when it is heard (nanoseconds).
    public var latency: Int64
    /// How far the timeline may part from the arrivals before it is realigned (nanoseconds).
    public var tolerance: Int64

    public init(latency: Int64, tolerance: Int64 = 20_000_000) {
        self.latency = latency
        self.tolerance = tolerance
    }

    /// When a frame that arrived `bufferedFrames` frames before now is heard, if it keeps
    /// its place in the input's own time.
    public func heard(now: CoordinatorTime, bufferedFrames: Int64) -> CoordinatorTime {
        now - AudioFormat.nanoseconds(forFrames: bufferedFrames) + latency
    }

    /// What to do with the next frame. `planned` is when the current timeline has it heard
    /// (nil before the epoch's first frame); `start` is the epoch's start (nothing of it is
    /// heard earlier); `bufferedFrames` counts the frames read but not yet sent, this one
    /// included.
    public func decide(planned: CoordinatorTime?, start: CoordinatorTime, now: CoordinatorTime,
                       bufferedFrames: Int64) -> Decision {
        let heard = heard(now: now, bufferedFrames: bufferedFrames)
        // Input that sat in the pipe (written while nobody read it) is too late for its own
        // time: half the latency is the least a room needs to get the packet and decode it.
        if heard < now + latency / 2 || heard < start { return .skip }
        guard let planned else { return .anchor(at: heard) }
        if abs(planned - heard) > tolerance { return .realign(at: heard) }
        return .send
    }
}
