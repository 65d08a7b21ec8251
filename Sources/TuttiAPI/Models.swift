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
    /// For a remote source (a URL): true for an endless stream (internet radio: no duration,
    /// no seeking), false for a file; nil for anything else.
    public var isLiveStream: Bool?
    /// The station's name (`icy-name`), for internet radio.
    public var station: String?
    /// The station's live title as it sends it (ICY `StreamTitle`); `title` and `artist`
    /// hold its two halves when it reads "Artist - Title".
    public var streamTitle: String?
    /// How much of a remote source is loaded, for a buffering bar.
    public var buffer: BufferView?
    /// How the house evens out loudness.
    public var replayGain: ReplayGain?
    /// The zone this card is of (its id).
    public var zone: String?
    /// How long after it arrives a live input is heard in this zone (ms): the latency in
    /// force, fitted to the rooms' network unless `--latency-ms` fixed it.
    public var latencyMilliseconds: Double?

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

/// A remote source's buffer, as a buffering bar shows it.
public struct BufferView: Codable, Equatable, Sendable {
    /// connecting, buffering, ready, reconnecting, loaded or failed.
    public var phase: StreamStatus.Phase
    /// Seconds of audio loaded ahead of what the rooms hear.
    public var seconds: Double
    /// How much of a file is loaded (0 to 1); nil for a live stream.
    public var loaded: Double?
    /// Where the loaded part ends, in seconds into the track (a file of known length).
    public var loadedUntil: Double?

    public init(phase: StreamStatus.Phase, seconds: Double, loaded: Double?, loadedUntil: Double?) {
        self.phase = phase
        self.seconds = seconds
        self.loaded = loaded
        self.loadedUntil = loadedUntil
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
    /// The id of the zone it plays in.
    public var zone: String?
    /// Holes heard in the room in the last hour (its follower's device ran dry, or it
    /// concealed a packet); nil for a follower that does not count them.
    public var holesLastHour: Int?
    /// Its last calibration (nil: never calibrated).
    public var calibration: RoomCalibration?

    public init(key: String, name: String, connected: Bool, volume: Double, muted: Bool, outputDelayMs: Double,
                report: RoomReport?, lastSeenSecondsAgo: Double?, zone: String? = nil, holesLastHour: Int? = nil,
                calibration: RoomCalibration? = nil) {
        self.calibration = calibration
        self.zone = zone
        self.holesLastHour = holesLastHour
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
    /// The house's name (`--house-name`), as it is announced on the network.
    public var house: String?
    /// The house's zones, the default one first.
    public var zones: [ZoneView]?
    public init(nowPlaying: NowPlaying, rooms: [RoomView], version: String, house: String? = nil, zones: [ZoneView]? = nil) {
        self.zones = zones
        self.nowPlaying = nowPlaying
        self.rooms = rooms
        self.version = version
        self.house = house
    }
}

/// The house's members (`GET /api/v1/members`): the followers and screens, each with a
/// credential of its own (docs/security.md, "Members").
public struct MembersView: Codable, Equatable, Sendable {
    public struct Member: Codable, Equatable, Sendable {
        public var id: Int
        public var name: String
        /// The room it speaks for, once it reported one.
        public var room: String?
        /// When it joined (Unix seconds).
        public var added: Int64
        /// Eight hex digits naming its credential (its own logs show the same).
        public var fingerprint: String
        /// The stream key's generation it said it holds (nil: not said since the coordinator started).
        public var keyGeneration: UInt32?
        public init(id: Int, name: String, room: String?, added: Int64, fingerprint: String, keyGeneration: UInt32?) {
            self.id = id
            self.name = name
            self.room = room
            self.added = added
            self.fingerprint = fingerprint
            self.keyGeneration = keyGeneration
        }
    }
    /// Whether holders of the house key may still become members by enrolling (closed once
    /// a member was revoked: new members pair).
    public var enrolment: Bool
    /// The generation of the stream's key in use.
    public var keyGeneration: UInt32
    public var members: [Member]
    public init(enrolment: Bool, keyGeneration: UInt32, members: [Member]) {
        self.enrolment = enrolment
        self.keyGeneration = keyGeneration
        self.members = members
    }
}

/// `PUT /api/v1/members/enrolment`: opens or closes enrolment by the house key.
public struct EnrolmentUpdate: Codable, Equatable, Sendable {
    public var open: Bool
    public init(open: Bool) { self.open = open }
}

/// A zone: rooms that play one stream together, and what it plays.
public struct ZoneView: Codable, Equatable, Sendable {
    /// Its key in paths (`/api/v1/zones/{id}/...`): never changes.
    public var id: String
    public var name: String
    /// Its rooms' names.
    public var rooms: [String]
    public var nowPlaying: NowPlaying
    /// What its stream carries: `opus`, `pcm` or `flac` (`--codec`, `--zone-codec`); absent
    /// from a coordinator that does not say.
    public var codec: String?
    public init(id: String, name: String, rooms: [String], nowPlaying: NowPlaying, codec: String? = nil) {
        self.id = id
        self.name = name
        self.rooms = rooms
        self.nowPlaying = nowPlaying
        self.codec = codec
    }
}

/// A change, pushed on the event stream as it happens: when, and what changed with what
/// it carries. On the wire (docs/api.md) it is one JSON object, `{"type": KIND, "at": ns}`
/// and the payload's fields beside them, as clients have always read it.
public struct Event: Equatable, Sendable {
    /// The `type` string of each change on the wire.
    public enum Kind: String, Codable, Sendable {
        case hello
        case nowPlaying = "now-playing"
        case state
        case trackChanged = "track-changed"
        case trackEnded = "track-ended"
        case queue
        case volume
        case roomJoined = "room-joined"
        case roomLeft = "room-left"
        case room
        case feedback
        case zones
    }

    public enum Change: Equatable, Sendable {
        /// The first message on a connection: everything as it is, with the lyrics of the
        /// track now heard (nil when it has none).
        case hello(nowPlaying: NowPlaying, queue: QueueView, rooms: [RoomView], lyrics: Lyrics?)
        /// Any change to the now-playing card.
        case nowPlaying(NowPlaying)
        /// loading, playing, paused, stopped; with a reason when a track failed.
        case state(PlaybackState, previous: PlaybackState, reason: String?)
        /// Another queue entry is heard now (none: the queue ran out), with its lyrics.
        case trackChanged(itemID: Int?, nowPlaying: NowPlaying, lyrics: Lyrics?)
        /// The entry that was playing ended or was left.
        case trackEnded(itemID: Int)
        case queue(QueueView)
        /// Some room's volume or mute changed: every room as it is now.
        case volume(rooms: [RoomView])
        case roomJoined(RoomView)
        case roomLeft(RoomView)
        /// A room's state changed (playing, waiting, interrupted...).
        case room(RoomView)
        case feedback(FeedbackEntry)
        /// Zones were made, renamed or removed, or a room moved: every zone as it is now.
        case zones([ZoneView])
    }

    /// Coordinator time (ns) of the change.
    public var at: Int64
    public var change: Change
    /// The id of the zone it is about (a room's: the zone the room is in); nil for the
    /// whole house (the zones' list).
    public var zone: String?

    public init(_ change: Change, at: Int64, zone: String? = nil) {
        self.change = change
        self.at = at
        self.zone = zone
    }

    public var kind: Kind {
        switch change {
        case .hello: .hello
        case .nowPlaying: .nowPlaying
        case .state: .state
        case .trackChanged: .trackChanged
        case .trackEnded: .trackEnded
        case .queue: .queue
        case .volume: .volume
        case .roomJoined: .roomJoined
        case .roomLeft: .roomLeft
        case .room: .room
        case .feedback: .feedback
        case .zones: .zones
        }
    }
}

extension Event: Codable {
    private enum Key: String, CodingKey {
        case type, at, zone, state, previousState, reason, nowPlaying, queue, rooms, room, feedback, itemID, lyrics, zones
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        at = try c.decode(Int64.self, forKey: .at)
        zone = try c.decodeIfPresent(String.self, forKey: .zone)
        switch try c.decode(Kind.self, forKey: .type) {
        case .hello:
            change = .hello(nowPlaying: try c.decode(NowPlaying.self, forKey: .nowPlaying), queue: try c.decode(QueueView.self, forKey: .queue),
                            rooms: try c.decode([RoomView].self, forKey: .rooms), lyrics: try c.decodeIfPresent(Lyrics.self, forKey: .lyrics))
        case .nowPlaying: change = .nowPlaying(try c.decode(NowPlaying.self, forKey: .nowPlaying))
        case .state:
            change = .state(try c.decode(PlaybackState.self, forKey: .state), previous: try c.decode(PlaybackState.self, forKey: .previousState),
                            reason: try c.decodeIfPresent(String.self, forKey: .reason))
        case .trackChanged:
            change = .trackChanged(itemID: try c.decodeIfPresent(Int.self, forKey: .itemID), nowPlaying: try c.decode(NowPlaying.self, forKey: .nowPlaying),
                                   lyrics: try c.decodeIfPresent(Lyrics.self, forKey: .lyrics))
        case .trackEnded: change = .trackEnded(itemID: try c.decode(Int.self, forKey: .itemID))
        case .queue: change = .queue(try c.decode(QueueView.self, forKey: .queue))
        case .volume: change = .volume(rooms: try c.decode([RoomView].self, forKey: .rooms))
        case .roomJoined: change = .roomJoined(try c.decode(RoomView.self, forKey: .room))
        case .roomLeft: change = .roomLeft(try c.decode(RoomView.self, forKey: .room))
        case .room: change = .room(try c.decode(RoomView.self, forKey: .room))
        case .feedback: change = .feedback(try c.decode(FeedbackEntry.self, forKey: .feedback))
        case .zones: change = .zones(try c.decode([ZoneView].self, forKey: .zones))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(kind, forKey: .type)
        try c.encode(at, forKey: .at)
        try c.encodeIfPresent(zone, forKey: .zone)
        switch change {
        case let .hello(nowPlaying, queue, rooms, lyrics):
            try c.encode(nowPlaying, forKey: .nowPlaying)
            try c.encode(queue, forKey: .queue)
            try c.encode(rooms, forKey: .rooms)
            try c.encodeIfPresent(lyrics, forKey: .lyrics)
        case let .nowPlaying(nowPlaying): try c.encode(nowPlaying, forKey: .nowPlaying)
        case let .state(state, previous, reason):
            try c.encode(state, forKey: .state)
            try c.encode(previous, forKey: .previousState)
            try c.encodeIfPresent(reason, forKey: .reason)
        case let .trackChanged(itemID, nowPlaying, lyrics):
            try c.encodeIfPresent(itemID, forKey: .itemID)
            try c.encode(nowPlaying, forKey: .nowPlaying)
            try c.encodeIfPresent(lyrics, forKey: .lyrics)
        case let .trackEnded(itemID): try c.encode(itemID, forKey: .itemID)
        case let .queue(queue): try c.encode(queue, forKey: .queue)
        case let .volume(rooms): try c.encode(rooms, forKey: .rooms)
        case let .roomJoined(room), let .roomLeft(room), let .room(room): try c.encode(room, forKey: .room)
        case let .feedback(entry): try c.encode(entry, forKey: .feedback)
        case let .zones(zones): try c.encode(zones, forKey: .zones)
        }
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
/// `POST /queue`: files, folders, playlists or URLs by `paths`, library tracks by `ids`
/// (either, or both: the paths first).
public struct AddRequest: Codable, Sendable {
    public var paths: [String]
    public var ids: [Int64]?
    public var placement: PlayQueue.Placement?
    public init(paths: [String] = [], ids: [Int64]? = nil, placement: PlayQueue.Placement?) {
        self.paths = paths
        self.ids = ids
        self.placement = placement
    }

    enum CodingKeys: String, CodingKey { case paths, ids, placement }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        paths = try container.decodeIfPresent([String].self, forKey: .paths) ?? []
        ids = try container.decodeIfPresent([Int64].self, forKey: .ids)
        placement = try container.decodeIfPresent(PlayQueue.Placement.self, forKey: .placement)
    }
}
public struct MoveRequest: Codable, Sendable {
    public var index: Int
    public init(index: Int) { self.index = index }
}
/// A change of the house's ReplayGain setting: any of its parts.
public struct ReplayGainUpdate: Codable, Sendable, Equatable {
    public var mode: ReplayGain.Mode?
    public var preampDb: Double?
    public var untaggedDb: Double?
    public init(mode: ReplayGain.Mode? = nil, preampDb: Double? = nil, untaggedDb: Double? = nil) {
        self.mode = mode
        self.preampDb = preampDb
        self.untaggedDb = untaggedDb
    }

    /// `setting` with this change made; refused when a gain is not a number of decibels
    /// within ±24.
    public func applied(to setting: ReplayGain) throws(ControlError) -> ReplayGain {
        var changed = setting
        if let mode { changed.mode = mode }
        for (name, value) in [("preampDb", preampDb), ("untaggedDb", untaggedDb)] {
            guard let value else { continue }
            guard ReplayGain.accepts(value) else {
                throw .badRequest("\(name) must be a gain in dB between -\(Int(ReplayGain.limitDB)) and \(Int(ReplayGain.limitDB))")
            }
            if name == "preampDb" { changed.preampDB = value } else { changed.untaggedDB = value }
        }
        return changed
    }
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
    /// The zone to move it to (a zone's name or id).
    public var zone: String?
    public init(name: String?, volume: Double?, muted: Bool?, outputDelayMs: Double?, zone: String? = nil) {
        self.zone = zone
        self.name = name
        self.volume = volume
        self.muted = muted
        self.outputDelayMs = outputDelayMs
    }
}
/// A zone to make (`POST /zones`) or a new name for one (`PUT /zones/{zone}`).
public struct ZoneRequest: Codable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}
/// Every room into one zone (`POST /zones/party`): the one named, else the default zone.
public struct PartyRequest: Codable, Sendable {
    public var zone: String?
    public init(zone: String? = nil) { self.zone = zone }
}
public struct FeedbackRequest: Codable, Sendable {
    public var kind: FeedbackKind
    public init(kind: FeedbackKind) { self.kind = kind }
}

/// `POST /calibration`: calibrate these rooms (names or keys; all connected rooms when none
/// are named) with probes at `level` (0 to 1 of full scale; 0.2 when not given).
public struct CalibrationRequest: Codable, Equatable, Sendable {
    public var rooms: [String]?
    public var level: Double?

    public init(rooms: [String]? = nil, level: Double? = nil) {
        self.rooms = rooms
        self.level = level
    }
}

/// A calibration begun: which rooms play their probes, in turn, and how long to record (from
/// the answer on; the recording must have begun before `firstInSeconds`).
public struct CalibrationStarted: Codable, Equatable, Sendable {
    public var id: String
    /// The rooms' names, each once, in the order they first play (the first also plays
    /// between the others, and last).
    public var rooms: [String]
    public var keys: [String]
    public var firstInSeconds: Double
    public var recordSeconds: Double
    public var level: Double

    public init(id: String, rooms: [String], keys: [String], firstInSeconds: Double, recordSeconds: Double, level: Double) {
        self.id = id
        self.rooms = rooms
        self.keys = keys
        self.firstInSeconds = firstInSeconds
        self.recordSeconds = recordSeconds
        self.level = level
    }
}

/// What a calibration's recording said (`POST /calibration/{id}/recording`), with the rooms'
/// names, and whether the delays were applied.
public struct CalibrationReport: Codable, Equatable, Sendable {
    public var outcome: CalibrationOutcome
    /// Room key → name.
    public var names: [String: String]
    public var applied: Bool

    public init(outcome: CalibrationOutcome, names: [String: String], applied: Bool) {
        self.outcome = outcome
        self.names = names
        self.applied = applied
    }
}

/// The Sendspin players the coordinator knows: those paired with it, and those connected
/// that wait to be paired (`GET /api/v1/sendspin/players`).
public struct SendspinPlayersView: Codable, Equatable, Sendable {
    public struct Player: Codable, Equatable, Sendable {
        /// Its name as it said, and its id (its X25519 key, base64url).
        public var name: String
        public var id: String
        /// `paired`, or `waiting` (connected, not paired: no audio until it is).
        public var state: String
        /// The pairing methods by code it offers: `dynamic_pairing_code` (it shows a code),
        /// `static_pairing_code` (it keeps one, printed on it or set by its owner).
        public var methods: [String]
        /// For a paired one: how (the method), and when (Unix seconds).
        public var pairedBy: String?
        public var pairedAt: Int64?
        public init(name: String, id: String, state: String, methods: [String], pairedBy: String? = nil, pairedAt: Int64? = nil) {
            self.name = name
            self.id = id
            self.state = state
            self.methods = methods
            self.pairedBy = pairedBy
            self.pairedAt = pairedAt
        }
    }
    public var players: [Player]
    public init(players: [Player]) { self.players = players }
}

/// Pairs a Sendspin player that waits (`POST /api/v1/sendspin/pair`): by its name or id;
/// `code`, the code it shows once asked (a dynamic code: call again with it), or the code it
/// keeps (static).
public struct SendspinPairRequest: Codable, Equatable, Sendable {
    /// The player (name or id); with a token, it may be left out (the token names it).
    public var player: String?
    public var code: String?
    /// A pairing token the player gave (`SP:0…`: its id and a one-time key).
    public var token: String?
    public init(player: String? = nil, code: String? = nil, token: String? = nil) {
        self.player = player
        self.code = code
        self.token = token
    }
}

public struct SendspinPairAnswer: Codable, Equatable, Sendable {
    /// `awaiting-code` (the player shows a code: send it), `pairing` (under way), `paired`.
    public var state: String
    public var message: String
    public init(state: String, message: String) {
        self.state = state
        self.message = message
    }
}
