import Foundation
import Synchronization
import Testing
import TuttiAPI
import TuttiCore
@testable import TuttiLibrary

/// The library over real folders and files on disk, a real SQLite index and real inotify;
/// only the tag reader is a table (the decoder's is tested with real files in the
/// integration tests).
@Suite("The music library")
struct MusicLibraryTests {
    /// A folder of music files, their tags in a table, and the library over it.
    final class Shelf: Sendable {
        let root: String
        let state: String
        let tags = Mutex<[String: ScannedTrack]>([:])
        let reads = Mutex<[String]>([])

        init() throws {
            let base = NSTemporaryDirectory() + "tutti-library-\(UUID().uuidString.prefix(8))"
            root = base + "/Music"
            state = base + "/state"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent) }

        /// Writes a file (its bytes make its size) with these tags; nil tags: not music.
        func put(_ relative: String, _ track: ScannedTrack?, bytes: Int = 100) throws {
            let path = root + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(repeating: 7, count: bytes).write(to: URL(fileURLWithPath: path))
            tags.withLock { $0[path] = track }
        }

        func library(watch: Bool = false) throws -> MusicLibrary {
            let reader = MusicLibrary.Reader(tags: { [self] path in
                reads.withLock { $0.append(path) }
                return tags.withLock { $0[path] }
            }, picture: { path in path.hasSuffix("embedded.mp3") ? ("image/png", [0x89, 0x50, 0x4E, 0x47]) : nil })
            return try MusicLibrary(folders: [root], database: state + "/library.sqlite", reader: reader, watch: watch)
        }
    }

    static func track(_ title: String, _ artist: String?, _ album: String?, albumArtist: String? = nil, number: Int? = nil,
                      year: Int? = nil, art: Bool = false) -> ScannedTrack {
        ScannedTrack(title: title, artist: artist, album: album, albumArtist: albumArtist, year: year, trackNumber: number,
                     duration: 180, hasArtwork: art)
    }

    static func fill(_ shelf: Shelf) throws {
        try shelf.put("Beyoncé/Lemonade/01 Pray You Catch Me.mp3", track("Pray You Catch Me", "Beyoncé", "Lemonade", number: 1, year: 2016))
        try shelf.put("Beyoncé/Lemonade/02 Hold Up.flac", Self.track("Hold Up", "Beyoncé", "Lemonade", number: 2, year: 2016))
        try shelf.put("Beyoncé/Lemonade/cover.jpg", nil)
        try shelf.put("Various/Now 1/01.mp3", track("Song A", "Artist A", "Now 1", number: 1))
        try shelf.put("Various/Now 1/02.mp3", track("Song B", "Artist B", "Now 1", number: 2))
        try shelf.put("Loose/untitled track.ogg", ScannedTrack())
        try shelf.put("Loose/notes.txt", nil)
        try shelf.put("Loose/broken.mp3", nil)
        try shelf.put("The Beatles/Abbey Road/01 Come Together.mp3",
                      track("Come Together", "The Beatles", "Abbey Road", albumArtist: "The Beatles", number: 1, year: 1969))
        try shelf.put("The Beatles/Abbey Road/embedded.mp3",
                      track("Something", "the beatles", "Abbey Road", albumArtist: "The Beatles", number: 2, year: 1969, art: true))
    }

    @Test func aScanMakesAlbumsAndArtistsFromTheTags() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        let scan = try library.scanNow()
        #expect(scan.added == 7 && scan.unreadable == 1 && scan.removed == 0)
        #expect(!shelf.reads.withLock { $0 }.contains { $0.hasSuffix(".txt") || $0.hasSuffix(".jpg") })
        let status = library.status()
        #expect(status.tracks == 7 && status.albums == 4 && status.folders == ["Music"])

        let albums = try library.albums()
        let titles = albums.map(\.title)
        #expect(Set(titles) == ["Lemonade", "Now 1", "Loose", "Abbey Road"])
        let now = try #require(albums.first { $0.title == "Now 1" })
        // Two artists, no album artist, one folder: one album, by various artists.
        #expect(now.artist == "Various Artists" && now.trackCount == 2)
        let lemonade = try library.album(id: try #require(albums.first { $0.title == "Lemonade" }).id)
        #expect(lemonade.artist == "Beyoncé" && lemonade.year == 2016 && lemonade.duration == 360)
        #expect(lemonade.tracks?.map(\.title) == ["Pray You Catch Me", "Hold Up"])
        #expect(lemonade.artworkURL == "/api/v1/library/albums/\(lemonade.id)/art")
        // A track without a title is called by its file; without an album, by its folder.
        let loose = try library.album(id: try #require(albums.first { $0.title == "Loose" }).id)
        #expect(loose.tracks?.map(\.title) == ["untitled track"] && loose.artworkURL == nil)

        // "The Beatles" and "the beatles" are one artist, with one album and two tracks.
        let beatles = try #require(try library.artists().first { $0.name == "The Beatles" })
        #expect(beatles.albumCount == 1 && beatles.trackCount == 2)
        let artist = try library.artist(id: beatles.id)
        #expect(artist.albums?.map(\.title) == ["Abbey Road"] && artist.otherTracks == [])
        let artistA = try #require(try library.artists().first { $0.name == "Artist A" })
        #expect(try library.artist(id: artistA.id).otherTracks?.map(\.title) == ["Song A"])
        #expect(throws: ControlError.self) { try library.album(id: 999_999) }
        #expect(throws: ControlError.self) { try library.artist(id: 999_999) }
    }

    @Test func searchFoldsCaseAndDiacriticsAndMatchesWordStarts() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        try library.scanNow()
        let beyonce = try library.search("beyonce", limit: 20)
        #expect(beyonce.artists.map(\.name) == ["Beyoncé"])
        #expect(Set(beyonce.tracks.map(\.title)) == ["Pray You Catch Me", "Hold Up"])
        #expect(beyonce.albums.map(\.title) == ["Lemonade"])
        #expect(try library.search("BEYONCÉ", limit: 20).artists.count == 1)
        // Part of a word, as a person types it; every word must match.
        #expect(try library.search("abb", limit: 20).albums.map(\.title) == ["Abbey Road"])
        #expect(try library.search("abbey come", limit: 20).tracks.map(\.title) == ["Come Together"])
        #expect(try library.search("abbey zzz", limit: 20).tracks.isEmpty)
        // The album named so comes before its tracks' other albums; limits hold.
        #expect(try library.search("now", limit: 1).tracks.count == 1)
        // What is not a word finds nothing, and FTS syntax is only text.
        #expect(try library.search("  -*\"  ", limit: 20).tracks.isEmpty)
        #expect(try library.search("title:\"x OR", limit: 20).tracks.isEmpty)
        #expect(throws: ControlError.self) { try library.search(String(repeating: "a", count: 300), limit: 20) }
    }

    @Test func aRescanReadsOnlyWhatChangedAndKeepsIDs() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        try library.scanNow()
        let before = try library.albums()
        let lemonade = try #require(before.first { $0.title == "Lemonade" })
        let holdUp = try #require(try library.album(id: lemonade.id).tracks?.last)
        shelf.reads.withLock { $0 = [] }

        // Nothing changed: nothing is read, not even the unreadable file.
        let quiet = try library.scanNow()
        #expect(shelf.reads.withLock { $0 }.isEmpty && quiet.added == 0 && quiet.updated == 0 && quiet.removed == 0)

        // A file retagged, one removed, one added, an .lrc beside one.
        try shelf.put("Beyoncé/Lemonade/02 Hold Up.flac", Self.track("Hold Up (Live)", "Beyoncé", "Lemonade", number: 2, year: 2016), bytes: 120)
        try FileManager.default.removeItem(atPath: shelf.root + "/Various/Now 1/02.mp3")
        try shelf.put("Various/Now 1/03.mp3", Self.track("Song C", "Artist A", "Now 1", number: 3))
        try shelf.put("Beyoncé/Lemonade/01 Pray You Catch Me.lrc", nil)
        let scan = try library.scanNow()
        #expect(scan.added == 1 && scan.updated == 1 && scan.removed == 1)
        #expect(Set(shelf.reads.withLock { $0 }.map { ($0 as NSString).lastPathComponent }) == ["02 Hold Up.flac", "03.mp3"])
        let again = try library.album(id: lemonade.id)
        #expect(again.tracks?.last?.id == holdUp.id && again.tracks?.last?.title == "Hold Up (Live)")
        #expect(again.tracks?.first?.hasLyrics == true && again.tracks?.last?.hasLyrics == false)
        #expect(try library.albums().map(\.id).sorted() == before.map(\.id).sorted())
        #expect(try library.search("song b", limit: 5).tracks.isEmpty)
        #expect(try library.search("song c", limit: 5).tracks.count == 1)
        // A file whose tags now say Artist A only: "Now 1" keeps its id.
        #expect(try library.albums().first { $0.title == "Now 1" }?.artist == "Artist A")

        // The music folder away (a disk not mounted): nothing is forgotten; back, nothing is read again.
        let aside = shelf.root + ".away"
        try FileManager.default.moveItem(atPath: shelf.root, toPath: aside)
        let away = try library.scanNow()
        #expect(away.removed == 0 && library.status().tracks == 7)
        try FileManager.default.moveItem(atPath: aside, toPath: shelf.root)
        shelf.reads.withLock { $0 = [] }
        #expect(try library.scanNow().added == 0 && shelf.reads.withLock { $0 }.isEmpty)

        // The whole album gone: the album and its artist go.
        try FileManager.default.removeItem(atPath: shelf.root + "/Beyoncé")
        try library.scanNow()
        #expect(try library.albums().allSatisfy { $0.title != "Lemonade" })
        #expect(try library.artists().allSatisfy { $0.name != "Beyoncé" })
        #expect(throws: ControlError.self) { try library.album(id: lemonade.id) }
    }

    @Test func theIndexSurvivesARestart() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let albums = try {
            let library = try shelf.library()
            try library.scanNow()
            return try library.albums()
        }()
        shelf.reads.withLock { $0 = [] }
        let reopened = try shelf.library()
        // Answers before any scan, from the index on disk.
        #expect(try reopened.albums() == albums)
        #expect(reopened.status().lastScan?.added == 7)
        try reopened.scanNow()
        #expect(shelf.reads.withLock { $0 }.isEmpty)
    }

    @Test func foldersAreShownUnderTheMusicFoldersOwnName() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        try library.scanNow()
        let top = try library.folder("")
        #expect(top.folders == [LibraryFolder.Entry(name: "Music", path: "Music", trackCount: 7)])
        let music = try library.folder("Music")
        #expect(music.folders.map(\.name) == ["Beyoncé", "Loose", "The Beatles", "Various"] && music.tracks.isEmpty)
        #expect(music.folders.first?.trackCount == 2)
        let album = try library.folder("Music/Beyoncé/Lemonade/")
        #expect(album.path == "Music/Beyoncé/Lemonade" && album.tracks.count == 2 && album.folders.isEmpty)
        for bad in ["Music/../..", "Elsewhere", "Music/Nothing", "/etc"] {
            #expect(throws: ControlError.self) { try library.folder(bad) }
        }
    }

    @Test func idsQueueTheirFilesAndAlbumsServeTheirArt() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        try library.scanNow()
        let albums = try library.albums()
        let road = try library.album(id: try #require(albums.first { $0.title == "Abbey Road" }).id)
        let ids = try #require(road.tracks?.map(\.id))
        #expect(try library.paths(of: ids.reversed()) == road.tracks?.reversed().map(\.path))
        #expect(throws: ControlError.self) { try library.paths(of: [ids[0], 424_242]) }
        // Abbey Road: no cover file, its (first) track with a picture gives it.
        #expect(try library.artwork(albumID: road.id).mimeType == "image/png")
        // Lemonade: cover.jpg is taken when it is an image, and refused when it is not one.
        let lemonade = try #require(albums.first { $0.title == "Lemonade" })
        #expect(throws: ControlError.self) { try library.artwork(albumID: lemonade.id) }
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0, count: 16)
        try Data(jpeg).write(to: URL(fileURLWithPath: shelf.root + "/Beyoncé/Lemonade/cover.jpg"))
        #expect(try library.artwork(albumID: lemonade.id).data == jpeg)
        // A cover that comes later is found by the next scan, though no music changed.
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0, count: 16)
        try Data(png).write(to: URL(fileURLWithPath: shelf.root + "/Various/Now 1/folder.png"))
        let now = try #require(albums.first { $0.title == "Now 1" })
        #expect(try library.album(id: now.id).artworkURL == nil)
        try library.scanNow()
        #expect(try library.album(id: now.id).artworkURL != nil)
        #expect(try library.artwork(albumID: now.id).data == png)
    }

    @Test func changesInTheFoldersAreSeenWithoutARescan() async throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library(watch: true)
        library.start()
        try await Self.until { library.status().tracks == 7 && !library.status().scanning }
        #expect(library.status().watching)
        // A new album copied in, in a new folder; then a file removed.
        try shelf.put("New/Album/01.mp3", Self.track("Fresh", "Someone", "Album"))
        try shelf.put("New/Album/02.mp3", Self.track("Fresher", "Someone", "Album"))
        // A scan writes its tracks, then albums, artists and the search index in a second
        // write: the tracks are counted a moment before a search finds them (a loaded CI
        // machine once searched in between).
        try await Self.until { library.status().tracks == 9 && (try? library.search("fresh", limit: 5).tracks.count) == 2 }
        try shelf.put("New/Album/Deeper/03.mp3", Self.track("Deepest", "Someone", "Album"))
        try await Self.until { library.status().tracks == 10 }
        try FileManager.default.removeItem(atPath: shelf.root + "/New")
        try await Self.until { library.status().tracks == 7 }
    }

    /// Waits (at most 20 s) for `condition`.
    static func until(_ condition: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(20)
        while try !condition() {
            guard Date() < deadline else {
                Issue.record("timed out")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Whatever a person (or a stranger) types, the search answers: never an error from the
    /// index, never a crash. Random text from every script, marks alone, emoji, controls.
    @Test func anyTextIsAQuery() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let library = try shelf.library()
        try library.scanNow()
        let pieces = ["\u{301}", "ǅ", "𝔘", "١٢٣", "ß", "İ", "ﬁ", "👩‍👩‍👧", "\u{0}", "\"", "*", "NEAR(", "^", ":", "-", "AND", "OR", "NOT",
                      "(", ")", "{", "}", "'", "Ω", "ё", "日本", "ｱ", "\u{200B}", "\u{FEFF}", "a", "é", "æ", " ", "\t", "\n"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...8, using: &generator)
            let query = (0..<count).map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(throws: Never.self, "\(query.unicodeScalars.map { String($0.value, radix: 16) })") {
                _ = try library.search(query, limit: 5)
            }
        }
    }

    @Test func aFolderNamedTwiceOrInsideAnotherIsWalkedOnce() throws {
        let shelf = try Shelf()
        try Self.fill(shelf)
        let reader = MusicLibrary.Reader(tags: { path in shelf.tags.withLock { $0[path] } }, picture: { _ in nil })
        let library = try MusicLibrary(folders: [shelf.root, shelf.root + "/", shelf.root + "/Beyoncé"],
                                       database: shelf.state + "/library.sqlite", reader: reader, watch: false)
        #expect(library.roots.map(\.name) == ["Music"])
        #expect(try library.scanNow().added == 7)
    }

    /// Japanese, Chinese and Korean titles are found by any part of them (their words have
    /// no spaces between), and a word with an apostrophe by the word without it.
    @Test func cjkTitlesAreFoundByAnyPartAndApostrophesMayBeLeftOut() throws {
        let shelf = try Shelf()
        try shelf.put("jp/01.mp3", Self.track("東京の雨", "椎名林檎", "音楽図鑑", number: 1))
        try shelf.put("zh/01.mp3", Self.track("月亮代表我的心", "邓丽君", "島國之情歌", number: 1))
        try shelf.put("ko/01.mp3", Self.track("봄날은간다", "김윤아", "유리가면", number: 1))
        try shelf.put("en/01.mp3", Self.track("That's Life", "Frank Sinatra", "That’s Life", number: 1))
        let library = try shelf.library()
        try library.scanNow()
        #expect(try library.search("雨", limit: 5).tracks.map(\.title) == ["東京の雨"])
        #expect(try library.search("図鑑", limit: 5).albums.map(\.title) == ["音楽図鑑"])
        #expect(try library.search("東京の雨", limit: 5).tracks.map(\.title) == ["東京の雨"])
        #expect(try library.search("代表", limit: 5).tracks.map(\.title) == ["月亮代表我的心"])
        #expect(try library.search("丽君", limit: 5).artists.map(\.name) == ["邓丽君"])
        #expect(try library.search("간다", limit: 5).tracks.map(\.title) == ["봄날은간다"])
        #expect(try library.search("雨 林檎", limit: 5).tracks.map(\.title) == ["東京の雨"])
        // The characters must come in order, side by side.
        #expect(try library.search("図楽", limit: 5).albums.isEmpty)
        #expect(try library.search("thats", limit: 5).tracks.map(\.title) == ["That's Life"])
        #expect(try library.search("thats", limit: 5).albums.map(\.title) == ["That’s Life"])
        #expect(try library.search("that's li", limit: 5).tracks.map(\.title) == ["That's Life"])
    }

    @Test func theQueryIsOnlyWords() {
        #expect(LibraryIndex.match("東京の雨 tokyo東京") == "\"東 京 の 雨\" \"tokyo\"* \"東 京\"")
        #expect(LibraryIndex.match("Abbey  road!") == "\"Abbey\"* \"road\"*")
        #expect(LibraryIndex.match("a\"b") == "\"a\"* \"b\"*")
        #expect(LibraryIndex.match("!!") == nil)
        #expect(LibraryIndex.key("  Beyoncé   KNOWLES ") == "beyonce knowles")
        #expect(LibraryIndex.spelledOut("Ágætis Straße") == "Ágaetis Strasse" && LibraryIndex.spelledOut("Élan") == "")
    }
}
