/// What the house is doing.
public enum PlaybackState: String, Codable, Sendable {
    case stopped
    /// A track was started and its first audio is on its way to the rooms.
    case loading
    case playing
    case paused
    /// Playing a remote source whose buffer ran dry (or that is connecting again): the
    /// rooms are quiet until enough is loaded.
    case buffering
    /// Stopped because the queue's tracks could not be played (`failure` says why).
    case failed
}

/// A command from a remote, the terminal or a script.
public enum TransportCommand: Equatable, Sendable {
    case play
    case pause
    case toggle
    case stop
    case next
    /// Restarts the current track when more than `restartThreshold` into it, else goes back.
    case previous
    /// Seek within the current track to a media position (frames).
    case seek(to: MediaFrames)
    /// Jump forward (or back, when negative) by this many frames; past the end is the next track.
    case skip(by: MediaFrames)
    /// Play the queue's item at this index.
    case playItem(index: Int)
}

/// One stretch of the timeline: item `itemID` from media position `position` is heard from
/// coordinator time `at`, in epoch `epoch`. A new epoch starts on every start, seek or skip;
/// tracks that follow each other by themselves stay in one epoch, gaplessly.
public struct TimelineSegment: Equatable, Sendable {
    public var epoch: UInt32
    public var itemID: Int
    public var position: MediaFrames
    public var at: CoordinatorTime

    public init(epoch: UInt32, itemID: Int, position: MediaFrames, at: CoordinatorTime) {
        self.epoch = epoch
        self.itemID = itemID
        self.position = position
        self.at = at
    }

    /// The coordinator time at which media position 0 of the item is (or would be) heard.
    public var trackOrigin: CoordinatorTime { at - position.nanoseconds }
}

/// What the transport tells the streaming shell to do.
public enum TransportAction: Equatable, Sendable {
    /// End epoch `epoch` at `at`: every room falls silent then, and nothing later is sent.
    case cut(epoch: UInt32, at: CoordinatorTime)
    /// Start a new epoch: stream the segment's item from its position, heard from its time.
    case start(TimelineSegment)
    /// Go on in the current epoch with this item from its start, right after the track
    /// that just ended (gapless).
    case continueWith(itemID: Int)
}

/// Why a command was refused; the state is unchanged.
public enum TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    case emptyQueue
    case queue(QueueError)
    case seekOutOfRange(requested: MediaFrames, duration: MediaFrames)
    /// The item is a live input: it plays from now, or not at all.
    case cannotSeek(String)

    public var description: String {
        switch self {
        case .emptyQueue: "the queue is empty: add tracks first"
        case let .queue(e): e.description
        case let .seekOutOfRange(requested, duration):
            "cannot seek to \(Self.clock(requested)): the track is \(Self.clock(duration)) long"
        case let .cannotSeek(reason): "\(reason): it cannot seek"
        }
    }

    static func clock(_ media: MediaFrames) -> String {
        let frames = media.count
        let seconds = max(0, frames) / Int64(AudioFormat.sampleRate)
        let fraction = max(0, frames) % Int64(AudioFormat.sampleRate) * 10 / Int64(AudioFormat.sampleRate)
        return "\(seconds / 60):\(seconds % 60 < 10 ? "0" : "")\(seconds % 60).\(fraction)"
    }
}

/// The transport as seen at one instant: what is heard, and where in it.
public struct TransportSnapshot: Equatable, Sendable {
    public var state: PlaybackState
    public var item: QueueItem?
    /// Media position heard now.
    public var position: MediaFrames
    /// 1 while the position advances, 0 otherwise.
    public var rate: Double
    public var epoch: UInt32
    /// While loading or playing: the coordinator time at which media position 0 of the
    /// item is (or would be) heard. Lyric screens key their timing to it.
    public var trackOrigin: CoordinatorTime?
}
