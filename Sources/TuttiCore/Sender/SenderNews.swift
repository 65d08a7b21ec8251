/// What the sender tells the house, from its own thread (it never waits for the house,
/// except for its answer to a realignment).
public enum PlayerNews: Sendable, Equatable {
    /// The decoder of `itemID` ended; its last frame is heard just before `at`.
    case ended(itemID: Int, at: CoordinatorTime)
    /// `itemID` could not be opened or decoded at all.
    case failed(itemID: Int, reason: String)
    /// `itemID` opened; its length in frames, if the file says.
    case opened(itemID: Int, length: MediaFrames?)
    /// `itemID` parted from the timeline (a live input's writer paused or its clock runs
    /// apart; a remote source ran dry): a new epoch should go on with it, heard from `at`,
    /// at media position `position` (nil: the position runs on). The house answers, even
    /// with no actions.
    case realigned(itemID: Int, at: CoordinatorTime, position: MediaFrames?)
    /// How the remote source of `itemID` is doing changed (its phase, title or buffer).
    case stream(itemID: Int, StreamStatus)
    /// The paced source of `itemID` ran dry: nothing of epoch `epoch` is heard from `at` on
    /// (the rooms are told, and fade out there together instead of waiting for packets).
    case ranDry(itemID: Int, epoch: UInt32, at: CoordinatorTime)
    /// A live input is heard this long after it arrives now (ns): the latency in force, on
    /// its way to what the house set (`SenderMachine.setLatency`), or there.
    case latency(Int64)
}
