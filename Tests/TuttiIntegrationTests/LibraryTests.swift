import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet

extension IntegrationTests {
    /// The music library of a real coordinator: real files of several formats made by
    /// ffmpeg, their tags read by the coordinator's decoder, the index in its state folder,
    /// inotify, the API and `tutti ctl`.
    @Suite("Library: index, search, browse, queue by id")
    struct LibraryTests {
        /// A music folder: an album in FLAC with a cover image, an MP3 album of two artists
        /// without an album artist, an Opus single, a file that is not music.
        static func musicFolder(_ h: Harness) throws -> String {
            let music = h.path("Music")
            func make(_ relative: String, _ codec: [String], seconds: Int = 2, _ tags: [String: String]) throws {
                let path = music + "/" + relative
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                let metadata = tags.sorted { $0.key < $1.key }.flatMap { ["-metadata", "\($0.key)=\($0.value)"] }
                let made = try h.run("ffmpeg", ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds)",
                                                "-ac", "2"] + codec + metadata + [path])
                #expect(made.code == 0, "ffmpeg: \(made.err)")
            }
            let flac = ["-c:a", "flac"], mp3 = ["-c:a", "libmp3lame", "-b:a", "96k"], opus = ["-c:a", "libopus", "-b:a", "64k"]
            for (n, title) in ["Élan", "Second Wind", "Third Light"].enumerated() {
                try make("Sigur Test/Ágætis/0\(n + 1) \(title).flac", flac, seconds: 20,
                         ["title": title, "artist": "Sigur Test", "album": "Ágætis Byrjun", "album_artist": "Sigur Test",
                          "track": "\(n + 1)", "date": "1999"])
            }
            #expect(FileManager.default.createFile(atPath: music + "/Sigur Test/Ágætis/cover.png", contents: Data(Harness.tinyPNG)))
            try make("Mixes/Summer/01.mp3", mp3, ["title": "Beach", "artist": "Ann", "album": "Summer Mix", "track": "1"])
            try make("Mixes/Summer/02.mp3", mp3, ["title": "Boardwalk", "artist": "Bob", "album": "Summer Mix", "track": "2"])
            try make("Singles/single.opus", opus, ["title": "Lone Song", "artist": "Cara"])
            #expect(FileManager.default.createFile(atPath: music + "/Singles/broken.mp3", contents: Data("not music".utf8)))
            return music
        }

        func coordinator(_ h: Harness, _ name: String, music: String) throws -> ControlAPI {
            try h.tutti(name, ["coordinator", "--library", music, "--multicast", "off", "--clock-listen", "127.0.0.1:\(Harness.freePort())"])
            let api = try ControlAPI(h, coordinator: name)
            #expect(Harness.wait(timeout: 20) { (try? api.get("/library", as: LibraryStatus.self))?.lastScan != nil })
            return api
        }

        @Test func theCoordinatorIndexesSearchesAndQueuesItsMusic() throws {
            let h = try Harness("library")
            let music = try Self.musicFolder(h)
            let api = try coordinator(h, "coordinator", music: music)
            let status = try api.get("/library", as: LibraryStatus.self)
            #expect(status.tracks == 6 && status.albums == 3 && status.folders == ["Music"] && status.watching)
            #expect(status.lastScan?.unreadable == 1 && status.lastScan?.added == 6)

            // Albums with their album artist, year, lengths read by the decoder, and covers.
            let albums = try api.get("/library/albums", as: [LibraryAlbum].self)
            let agaetis = try #require(albums.first { $0.title == "Ágætis Byrjun" })
            #expect(agaetis.artist == "Sigur Test" && agaetis.year == 1999 && agaetis.trackCount == 3)
            #expect(abs(agaetis.duration - 60) < 0.2, "three 20 s tracks: \(agaetis.duration) s")
            #expect(albums.first { $0.title == "Summer Mix" }?.artist == "Various Artists")
            let cover = try ControlAPI(h).client.request("GET", try #require(agaetis.artworkURL))
            #expect(cover.status == 200 && cover.body == Harness.tinyPNG && cover.headers["content-type"] == "image/png")

            // Search: accents and case aside, word starts, every word; paths as file names only.
            let found = try api.get("/library/search?q=agaetis", as: LibrarySearch.self)
            #expect(found.albums.map(\.title) == ["Ágætis Byrjun"] && found.tracks.count == 3)
            #expect(try api.get("/library/search?q=ELAN", as: LibrarySearch.self).tracks.map(\.title) == ["Élan"])
            #expect(try api.get("/library/search?q=sum%20bo", as: LibrarySearch.self).tracks.map(\.title) == ["Boardwalk"])
            let open = try ControlAPI(h).call("GET", "/library/search?q=elan", token: .some(nil))
            #expect(open.status == 200 && open.body.contains("01 Élan.flac") && !open.body.contains(music))
            let owner = try api.call("GET", "/library/search?q=elan")
            #expect(owner.body.contains(#"Sigur Test\/Ágætis\/01 Élan.flac"#))
            #expect(try api.call("GET", "/library/search?q=x&limit=0").status == 400)
            #expect(try api.call("GET", "/library/albums/424242").status == 404)
            #expect(try api.call("GET", "/library/folders?path=Music/../../etc").status == 404)
            let artists = try api.get("/library/artists", as: [LibraryArtist].self)
            #expect(Set(artists.map(\.name)) == ["Sigur Test", "Ann", "Bob", "Cara", "Various Artists"])

            // Folders as the files lie, from the music folder's own name.
            let top = try api.get("/library/folders?path=Music", as: LibraryFolder.self)
            #expect(top.folders.map(\.name) == ["Mixes", "Sigur Test", "Singles"])
            let singles = try api.get("/library/folders?path=Music/Singles", as: LibraryFolder.self)
            #expect(singles.tracks.map(\.title) == ["Lone Song"] && singles.tracks.first?.artist == "Cara")

            // The album queued by id, to play now: the house plays its first track.
            let album = try api.get("/library/albums/\(agaetis.id)", as: LibraryAlbum.self)
            let ids = try #require(album.tracks?.map(\.id))
            #expect(album.tracks?.map(\.title) == ["Élan", "Second Wind", "Third Light"])
            let queued = try api.call("POST", "/queue", json: #"{"ids": \#(ids), "placement": "now"}"#)
            #expect(queued.status == 200, "\(queued.body)")
            #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying)?.title == "Élan" && (try? api.nowPlaying)?.state == .playing })
            #expect(try api.queue.items.map(\.title) == ["Élan", "Second Wind", "Third Light"])
            // The folder's cover is the playing track's artwork too.
            let art = try ControlAPI(h).client.request("GET", try #require(try api.nowPlaying.artworkURL))
            #expect(art.status == 200 && art.body == Harness.tinyPNG)
            // Ids it does not know change nothing; queueing needs the token.
            #expect(try api.call("POST", "/queue", json: #"{"ids": [\#(ids[0]), 999999]}"#).status == 404)
            #expect(try api.call("POST", "/queue", json: #"{"ids": [\#(ids[0])]}"#, token: .some(nil)).status == 401)
            #expect(try api.queue.items.count == 3)

            // tutti ctl searches and queues by id too; a coordinator started with only a
            // library does not go round (loop "once"), and its counts read as English.
            let server = try #require(h.controlURL())
            let info = try h.ctl(["library"], server: server)
            #expect(info.code == 0 && info.out.contains("6 tracks, 3 albums, 5 artists"), "\(info.out) \(info.err)")
            let albumList = try h.ctl(["library", "albums"], server: server)
            #expect(albumList.out.contains("· 1 track\n") && albumList.out.contains("· 3 tracks") && !albumList.out.contains(" 1 tracks"),
                    "\(albumList.out)")
            #expect(try api.nowPlaying.loopMode == .once)
            let ctl = try h.ctl(["library", "search", "lone"], server: server)
            #expect(ctl.code == 0 && ctl.out.contains("Lone Song — Cara"), "\(ctl.out) \(ctl.err)")
            let lone = try #require(try api.get("/library/search?q=lone", as: LibrarySearch.self).tracks.first)
            let added = try h.ctl(["library", "add", "\(lone.id)", "--next"], server: server)
            #expect(added.code == 0 && added.out.contains("2. Lone Song"), "\(added.out) \(added.err)")

            // A new file is seen without a rescan (inotify), and a removed one goes.
            try FileManager.default.copyItem(atPath: music + "/Singles/single.opus", toPath: music + "/Singles/copy of single.opus")
            #expect(Harness.wait(timeout: 15) { (try? api.get("/library", as: LibraryStatus.self))?.tracks == 7 })
            try FileManager.default.removeItem(atPath: music + "/Mixes")
            #expect(Harness.wait(timeout: 15) { (try? api.get("/library", as: LibraryStatus.self))?.tracks == 5 })
            #expect(try api.get("/library/albums", as: [LibraryAlbum].self).allSatisfy { $0.title != "Summer Mix" })

            // After a restart it answers from its index at once, with the same ids, reading nothing again.
            h.stop("coordinator")
            let again = try coordinator(h, "coordinator2", music: music)
            #expect(try again.get("/library/albums/\(agaetis.id)", as: LibraryAlbum.self).tracks?.map(\.id) == ids)
            #expect(!h.log("coordinator2").contains("new,"), "a restart read the files again: \(h.log("coordinator2"))")
        }

        @Test func aCoordinatorWithoutALibrarySaysHowToHaveOne() throws {
            let h = try Harness("nolibrary")
            try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", "127.0.0.1:\(Harness.freePort())"])
            let api = try ControlAPI(h)
            let answer = try api.call("GET", "/library/search?q=x")
            #expect(answer.status == 404 && answer.body.contains("--library"))
            #expect(try api.call("POST", "/queue", json: #"{"ids": [1]}"#).status == 404)
            #expect(try api.call("POST", "/queue", json: #"{"placement": "end"}"#).status == 400)
        }
    }
}
