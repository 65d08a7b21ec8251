import TuttiCore

/// The music library's JSON (docs/api.md, "Library"): what the coordinator indexed in its
/// music folders. Ids are the library's own, kept while the file (or album, or artist)
/// stays: a rescan does not renumber them.

/// A track of the library.
public struct LibraryTrack: Codable, Equatable, Sendable {
    public var id: Int64
    /// The file (its name only, without the house's token).
    public var path: String
    public var title: String
    public var artist: String?
    public var album: String?
    public var albumID: Int64?
    public var albumArtist: String?
    public var genre: String?
    public var year: Int?
    public var trackNumber: Int?
    public var discNumber: Int?
    /// Seconds, when known.
    public var duration: Double?
    public var hasArtwork: Bool
    /// Lyrics beside the file (`.lrc`) or in its tags.
    public var hasLyrics: Bool

    public init(id: Int64, path: String, title: String, artist: String? = nil, album: String? = nil, albumID: Int64? = nil,
                albumArtist: String? = nil, genre: String? = nil, year: Int? = nil, trackNumber: Int? = nil,
                discNumber: Int? = nil, duration: Double? = nil, hasArtwork: Bool = false, hasLyrics: Bool = false) {
        self.id = id
        self.path = path
        self.title = title
        self.artist = artist
        self.album = album
        self.albumID = albumID
        self.albumArtist = albumArtist
        self.genre = genre
        self.year = year
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.duration = duration
        self.hasArtwork = hasArtwork
        self.hasLyrics = hasLyrics
    }
}

/// An album: tracks with one album title and one album artist (or, without an album artist
/// tag, in one folder). Its tracks only when one album is asked for.
public struct LibraryAlbum: Codable, Equatable, Sendable {
    public var id: Int64
    public var title: String
    /// The album artist; "Various Artists" for an untagged compilation.
    public var artist: String?
    public var artistID: Int64?
    public var year: Int?
    public var trackCount: Int
    /// Seconds, of the tracks whose length is known.
    public var duration: Double
    /// Where its cover is served (`/api/v1/library/albums/{id}/art`), when it has one.
    public var artworkURL: String?
    public var tracks: [LibraryTrack]?

    public init(id: Int64, title: String, artist: String?, artistID: Int64?, year: Int?, trackCount: Int, duration: Double,
                artworkURL: String?, tracks: [LibraryTrack]? = nil) {
        self.id = id
        self.title = title
        self.artist = artist
        self.artistID = artistID
        self.year = year
        self.trackCount = trackCount
        self.duration = duration
        self.artworkURL = artworkURL
        self.tracks = tracks
    }
}

/// An artist: of tracks, or of albums (their album artist). Its albums and tracks only
/// when one artist is asked for.
public struct LibraryArtist: Codable, Equatable, Sendable {
    public var id: Int64
    public var name: String
    public var albumCount: Int
    public var trackCount: Int
    public var albums: [LibraryAlbum]?
    /// Its tracks on albums of other artists (or on none).
    public var otherTracks: [LibraryTrack]?

    public init(id: Int64, name: String, albumCount: Int, trackCount: Int, albums: [LibraryAlbum]? = nil, otherTracks: [LibraryTrack]? = nil) {
        self.id = id
        self.name = name
        self.albumCount = albumCount
        self.trackCount = trackCount
        self.albums = albums
        self.otherTracks = otherTracks
    }
}

/// A folder of the library, as the files lie: its path is the music folder's own name, then
/// the folders within it ("Music/Artist/Album"), never where the music folder is.
public struct LibraryFolder: Codable, Equatable, Sendable {
    public struct Entry: Codable, Equatable, Sendable {
        public var name: String
        public var path: String
        /// Tracks in it and in every folder within it.
        public var trackCount: Int
        public init(name: String, path: String, trackCount: Int) {
            self.name = name
            self.path = path
            self.trackCount = trackCount
        }
    }

    /// "" for the top: the music folders.
    public var path: String
    public var folders: [Entry]
    public var tracks: [LibraryTrack]

    public init(path: String, folders: [Entry], tracks: [LibraryTrack]) {
        self.path = path
        self.folders = folders
        self.tracks = tracks
    }
}

/// What a search found, best first in each kind.
public struct LibrarySearch: Codable, Equatable, Sendable {
    public var query: String
    public var artists: [LibraryArtist]
    public var albums: [LibraryAlbum]
    public var tracks: [LibraryTrack]
    /// Milliseconds the library took.
    public var milliseconds: Double

    public init(query: String, artists: [LibraryArtist], albums: [LibraryAlbum], tracks: [LibraryTrack], milliseconds: Double) {
        self.query = query
        self.artists = artists
        self.albums = albums
        self.tracks = tracks
        self.milliseconds = milliseconds
    }
}

/// The library as a whole: what it holds, and its scans.
public struct LibraryStatus: Codable, Equatable, Sendable {
    /// The music folders, by their own names.
    public var folders: [String]
    public var tracks: Int
    public var albums: Int
    public var artists: Int
    /// True while it walks the folders.
    public var scanning: Bool
    /// Whether changes to the folders are seen as they happen (inotify), or only by a rescan.
    public var watching: Bool
    /// The last full scan: when it ended (Unix seconds), how long it took, what it found.
    public var lastScan: Scan?

    public struct Scan: Codable, Equatable, Sendable {
        public var endedAt: Double
        public var seconds: Double
        public var added: Int
        public var updated: Int
        public var removed: Int
        /// Files that could not be read as music (counted, left out).
        public var unreadable: Int
        public init(endedAt: Double, seconds: Double, added: Int, updated: Int, removed: Int, unreadable: Int) {
            self.endedAt = endedAt
            self.seconds = seconds
            self.added = added
            self.updated = updated
            self.removed = removed
            self.unreadable = unreadable
        }
    }

    public init(folders: [String], tracks: Int, albums: Int, artists: Int, scanning: Bool, watching: Bool, lastScan: Scan?) {
        self.folders = folders
        self.tracks = tracks
        self.albums = albums
        self.artists = artists
        self.scanning = scanning
        self.watching = watching
        self.lastScan = lastScan
    }
}

/// What the control API serves of the library; the coordinator's `MusicLibrary`
/// implements it. Reads are quick (an index on disk; an album's art reads a file) but do wait
/// on the disk: the control API calls them from threads of their own, never from Swift
/// concurrency's pool.
public protocol LibraryService: Sendable {
    func status() -> LibraryStatus
    /// Tracks, albums and artists whose words begin with the query's, every word of it,
    /// case and diacritics folded, best first; at most `limit` of each kind.
    func search(_ query: String, limit: Int) throws(ControlError) -> LibrarySearch
    func albums() throws(ControlError) -> [LibraryAlbum]
    func album(id: Int64) throws(ControlError) -> LibraryAlbum
    func artists() throws(ControlError) -> [LibraryArtist]
    func artist(id: Int64) throws(ControlError) -> LibraryArtist
    /// A folder ("" for the top) with the folders and tracks in it.
    func folder(_ path: String) throws(ControlError) -> LibraryFolder
    /// The files of tracks, in the order asked (an unknown id is a 404).
    func paths(of ids: [Int64]) throws(ControlError) -> [String]
    /// An album's cover: its MIME type and bytes.
    func artwork(albumID: Int64) throws(ControlError) -> (mimeType: String, data: [UInt8])
    /// Walks the folders again now (in the background): new, changed and gone files.
    func rescan()
}
