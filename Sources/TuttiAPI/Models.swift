import TuttiCore

/// The JSON the control API speaks (docs/api.md). Times in seconds unless a name says
/// otherwise; volumes in percent (0 to 100).

/// The "now playing" card.
public struct NowPlaying: Codable, Equatable, Sendable {
    public var state: PlaybackState
    public var itemID: Int?
    public var path: String?
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var trackNumber: Int?
    public var trackCount: Int?
    public var discNumber: Int?
    public var discCount: Int?
    public var genre: String?
    public var year: String?
    /// Seconds, when known.
    public var duration: Double?
    /// What the rooms are hearing now, in seconds into the track.
    public var elapsed: Double
    /// 1 while playing, 0 otherwise: elapsed advances at this rate from `at`.
    public var rate: Double
    public var queueIndex: Int?
    public var queueCount: Int
    /// A URL (on this server) for the track's artwork, when it has one.
    public var artworkURL: String?
    public var loopMode: LoopMode
    /// The group's volume (the rooms' average) and whether every room is muted.
    public var volume: Double
    public var muted: Bool
    /// like, dislike, or nil.
    public var rating: FeedbackKind?
    /// Why the last track failed, if one just did.
    public var failure: String?
    /// The current lyric line, when the track has lyrics.
    public var lyricLine: String?
    /// The coordinator time (ns) these figures are for, and at which media position 0 of
    /// the track is heard while playing or loading: lyric screens time themselves by it.
    public var at: Int64
    public var trackOrigin: Int64?
    public var epoch: UInt32

    public init(state: PlaybackState, elapsed: Double, rate: Double, queueCount: Int, loopMode: LoopMode,
                volume: Double, muted: Bool, at: Int64, epoch: UInt32) {
        self.state = state
        self.elapsed = elapsed
        self.rate = rate
        self.queueCount = queueCount
        self.loopMode = loopMode
        self.volume = volume
        self.muted = muted
        self.at = at
        self.epoch = epoch
    }
}

/// One queue entry.
public struct QueueEntry: Codable, Equatable, Sendable {
    public var index: Int
    public var id: Int
    public var path: String
    public var title: String?
    public var artist: String?
    public var album: String?
    public var duration: Double?
    public var current: Bool

    public init(index: Int, id: Int, path: String, title: String?, artist: String?, album: String?, duration: Double?, current: Bool) {
        self.index = index
        self.id = id
        self.path = path
        self.title = title
        self.artist = artist
        self.album = album
        self.duration = duration
        self.current = current
    }
}

public struct QueueView: Codable, Equatable, Sendable {
    public var items: [QueueEntry]
    public var currentIndex: Int?
    public var loopMode: LoopMode
    public init(items: [QueueEntry], currentIndex: Int?, loopMode: LoopMode) {
        self.items = items
        self.currentIndex = currentIndex
        self.loopMode = loopMode
    }
}

/// A room, its settings and how it plays.
public struct RoomView: Codable, Equatable, Sendable {
    public var key: String
    public var name: String
    public var connected: Bool
    public var volume: Double
    public var muted: Bool
    public var outputDelayMs: Double
    /// How it reported itself last (nil if it never has since the coordinator started).
    public var report: RoomReport?
    public var lastSeenSecondsAgo: Double?

    public init(key: String, name: String, connected: Bool, volume: Double, muted: Bool, outputDelayMs: Double,
                report: RoomReport?, lastSeenSecondsAgo: Double?) {
        self.key = key
        self.name = name
        self.connected = connected
        self.volume = volume
        self.muted = muted
        self.outputDelayMs = outputDelayMs
        self.report = report
        self.lastSeenSecondsAgo = lastSeenSecondsAgo
    }
}

/// A track's lyrics (nil when it has none), with the now-playing card that times them.
public struct TrackLyrics: Codable, Equatable, Sendable {
    public var itemID: Int
    public var lyrics: Lyrics?
    public var nowPlaying: NowPlaying
    public init(itemID: Int, lyrics: Lyrics?, nowPlaying: NowPlaying) {
        self.itemID = itemID
        self.lyrics = lyrics
        self.nowPlaying = nowPlaying
    }
}

/// The clock exchange on the event stream, for screens that keep their own clock locked to
/// the coordinator's: a screen sends `{"type": "time", "id": n, "t1": its time}`; the answer
/// echoes both and adds `t2` and `t3`, the coordinator times (ns) it arrived and left.
public struct TimeExchange: Codable, Equatable, Sendable {
    public var type = "time"
    public var id: Double?
    public var t1: Double
    public var t2: Int64?
    public var t3: Int64?
}

/// Everything at once: what `tutti ctl status` shows.
public struct Status: Codable, Equatable, Sendable {
    public var nowPlaying: NowPlaying
    public var rooms: [RoomView]
    public var version: String
    public init(nowPlaying: NowPlaying, rooms: [RoomView], version: String) {
        self.nowPlaying = nowPlaying
        self.rooms = rooms
        self.version = version
    }
}

/// A change, pushed on the event stream as it happens.
public struct Event: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// The first message on a connection: everything as it is.
        case hello
        /// Any change to the now-playing card.
        case nowPlaying = "now-playing"
        /// loading, playing, paused, stopped; or failed, with a reason.
        case state
        case trackChanged = "track-changed"
        case trackEnded = "track-ended"
        case queue
        case volume
        case roomJoined = "room-joined"
        case roomLeft = "room-left"
        case room
        case feedback
    }

    public var type: Kind
    /// Coordinator time (ns) of the change.
    public var at: Int64
    public var state: PlaybackState?
    public var previousState: PlaybackState?
    public var reason: String?
    public var nowPlaying: NowPlaying?
    public var queue: QueueView?
    public var rooms: [RoomView]?
    public var room: RoomView?
    public var feedback: FeedbackEntry?
    public var itemID: Int?
    /// With `hello` and `track-changed`: the lyrics of the track now heard (absent when none).
    public var lyrics: Lyrics?

    public init(type: Kind, at: Int64) {
        self.type = type
        self.at = at
    }
}

// MARK: - Requests

public struct SeekRequest: Codable, Sendable {
    public var position: Double
    public init(position: Double) { self.position = position }
}
public struct SkipRequest: Codable, Sendable {
    public var seconds: Double
    public init(seconds: Double) { self.seconds = seconds }
}
public struct PlayIndexRequest: Codable, Sendable {
    public var index: Int
    public init(index: Int) { self.index = index }
}
public struct AddRequest: Codable, Sendable {
    public var paths: [String]
    public var placement: PlayQueue.Placement?
    public init(paths: [String], placement: PlayQueue.Placement?) {
        self.paths = paths
        self.placement = placement
    }
}
public struct MoveRequest: Codable, Sendable {
    public var index: Int
    public init(index: Int) { self.index = index }
}
public struct LoopRequest: Codable, Sendable {
    public var mode: LoopMode
    public init(mode: LoopMode) { self.mode = mode }
}
public struct VolumeRequest: Codable, Sendable {
    public var volume: Double?
    public var muted: Bool?
    public init(volume: Double?, muted: Bool?) {
        self.volume = volume
        self.muted = muted
    }
}
/// A partial update of a room: whatever is given changes.
public struct RoomUpdate: Codable, Sendable {
    public var name: String?
    public var volume: Double?
    public var muted: Bool?
    public var outputDelayMs: Double?
    public init(name: String?, volume: Double?, muted: Bool?, outputDelayMs: Double?) {
        self.name = name
        self.volume = volume
        self.muted = muted
        self.outputDelayMs = outputDelayMs
    }
}
public struct FeedbackRequest: Codable, Sendable {
    public var kind: FeedbackKind
    public init(kind: FeedbackKind) { self.kind = kind }
}
