/// What an audio file's tags say about it: ID3v2 (ID3v1 as a fallback), Vorbis comments,
/// MP4 atoms, whatever its container holds.
public struct TrackTags: Equatable, Sendable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var year: String?
    public var trackNumber: Int?
    public var trackCount: Int?
    public var discNumber: Int?
    public var discCount: Int?
    public var pictures: [Picture] = []
    /// Unsynchronised lyrics (USLT).
    public var lyrics: [Lyrics] = []
    /// Synchronised lyrics (SYLT): text with times in milliseconds.
    public var syncedLyrics: [SyncedLyrics] = []
    /// ReplayGain (or R128) gains and peaks.
    public var loudness = Loudness()

    public init() {}

    public struct Picture: Equatable, Sendable {
        public var mimeType: String
        /// The APIC picture type (3: front cover).
        public var kind: UInt8
        public var description: String
        public var data: [UInt8]

        public init(mimeType: String, kind: UInt8, description: String, data: [UInt8]) {
            self.mimeType = mimeType
            self.kind = kind
            self.description = description
            self.data = data
        }
    }

    public struct Lyrics: Equatable, Sendable {
        public var language: String
        public var description: String
        public var text: String

        public init(language: String, description: String, text: String) {
            self.language = language
            self.description = description
            self.text = text
        }
    }

    public struct SyncedLyrics: Equatable, Sendable {
        public var language: String
        public var description: String
        /// (milliseconds from the track's start, text)
        public var lines: [(milliseconds: Int, text: String)]

        public static func == (a: Self, b: Self) -> Bool {
            a.language == b.language && a.description == b.description
                && a.lines.map(\.milliseconds) == b.lines.map(\.milliseconds) && a.lines.map(\.text) == b.lines.map(\.text)
        }
    }

    /// The front cover if there is one, else the first picture.
    public var artwork: Picture? { pictures.first { $0.kind == 3 } ?? pictures.first }

    /// Fills what is missing here from `other`.
    public mutating func merge(_ other: TrackTags) {
        title = title ?? other.title
        artist = artist ?? other.artist
        album = album ?? other.album
        albumArtist = albumArtist ?? other.albumArtist
        genre = genre ?? other.genre
        year = year ?? other.year
        trackNumber = trackNumber ?? other.trackNumber
        trackCount = trackCount ?? other.trackCount
        discNumber = discNumber ?? other.discNumber
        discCount = discCount ?? other.discCount
        if pictures.isEmpty { pictures = other.pictures }
        if lyrics.isEmpty { lyrics = other.lyrics }
        if syncedLyrics.isEmpty { syncedLyrics = other.syncedLyrics }
        loudness.merge(other.loudness)
    }
}
