/// Everything the coordinator saves, so that a restart (or a crash) loses nothing: the
/// queue and loop mode, where the current track was, the rooms' settings, the feedback,
/// the ReplayGain setting.
public struct HouseState: Codable, Equatable, Sendable {
    public static let currentVersion = 1
    public var version = HouseState.currentVersion
    public var queue: PlayQueue
    /// The media position the house was at (frames); it resumes there, paused.
    public var position: MediaFrames
    public var epoch: UInt32
    public var rooms: [String: RoomSettings]
    public var feedback: FeedbackLog
    /// How the house evens out loudness, once it was set (absent in states saved before).
    public var replayGain: ReplayGain?
    /// The zones besides the default one (whose queue is `queue`, as before zones), with
    /// their queues; absent in states saved before zones.
    public var zones: [SavedZone]?

    public init(queue: PlayQueue = PlayQueue(), position: MediaFrames = 0, epoch: UInt32 = 0,
                rooms: [String: RoomSettings] = [:], feedback: FeedbackLog = FeedbackLog(), replayGain: ReplayGain? = nil) {
        self.queue = queue
        self.position = position
        self.epoch = epoch
        self.rooms = rooms
        self.feedback = feedback
        self.replayGain = replayGain
    }
}

/// A zone as saved: its name and id, its queue, and where it was.
public struct SavedZone: Codable, Equatable, Sendable {
    public var info: ZoneInfo
    public var queue: PlayQueue
    public var position: MediaFrames
    public var epoch: UInt32

    public init(info: ZoneInfo, queue: PlayQueue, position: MediaFrames, epoch: UInt32) {
        self.info = info
        self.queue = queue
        self.position = position
        self.epoch = epoch
    }

    public var id: String { info.id }
}
