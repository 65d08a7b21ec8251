import ArgumentParser
import Foundation
import TuttiAPI
import TuttiCore

/// `tutti ctl library ...`: the coordinator's music library: what it holds, search, albums,
/// artists and folders, queueing by id.
struct LibraryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "library", abstract: "Browse, search and queue the coordinator's music library.",
        subcommands: [Info.self, Search.self, Albums.self, Album.self, Artists.self, Artist.self, Folder.self, Add.self, Rescan.self],
        defaultSubcommand: Info.self)

    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "What the library holds, and its last scan.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let status = try options.client().get("/library", as: LibraryStatus.self)
            if options.json { return try printJSON(status) }
            print(LibraryCommand.describe(status))
        }
    }

    struct Search: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Artists, albums and tracks matching words (or their starts), case and accents aside.")
        @OptionGroup var options: CtlOptions
        @Option(help: "At most this many of each kind (1 to 200).") var limit = 10
        @Argument(help: "What to search for: words, or their starts.") var query: [String]
        func run() throws {
            let query = self.query.joined(separator: " ")
            let found = try options.client().get("/library/search?q=\(LibraryCommand.escaped(query))&limit=\(limit)", as: LibrarySearch.self)
            if options.json { return try printJSON(found) }
            if found.artists.isEmpty && found.albums.isEmpty && found.tracks.isEmpty { return print("nothing matches '\(query)'") }
            if !found.artists.isEmpty { print("artists:"); found.artists.forEach { print("  " + LibraryCommand.line($0)) } }
            if !found.albums.isEmpty { print("albums:"); found.albums.forEach { print("  " + LibraryCommand.line($0)) } }
            if !found.tracks.isEmpty { print("tracks:"); found.tracks.forEach { print("  " + LibraryCommand.line($0)) } }
        }
    }

    struct Albums: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every album, by artist.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let albums = try options.client().get("/library/albums", as: [LibraryAlbum].self)
            if options.json { return try printJSON(albums) }
            albums.forEach { print(LibraryCommand.line($0)) }
        }
    }

    struct Album: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An album and its tracks.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Its id (from albums or search).") var id: Int64
        func run() throws {
            let album = try options.client().get("/library/albums/\(id)", as: LibraryAlbum.self)
            if options.json { return try printJSON(album) }
            print(LibraryCommand.line(album))
            album.tracks?.forEach { print("  " + LibraryCommand.line($0)) }
        }
    }

    struct Artists: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every artist.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let artists = try options.client().get("/library/artists", as: [LibraryArtist].self)
            if options.json { return try printJSON(artists) }
            artists.forEach { print(LibraryCommand.line($0)) }
        }
    }

    struct Artist: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An artist's albums and tracks.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Its id (from artists or search).") var id: Int64
        func run() throws {
            let artist = try options.client().get("/library/artists/\(id)", as: LibraryArtist.self)
            if options.json { return try printJSON(artist) }
            print(LibraryCommand.line(artist))
            artist.albums?.forEach { print("  " + LibraryCommand.line($0)) }
            artist.otherTracks?.forEach { print("  " + LibraryCommand.line($0)) }
        }
    }

    struct Folder: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A folder of the library: the folders and tracks in it.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Its path, from the music folder's name (Music/Artist/Album); none: the music folders.") var path: String = ""
        func run() throws {
            let folder = try options.client().get("/library/folders?path=\(LibraryCommand.escaped(path))", as: LibraryFolder.self)
            if options.json { return try printJSON(folder) }
            folder.folders.forEach { print("\($0.path)/  (\(counted($0.trackCount, "track")))") }
            folder.tracks.forEach { print(LibraryCommand.line($0)) }
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue library tracks, or a whole album, by id.")
        @OptionGroup var options: CtlOptions
        @Option(help: "An album's id: its tracks, in order.") var album: Int64?
        @Flag(help: "Right after the current track, instead of at the end.") var next = false
        @Flag(help: "Right after the current track, and play the first of them now.") var now = false
        @Argument(help: "Track ids.") var ids: [Int64] = []
        func validate() throws {
            if ids.isEmpty && album == nil { throw ValidationError("name track ids, or --album ID") }
            if next && now { throw ValidationError("--next or --now, not both") }
        }
        func run() throws {
            let client = try options.client()
            var all = ids
            if let album { all = (try client.get("/library/albums/\(album)", as: LibraryAlbum.self).tracks ?? []).map(\.id) + all }
            let added = try client.send("POST", "/queue", body: AddRequest(ids: all, placement: now ? .now : next ? .afterCurrent : .end),
                                        as: [QueueEntry].self)
            if options.json { return try printJSON(added) }
            print("added \(counted(added.count, "track")):")
            for item in added { print("  \(item.index + 1). \(item.title ?? (item.path as NSString).lastPathComponent)") }
        }
    }

    struct Rescan: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Walk the music folders again now (new, changed and removed files).")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let status = try options.client().send("POST", "/library/rescan", as: LibraryStatus.self)
            if options.json { return try printJSON(status) }
            print("rescanning; " + LibraryCommand.describe(status))
        }
    }

    static func describe(_ status: LibraryStatus) -> String {
        var text = "\(counted(status.tracks, "track")), \(counted(status.albums, "album")), \(counted(status.artists, "artist")) in \(status.folders.joined(separator: ", "))"
        text += status.scanning ? " (scanning)" : ""
        text += status.watching ? "; changes followed" : "; changes seen at a rescan"
        if let scan = status.lastScan {
            text += String(format: "\nlast scan: %.2f s, %d new, %d changed, %d gone, %d unreadable", scan.seconds, scan.added, scan.updated,
                           scan.removed, scan.unreadable)
        }
        return text
    }

    static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    static func line(_ track: LibraryTrack) -> String {
        let number = track.trackNumber.map { "\($0). " } ?? ""
        let length = track.duration.map { " (\(clockText($0)))" } ?? ""
        return "[\(track.id)] \(number)\(track.title)" + (track.artist.map { " — \($0)" } ?? "") + length
    }

    static func line(_ album: LibraryAlbum) -> String {
        "[\(album.id)] \(album.title)" + (album.artist.map { " — \($0)" } ?? "") + (album.year.map { " (\($0))" } ?? "")
            + " · \(counted(album.trackCount, "track"))"
    }

    static func line(_ artist: LibraryArtist) -> String {
        "[\(artist.id)] \(artist.name) · \(counted(artist.albumCount, "album")), \(counted(artist.trackCount, "track"))"
    }
}
