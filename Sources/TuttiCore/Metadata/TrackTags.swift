/// What an audio file's tags say about it (ID3v2, with ID3v1 as a fallback).
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

    public init() {}

    public struct Picture: Equatable, Sendable {
        public var mimeType: String
        /// The APIC picture type (3: front cover).
        public var kind: UInt8
        public var description: String
        public var data: [UInt8]
    }

    public struct Lyrics: Equatable, Sendable {
        public var language: String
        public var description: String
        public var text: String
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
        genre = genre ?? other.genre
        year = year ?? other.year
        trackNumber = trackNumber ?? other.trackNumber
    }
}
