import Foundation
import Hummingbird
import TuttiAPI
import TuttiCore

extension LibraryStatus: ResponseEncodable {}
extension LibrarySearch: ResponseEncodable {}
extension LibraryAlbum: ResponseEncodable {}
extension LibraryArtist: ResponseEncodable {}
extension LibraryFolder: ResponseEncodable {}

/// The music library (docs/api.md, "Library"): open to read like the rest, with file paths
/// cut to their names without the token; a rescan needs the token. Without a library (the
/// coordinator was given no music folder) every path answers 404 and says so.
enum LibraryRoutes {
    static func add(to api: RouterGroup<ControlContext>, library: (any LibraryService)?, gate: TokenGate) {
        let group = api.group("library")
        @Sendable func open() throws(ControlError) -> any LibraryService {
            guard let library else {
                throw ControlError.notFound("the coordinator has no music library: start it with --library FOLDER (or library = [...] in its configuration)")
            }
            return library
        }
        group.get { _, _ in try open().status() }
        group.get("search") { request, context -> LibrarySearch in
            let query = request.uri.queryParameters.get("q") ?? ""
            let limit = try number(request, "limit", default: 50, in: 1...200)
            return gate.shown(try open().search(query, limit: limit), request, context)
        }
        group.get("albums") { request, context in gate.shown(try open().albums(), request, context) }
        group.get("albums/:id") { request, context in
            gate.shown(try open().album(id: try context.parameters.require("id", as: Int64.self)), request, context)
        }
        group.get("albums/:id/art") { _, context -> Response in
            let art = try open().artwork(albumID: try context.parameters.require("id", as: Int64.self))
            // Served as the image its bytes are (never as the type a tag says), else not at all.
            guard let type = PictureKind.mimeType(of: art.data) else { throw ControlError.notFound("the album's artwork is not an image") }
            return Response(status: .ok, headers: [.contentType: type, .cacheControl: "max-age=3600"],
                            body: .init(byteBuffer: ByteBuffer(bytes: art.data)))
        }
        group.get("artists") { request, context in gate.shown(try open().artists(), request, context) }
        group.get("artists/:id") { request, context in
            gate.shown(try open().artist(id: try context.parameters.require("id", as: Int64.self)), request, context)
        }
        group.get("folders") { request, context in
            gate.shown(try open().folder(request.uri.queryParameters.get("path") ?? ""), request, context)
        }
        group.post("rescan") { request, context -> LibraryStatus in
            try gate.authorize(request, context)
            let library = try open()
            library.rescan()
            return library.status()
        }
    }

    /// An integer query parameter within `range`.
    static func number(_ request: Request, _ name: String, default value: Int, in range: ClosedRange<Int>) throws(ControlError) -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw .badRequest("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

extension LibraryTrack: Redactable {
    var withoutFolders: LibraryTrack {
        var copy = self
        copy.path = Redaction.fileName(path)
        return copy
    }
}

extension LibraryAlbum: Redactable {
    var withoutFolders: LibraryAlbum {
        var copy = self
        copy.tracks = tracks?.withoutFolders
        return copy
    }
}

extension LibraryArtist: Redactable {
    var withoutFolders: LibraryArtist {
        var copy = self
        copy.albums = albums?.withoutFolders
        copy.otherTracks = otherTracks?.withoutFolders
        return copy
    }
}

extension LibraryFolder: Redactable {
    var withoutFolders: LibraryFolder {
        var copy = self
        copy.tracks = tracks.withoutFolders
        return copy
    }
}

extension LibrarySearch: Redactable {
    var withoutFolders: LibrarySearch {
        var copy = self
        copy.tracks = tracks.withoutFolders
        copy.albums = albums.withoutFolders
        copy.artists = artists.withoutFolders
        return copy
    }
}
