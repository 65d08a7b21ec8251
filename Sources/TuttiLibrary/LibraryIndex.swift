import Foundation
import GRDB
import TuttiAPI
import TuttiCore

/// What a music file's tags say, as the library keeps it (read by the coordinator's
/// decoder: `MusicLibrary.Reader`).
public struct ScannedTrack: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var year: Int?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var duration: Double?
    public var hasArtwork: Bool
    /// Lyrics in the tags (a `.lrc` beside the file is looked for by the scan).
    public var hasLyrics: Bool

    public init(title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil, genre: String? = nil,
                year: Int? = nil, trackNumber: Int? = nil, discNumber: Int? = nil, duration: Double? = nil,
                hasArtwork: Bool = false, hasLyrics: Bool = false) {
        self.title = title
        self.artist = artist
        self.album = album
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

/// The library's index: one SQLite database (GRDB, write-ahead log) in the state folder.
/// Tracks by file, albums and artists made from their tags, each folder's cover image, and a
/// full-text index (FTS5, case and diacritics folded) of titles and names. Reads go on
/// while a scan writes. Every change is a transaction: a coordinator stopped mid-scan finds
/// the index as the last batch left it, and the next scan goes on from there.
final class LibraryIndex: Sendable {
    let pool: DatabasePool

    /// What the index knows of a file: enough to tell whether it changed.
    struct Known: Equatable {
        var size: Int64
        var modified: Int64
        var lrcBeside: Bool
        /// Kept as unreadable (no track): tried again only when it changes.
        var unreadable: Bool
    }

    /// A file read by a scan: a track, or unreadable (nil).
    struct Update {
        var path: String
        var size: Int64
        var modified: Int64
        var lrcBeside: Bool
        var track: ScannedTrack?
    }

    init(path: String) throws {
        var configuration = Configuration()
        configuration.label = "tutti.library"
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE artist (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                    albumCount INTEGER NOT NULL DEFAULT 0, trackCount INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE album (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
                    artist TEXT, artistId INTEGER, year INTEGER, folder TEXT NOT NULL DEFAULT '', trackCount INTEGER NOT NULL DEFAULT 0,
                    duration REAL NOT NULL DEFAULT 0, artTrackId INTEGER, coverPath TEXT);
                CREATE TABLE track (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL UNIQUE, folder TEXT NOT NULL,
                    size INTEGER NOT NULL, modified INTEGER NOT NULL, title TEXT NOT NULL, artist TEXT, album TEXT, albumArtist TEXT,
                    genre TEXT, year INTEGER, trackNumber INTEGER, discNumber INTEGER, duration REAL,
                    hasArtwork INTEGER NOT NULL, tagLyrics INTEGER NOT NULL, lrcBeside INTEGER NOT NULL,
                    albumKey TEXT NOT NULL, artistKey TEXT, albumId INTEGER, artistId INTEGER);
                CREATE INDEX track_folder ON track(folder);
                CREATE INDEX track_album ON track(albumId);
                CREATE INDEX track_artist ON track(artistId);
                CREATE INDEX album_artist ON album(artistId);
                CREATE TABLE unreadable (path TEXT PRIMARY KEY, size INTEGER NOT NULL, modified INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE cover (folder TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE scan (id INTEGER PRIMARY KEY CHECK (id = 1), endedAt REAL, seconds REAL, added INTEGER,
                    updated INTEGER, removed INTEGER, unreadable INTEGER);
                """)
            // One full-text table per kind (a search for one kind never ranks the others'
            // matches), with prefix indexes for the one to three letters typed first.
            for table in SearchTable.allCases {
                try db.execute(sql: """
                    CREATE VIRTUAL TABLE \(table.rawValue) USING fts5(name, extra, spelled, ref UNINDEXED,
                        tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3')
                    """)
            }
        }
        // The search's other forms grew CJK characters one by one and words without their
        // apostrophes: an index made before has them on its next start.
        migrator.registerMigration("v2: search forms") { db in try Self.makeSearch(db) }
        return migrator
    }

    /// The full-text tables, one per kind.
    enum SearchTable: String, CaseIterable {
        case tracks = "search_track", albums = "search_album", artists = "search_artist"
    }

    // MARK: - Scans

    /// Every file the index knows, tracks and unreadable ones.
    func known() throws -> [String: Known] {
        try pool.read { db in
            var known: [String: Known] = [:]
            let tracks = try Row.fetchCursor(db, sql: "SELECT path, size, modified, lrcBeside FROM track")
            while let row = try tracks.next() {
                known[row[0]] = Known(size: row[1], modified: row[2], lrcBeside: row[3], unreadable: false)
            }
            let others = try Row.fetchCursor(db, sql: "SELECT path, size, modified FROM unreadable")
            while let row = try others.next() {
                known[row[0]] = Known(size: row[1], modified: row[2], lrcBeside: false, unreadable: true)
            }
            return known
        }
    }

    /// Writes a batch of read files (in one transaction).
    func write(_ updates: [Update]) throws {
        try pool.write { db in
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO track (path, folder, size, modified, title, artist, album, albumArtist, genre, year, trackNumber,
                    discNumber, duration, hasArtwork, tagLyrics, lrcBeside, albumKey, artistKey)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET folder = excluded.folder, size = excluded.size, modified = excluded.modified,
                    title = excluded.title, artist = excluded.artist, album = excluded.album, albumArtist = excluded.albumArtist,
                    genre = excluded.genre, year = excluded.year, trackNumber = excluded.trackNumber, discNumber = excluded.discNumber,
                    duration = excluded.duration, hasArtwork = excluded.hasArtwork, tagLyrics = excluded.tagLyrics,
                    lrcBeside = excluded.lrcBeside, albumKey = excluded.albumKey, artistKey = excluded.artistKey
                """)
            let skip = try db.cachedStatement(sql: "INSERT OR REPLACE INTO unreadable (path, size, modified) VALUES (?, ?, ?)")
            let unskip = try db.cachedStatement(sql: "DELETE FROM unreadable WHERE path = ?")
            let untrack = try db.cachedStatement(sql: "DELETE FROM track WHERE path = ?")
            for update in updates {
                guard let track = update.track else {
                    try untrack.execute(arguments: [update.path])
                    try skip.execute(arguments: [update.path, update.size, update.modified])
                    continue
                }
                let folder = (update.path as NSString).deletingLastPathComponent
                let title = Self.cleaned(track.title) ?? ((update.path as NSString).lastPathComponent as NSString).deletingPathExtension
                let artist = Self.cleaned(track.artist), album = Self.cleaned(track.album), albumArtist = Self.cleaned(track.albumArtist)
                try upsert.execute(arguments: [
                    update.path, folder, update.size, update.modified, title, artist, album, albumArtist, Self.cleaned(track.genre),
                    track.year, track.trackNumber, track.discNumber, track.duration, track.hasArtwork, track.hasLyrics,
                    update.lrcBeside, Self.albumKey(album: album, albumArtist: albumArtist, folder: folder), artist.map(Self.key),
                ])
                try unskip.execute(arguments: [update.path])
            }
        }
    }

    /// Whether a `.lrc` is beside each of these known tracks now (changed only).
    func setLyricsBeside(_ changes: [(path: String, lrcBeside: Bool)]) throws {
        guard !changes.isEmpty else { return }
        try pool.write { db in
            let statement = try db.cachedStatement(sql: "UPDATE track SET lrcBeside = ? WHERE path = ?")
            for change in changes { try statement.execute(arguments: [change.lrcBeside, change.path]) }
        }
    }

    /// Forgets files that are gone and makes albums, artists and the search index agree with
    /// the tracks (after a scan that changed anything), in one transaction: a reader never
    /// sees an album whose tracks are gone. New albums and artists get new ids, the others
    /// keep theirs, empty ones go.
    func finish(removing gone: [String], covers: [String: String]) throws {
        try pool.write { db in
            let track = try db.cachedStatement(sql: "DELETE FROM track WHERE path = ?")
            let other = try db.cachedStatement(sql: "DELETE FROM unreadable WHERE path = ?")
            for path in gone {
                try track.execute(arguments: [path])
                try other.execute(arguments: [path])
            }
            try db.execute(sql: "DELETE FROM cover")
            let cover = try db.cachedStatement(sql: "INSERT INTO cover (folder, path) VALUES (?, ?)")
            for (folder, path) in covers { try cover.execute(arguments: [folder, path]) }
            try Self.makeAlbums(db)
            try Self.makeArtists(db)
            try Self.makeSearch(db)
        }
    }

    /// Keeps what the last scan did (one that changed nothing too).
    func record(_ scan: LibraryStatus.Scan) throws {
        try pool.write { db in try Self.record(scan, db) }
    }

    private static func record(_ scan: LibraryStatus.Scan, _ db: Database) throws {
        try db.execute(sql: """
            INSERT OR REPLACE INTO scan (id, endedAt, seconds, added, updated, removed, unreadable) VALUES (1, ?, ?, ?, ?, ?, ?)
            """, arguments: [scan.endedAt, scan.seconds, scan.added, scan.updated, scan.removed, scan.unreadable])
    }

    /// Each folder's cover image, as the last scan that changed anything found them.
    func covers() throws -> [String: String] {
        try pool.read { db in
            var covers: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT folder, path FROM cover") { covers[row[0]] = row[1] }
            return covers
        }
    }

    func lastScan() throws -> LibraryStatus.Scan? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT endedAt, seconds, added, updated, removed, unreadable FROM scan WHERE id = 1").map {
                LibraryStatus.Scan(endedAt: $0[0], seconds: $0[1], added: $0[2], updated: $0[3], removed: $0[4], unreadable: $0[5])
            }
        }
    }

    private static func makeAlbums(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO album (key, title) SELECT DISTINCT albumKey, '' FROM track WHERE true ON CONFLICT(key) DO NOTHING;
            DELETE FROM album WHERE key NOT IN (SELECT albumKey FROM track);
            UPDATE track SET albumId = (SELECT id FROM album WHERE album.key = track.albumKey);
            """)
        // Each album's title, artist, year, folder, length and art, from its tracks.
        struct Summary {
            var title: String?
            var albumArtist: String?
            var artists = Set<String>()
            var firstArtist: String?
            var year: Int?
            var folder: String
            var count = 0
            var duration = 0.0
            var artTrack: Int64?
        }
        var albums: [Int64: Summary] = [:]
        let rows = try Row.fetchCursor(db, sql: """
            SELECT albumId, album, albumArtist, artist, year, folder, duration, hasArtwork, id FROM track ORDER BY albumId, discNumber, trackNumber, path
            """)
        while let row = try rows.next() {
            let id: Int64 = row[0]
            var summary = albums[id] ?? Summary(folder: row[5])
            summary.title = summary.title ?? row[1]
            summary.albumArtist = summary.albumArtist ?? row[2]
            if let artist: String = row[3] {
                summary.artists.insert(key(artist))
                summary.firstArtist = summary.firstArtist ?? artist
            }
            if let year: Int = row[4] { summary.year = max(summary.year ?? year, year) }
            summary.count += 1
            summary.duration += (row[6] as Double?) ?? 0
            if summary.artTrack == nil, row[7] as Bool { summary.artTrack = row[8] }
            albums[id] = summary
        }
        let update = try db.cachedStatement(sql: """
            UPDATE album SET title = ?, artist = ?, year = ?, folder = ?, trackCount = ?, duration = ?, artTrackId = ?,
                coverPath = (SELECT path FROM cover WHERE cover.folder = ?) WHERE id = ?
            """)
        for (id, summary) in albums {
            let title = summary.title ?? (summary.folder as NSString).lastPathComponent
            let artist = summary.albumArtist ?? (summary.artists.count > 1 ? "Various Artists" : summary.firstArtist)
            try update.execute(arguments: [title, artist, summary.year, summary.folder, summary.count, summary.duration,
                                           summary.artTrack, summary.folder, id])
        }
    }

    private static func makeArtists(_ db: Database) throws {
        // An artist is named as most of its tracks and albums name it (on a tie, the spelling
        // that sorts first: capitals before small letters).
        var spellings: [String: [String: Int]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT artist FROM track WHERE artist IS NOT NULL UNION ALL SELECT artist FROM album WHERE artist IS NOT NULL") {
            let name: String = row[0]
            spellings[key(name), default: [:]][name, default: 0] += 1
        }
        let names = spellings.mapValues { counts in
            counts.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }!.key
        }
        let insert = try db.cachedStatement(sql: "INSERT INTO artist (key, name) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET name = excluded.name")
        for (key, name) in names { try insert.execute(arguments: [key, name]) }
        let stale = try String.fetchAll(db, sql: "SELECT key FROM artist").filter { names[$0] == nil }
        let drop = try db.cachedStatement(sql: "DELETE FROM artist WHERE key = ?")
        for key in stale { try drop.execute(arguments: [key]) }
        var ids: [String: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, id FROM artist") { ids[row[0]] = row[1] }
        try db.execute(sql: "UPDATE track SET artistId = (SELECT id FROM artist WHERE artist.key = track.artistKey)")
        let album = try db.cachedStatement(sql: "UPDATE album SET artistId = ? WHERE id = ?")
        for row in try Row.fetchAll(db, sql: "SELECT id, artist FROM album") {
            try album.execute(arguments: [(row[1] as String?).flatMap { ids[key($0)] }, row[0] as Int64])
        }
        try db.execute(sql: """
            UPDATE artist SET trackCount = (SELECT COUNT(*) FROM track WHERE track.artistId = artist.id),
                albumCount = (SELECT COUNT(*) FROM album WHERE album.artistId = artist.id)
            """)
    }

    private static func makeSearch(_ db: Database) throws {
        func add(_ table: SearchTable, _ sql: String) throws {
            try db.execute(sql: "DELETE FROM \(table.rawValue)")
            let insert = try db.cachedStatement(sql: "INSERT INTO \(table.rawValue) (name, extra, spelled, ref) VALUES (?, ?, ?, ?)")
            let rows = try Row.fetchCursor(db, sql: sql)
            while let row = try rows.next() {
                let name: String = row[1], extra: String = row[2]
                try insert.execute(arguments: [name, extra, otherForms(name + " " + extra), row[0] as Int64])
            }
        }
        try add(.tracks, "SELECT id, title, coalesce(artist, '') || ' ' || coalesce(album, '') || ' ' || coalesce(albumArtist, '') FROM track")
        try add(.albums, "SELECT id, title, coalesce(artist, '') FROM album")
        try add(.artists, "SELECT id, name, '' FROM artist")
    }

    /// What the search also finds a name by, in the `spelled` column: letters the tokenizer
    /// keeps whole (æ, ø, ß...) spelled out, for those who type them so; CJK characters one
    /// by one (the tokenizer keeps a run of them as one word, and their words are not
    /// spaced: "音楽図鑑" is found by "図鑑"); words with an apostrophe without it
    /// ("That's" by "thats").
    static func otherForms(_ text: String) -> String {
        var forms = [spelledOut(text)]
        if text.unicodeScalars.contains(where: isCJK) {
            forms.append(text.unicodeScalars.filter(isCJK).map { String($0) }.joined(separator: " "))
        }
        forms += text.split(whereSeparator: \.isWhitespace).filter { $0.contains("'") || $0.contains("’") }
            .map { $0.filter { $0 != "'" && $0 != "’" } }
        return forms.filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Han, kana and Hangul: written without spaces between words.
    static func isCJK(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3040...0x30FF, 0x31F0...0x31FF,  // hiragana, katakana
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x2FA1F,  // Han
             0x1100...0x11FF, 0x3130...0x318F, 0xAC00...0xD7AF:  // Hangul
            true
        default: false
        }
    }

    /// Letters that are not a letter with a diacritic (which the index folds) but one of
    /// their own, spelled as English keyboards type them: "Ágætis" → "Ágaetis"; "" when
    /// there are none.
    static func spelledOut(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { spellings[$0] != nil }) else { return "" }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if let spelled = spellings[scalar] { out.append(contentsOf: spelled.unicodeScalars) } else { out.append(scalar) }
        }
        return String(out)
    }

    static let spellings: [Unicode.Scalar: String] = [
        "æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ø": "o", "Ø": "O", "ß": "ss", "ẞ": "Ss", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D",
        "þ": "th", "Þ": "Th", "ł": "l", "Ł": "L", "ı": "i", "ħ": "h", "Ħ": "H", "ŋ": "ng", "Ŋ": "Ng", "ĸ": "k", "ŧ": "t", "Ŧ": "T",
    ]

    // MARK: - Reads

    func counts() throws -> (tracks: Int, albums: Int, artists: Int) {
        try pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM track), (SELECT COUNT(*) FROM album), (SELECT COUNT(*) FROM artist)")!
            return (row[0], row[1], row[2])
        }
    }

    static let trackColumns = """
        track.id, track.path, track.title, track.artist, track.album, track.albumId, track.albumArtist, track.genre, track.year,
        track.trackNumber, track.discNumber, track.duration, track.hasArtwork, track.tagLyrics OR track.lrcBeside
        """
    static let albumColumns = "album.id, album.title, album.artist, album.artistId, album.year, album.trackCount, album.duration, album.artTrackId IS NOT NULL OR album.coverPath IS NOT NULL"
    static let artistColumns = "artist.id, artist.name, artist.albumCount, artist.trackCount"

    static func track(_ row: Row) -> LibraryTrack {
        LibraryTrack(id: row[0], path: row[1], title: row[2], artist: row[3], album: row[4], albumID: row[5], albumArtist: row[6],
                     genre: row[7], year: row[8], trackNumber: row[9], discNumber: row[10], duration: row[11],
                     hasArtwork: row[12], hasLyrics: row[13])
    }

    static func album(_ row: Row) -> LibraryAlbum {
        let id: Int64 = row[0]
        return LibraryAlbum(id: id, title: row[1], artist: row[2], artistID: row[3], year: row[4], trackCount: row[5], duration: row[6],
                            artworkURL: (row[7] as Bool) ? "/api/v1/library/albums/\(id)/art" : nil)
    }

    static func artist(_ row: Row) -> LibraryArtist {
        LibraryArtist(id: row[0], name: row[1], albumCount: row[2], trackCount: row[3])
    }

    func albums() throws -> [LibraryAlbum] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.albumColumns) FROM album ORDER BY album.artist COLLATE NOCASE, album.year, album.title COLLATE NOCASE")
                .map(Self.album)
        }
    }

    func album(id: Int64) throws -> LibraryAlbum? {
        try pool.read { db in
            guard var album = try Row.fetchOne(db, sql: "SELECT \(Self.albumColumns) FROM album WHERE id = ?", arguments: [id]).map(Self.album) else {
                return nil
            }
            album.tracks = try Row.fetchAll(db, sql: """
                SELECT \(Self.trackColumns) FROM track WHERE albumId = ? ORDER BY discNumber, trackNumber, path
                """, arguments: [id]).map(Self.track)
            return album
        }
    }

    func artists() throws -> [LibraryArtist] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.artistColumns) FROM artist ORDER BY name COLLATE NOCASE").map(Self.artist)
        }
    }

    func artist(id: Int64) throws -> LibraryArtist? {
        try pool.read { db in
            guard var artist = try Row.fetchOne(db, sql: "SELECT \(Self.artistColumns) FROM artist WHERE id = ?", arguments: [id]).map(Self.artist) else {
                return nil
            }
            artist.albums = try Row.fetchAll(db, sql: """
                SELECT \(Self.albumColumns) FROM album WHERE artistId = ? ORDER BY year, title COLLATE NOCASE
                """, arguments: [id]).map(Self.album)
            artist.otherTracks = try Row.fetchAll(db, sql: """
                SELECT \(Self.trackColumns) FROM track LEFT JOIN album ON album.id = track.albumId
                WHERE track.artistId = ? AND (album.artistId IS NULL OR album.artistId != ?) ORDER BY track.album, track.discNumber, track.trackNumber, track.path
                """, arguments: [id, id]).map(Self.track)
            return artist
        }
    }

    /// The folders within `folder` (with their tracks counted, all the way down) and its own tracks.
    func folder(_ folder: String) throws -> (folders: [(path: String, count: Int)], tracks: [LibraryTrack]) {
        try pool.read { db in
            // Every folder below: its path sorts after "folder/" and before "folder0" ('0' follows '/').
            var counts: [String: Int] = [:]
            let below = try Row.fetchCursor(db, sql: "SELECT folder, COUNT(*) FROM track WHERE folder > ? AND folder < ? GROUP BY folder",
                                            arguments: [folder + "/", folder + "0"])
            while let row = try below.next() {
                let path: String = row[0]
                let rest = path.dropFirst(folder.count + 1)
                let child = folder + "/" + (rest.split(separator: "/", maxSplits: 1).first.map(String.init) ?? String(rest))
                counts[child, default: 0] += row[1] as Int
            }
            let tracks = try Row.fetchAll(db, sql: "SELECT \(Self.trackColumns) FROM track WHERE folder = ? ORDER BY path", arguments: [folder])
                .map(Self.track)
            let folders = counts.map { (path: $0.key, count: $0.value) }
                .sorted { $0.path.localizedStandardCompare($1.path) == .orderedAscending }
            return (folders, tracks)
        }
    }

    /// Tracks counted under `folder` (itself included).
    func trackCount(under folder: String) throws -> Int {
        try pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE folder = ? OR (folder > ? AND folder < ?)",
                             arguments: [folder, folder + "/", folder + "0"]) ?? 0
        }
    }

    func tracks(ids: [Int64]) throws -> [Int64: LibraryTrack] {
        try pool.read { db in
            var found: [Int64: LibraryTrack] = [:]
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                for row in try Row.fetchAll(db, sql: "SELECT \(Self.trackColumns) FROM track WHERE id IN (\(marks))",
                                            arguments: StatementArguments(chunk)) {
                    let track = Self.track(row)
                    found[track.id] = track
                }
            }
            return found
        }
    }

    /// Where an album's art is: a cover image in its folder, else a track with a picture.
    func artSource(albumID: Int64) throws -> (cover: String?, track: String?)? {
        try pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT album.coverPath, track.path FROM album LEFT JOIN track ON track.id = album.artTrackId WHERE album.id = ?
                """, arguments: [albumID]).map { ($0[0], $0[1]) }
        }
    }

    /// The best matches of each kind for an FTS5 query.
    func search(match: String, limit: Int) throws -> (artists: [LibraryArtist], albums: [LibraryAlbum], tracks: [LibraryTrack]) {
        try pool.read { db in
            // Names weigh more than the words around them (a track's artist and album).
            func refs(_ table: SearchTable) throws -> [Int64] {
                let name = table.rawValue
                return try Int64.fetchAll(db, sql: """
                    SELECT ref FROM \(name) WHERE \(name) MATCH ? ORDER BY bm25(\(name), 10.0, 2.0, 4.0), length(name), name LIMIT ?
                    """, arguments: [match, limit])
            }
            func ordered<T>(_ ids: [Int64], _ sql: String, _ make: (Row) -> T, id: (T) -> Int64) throws -> [T] {
                guard !ids.isEmpty else { return [] }
                let marks = Array(repeating: "?", count: ids.count).joined(separator: ",")
                let found = try Row.fetchAll(db, sql: sql + " WHERE id IN (\(marks))", arguments: StatementArguments(ids)).map(make)
                let byID = Dictionary(found.map { (id($0), $0) }, uniquingKeysWith: { a, _ in a })
                return ids.compactMap { byID[$0] }
            }
            return (
                try ordered(try refs(.artists), "SELECT \(Self.artistColumns) FROM artist", Self.artist, id: \.id),
                try ordered(try refs(.albums), "SELECT \(Self.albumColumns) FROM album", Self.album, id: \.id),
                try ordered(try refs(.tracks), "SELECT \(Self.trackColumns) FROM track", Self.track, id: \.id)
            )
        }
    }

    // MARK: - Keys

    /// Text with its spaces trimmed, nil when nothing is left.
    static func cleaned(_ text: String?) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return text
    }

    /// Names that are one whatever their case, diacritics and spacing.
    static func key(_ name: String) -> String {
        name.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// An album is its title and album artist; without an album artist, its title in its
    /// folder (a compilation's tracks have many artists, one folder); without a title, its folder.
    static func albumKey(album: String?, albumArtist: String?, folder: String) -> String {
        switch (album, albumArtist) {
        case let (album?, artist?): "a\u{1}" + key(artist) + "\u{1}" + key(album)
        case let (album?, nil): "f\u{1}" + folder + "\u{1}" + key(album)
        default: "f\u{1}" + folder
        }
    }

    /// The FTS5 query for what a person typed: every word, as the start of a word; CJK
    /// characters as a phrase of them one by one (anywhere in a name: `otherForms`).
    static func match(_ query: String) -> String? {
        let words = query.split { !($0.isLetter || $0.isNumber) }
        guard !words.isEmpty else { return nil }
        var terms: [String] = []
        for word in words.prefix(16) {
            // A word's runs of CJK and of other letters.
            var run = "", cjk = false
            func flush() {
                guard !run.isEmpty else { return }
                let quoted = run.replacingOccurrences(of: "\"", with: "\"\"")
                terms.append(cjk ? "\"" + quoted.unicodeScalars.map { String($0) }.joined(separator: " ") + "\"" : "\"" + quoted + "\"*")
                run = ""
            }
            for character in word {
                let isCJK = character.unicodeScalars.first.map(Self.isCJK) ?? false
                if isCJK != cjk { flush(); cjk = isCJK }
                run.append(character)
            }
            flush()
        }
        return terms.joined(separator: " ")
    }
}
