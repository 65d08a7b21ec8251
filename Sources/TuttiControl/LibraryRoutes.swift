import Dispatch
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
/// coordinator was given no music folder) every path answers 404 and says so. The library
/// reads its index (and an album's art, its files) on threads of its own (`LibraryReads`),
/// never on Swift concurrency's pool.
enum LibraryRoutes {
    static func add(to api: RouterGroup<ControlContext>, library: (any LibraryService)?, gate: TokenGate) {
        let group = api.group("library")
        @Sendable func open() throws(ControlError) -> any LibraryService {
            guard let library else {
                throw ControlError.notFound("the coordinator has no music library: start it with --library FOLDER (or library = [...] in its configuration)")
            }
            return library
        }
        group.get { _, _ in try await LibraryReads.run { () throws(ControlError) in try open().status() } }
        group.get("search") { request, context -> LibrarySearch in
            let query = request.uri.queryParameters.get("q") ?? ""
            let limit = try number(request, "limit", default: 50, in: 1...200)
            return gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().search(query, limit: limit) }, request, context)
        }
        group.get("albums") { request, context in
            gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().albums() }, request, context)
        }
        group.get("albums/:id") { request, context in
            let id = try context.parameters.require("id", as: Int64.self)
            return gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().album(id: id) }, request, context)
        }
        group.get("albums/:id/art") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int64.self)
            let art = try await LibraryReads.run { () throws(ControlError) in try open().artwork(albumID: id) }
            // Served as the image its bytes are (never as the type a tag says), else not at all.
            guard let type = PictureKind.mimeType(of: art.data) else { throw ControlError.notFound("the album's artwork is not an image") }
            return Response(status: .ok, headers: [.contentType: type, .cacheControl: "max-age=3600"],
                            body: .init(byteBuffer: ByteBuffer(bytes: art.data)))
        }
        group.get("artists") { request, context in
            gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().artists() }, request, context)
        }
        group.get("artists/:id") { request, context in
            let id = try context.parameters.require("id", as: Int64.self)
            return gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().artist(id: id) }, request, context)
        }
        group.get("folders") { request, context in
            let path = request.uri.queryParameters.get("path") ?? ""
            return gate.shown(try await LibraryReads.run { () throws(ControlError) in try open().folder(path) }, request, context)
        }
        group.post("rescan") { request, context -> LibraryStatus in
            try gate.authorize(request, context)
            return try await LibraryReads.run { () throws(ControlError) in
                let library = try open()
                library.rescan()
                return library.status()
            }
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

/// Where the library's reads run: threads of their own (a concurrent queue), which the
/// route awaits, so that a read of the index or of a file never holds a thread of Swift
/// concurrency's pool.
enum LibraryReads {
    static let queue = DispatchQueue(label: "tutti.library.read", attributes: .concurrent)

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(ControlError) -> T) async throws(ControlError) -> T {
        let result: Result<T, ControlError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(ControlError) -> T in try body() }) }
        }
        return try result.get()
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
