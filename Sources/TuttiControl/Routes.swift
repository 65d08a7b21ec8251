import Foundation
import Hummingbird
import Synchronization
import TuttiAPI
import TuttiCore
import TuttiNet

extension NowPlaying: ResponseEncodable {}
extension QueueView: ResponseEncodable {}
extension QueueEntry: ResponseEncodable {}
extension RoomView: ResponseEncodable {}
extension Status: ResponseEncodable {}
extension MembersView: ResponseEncodable {}
extension SendspinPlayersView: ResponseEncodable {}
extension SendspinPairAnswer: ResponseEncodable {}
extension FeedbackEntry: ResponseEncodable {}
extension TrackLyrics: ResponseEncodable {}
extension PairingCode: ResponseEncodable {}
extension PairingAnswer: ResponseEncodable {}
extension ReplayGain: ResponseEncodable {}
extension ZoneView: ResponseEncodable {}
extension EventTicket: ResponseEncodable {}
extension CalibrationStarted: ResponseEncodable {}
extension CalibrationReport: ResponseEncodable {}

/// An empty success.
struct Done: ResponseEncodable {
    var ok = true
}

/// Changes need the house token: `Authorization: Bearer TOKEN`. An address that sent a wrong
/// token (or pairing code) 10 times in a minute is refused, whatever wrong token it sends,
/// until a minute after the first of those: guessing a 128-bit token was hopeless already,
/// now it is slow too. A request without a token is refused (401) and not counted: any web
/// page can make a browser send one (a cross-site form, which cannot carry a token), and the
/// owner's own address must not pay for it.
final class TokenGate: Sendable {
    let service: any ControlService
    private let limit = Mutex(FailedTokenLimit<String>())

    init(service: any ControlService) {
        self.service = service
    }

    /// Calls refused for too many failures so far.
    var refused: Int { limit.withLock { $0.refused } }

    /// Refuses an address that failed too often lately.
    func admit(_ context: ControlContext) throws(ControlError) {
        let now = SystemClock.hostNanoseconds()
        if let wait = limit.withLock({ $0.wait(for: context.peer, at: now) }) {
            throw ControlError(status: 429, "too many wrong tokens or codes from \(context.peer): try again in \(wait / 1_000_000_000 + 1) s")
        }
    }

    /// Counts a wrong token or pairing code against the address.
    func failed(_ context: ControlContext) {
        let now = SystemClock.hostNanoseconds()
        limit.withLock { $0.failed(context.peer, at: now) }
    }

    /// Whether a read carries the right token (it then sees whole file paths). A wrong one
    /// counts as a failure like a change's, so reads are no way around the limit.
    func isAuthorized(_ request: Request, _ context: ControlContext) -> Bool {
        guard request.headers[.authorization] != nil else { return false }
        return (try? authorize(request, context)) != nil
    }

    /// `value` as this reader may see it: whole paths with the token, file names without.
    func shown<T: Redactable>(_ value: T, _ request: Request, _ context: ControlContext) -> T {
        isAuthorized(request, context) ? value : value.withoutFolders
    }

    func authorize(_ request: Request, _ context: ControlContext) throws(ControlError) {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        guard !token.isEmpty else {
            throw ControlError(status: 401, "this call changes the house and needs its token: send 'Authorization: Bearer TOKEN' (tutti ctl reads it from the coordinator's state folder, --token or TUTTI_TOKEN)")
        }
        // A sender refused for its wrong tokens is refused whatever token it sends: checked
        // while refused, a guess would still be told right from wrong.
        try admit(context)
        guard service.authorizes(token: token) else {
            failed(context)
            throw ControlError(status: 403, "wrong token for this house")
        }
    }
}

/// A room's name from the path (`/rooms/Living%20Room`), percent-decoded as clients encode it.
func roomName(_ context: ControlContext) throws -> String {
    let raw = try context.parameters.require("name")
    guard let name = raw.removingPercentEncoding else {
        throw ControlError.badRequest("malformed room name in the path: '\(raw)' (percent-encode it as UTF-8)")
    }
    return name
}

/// The zone a route is for: `/api/v1/zones/{zone}/...` names it (percent-decoded), today's
/// paths the default zone (nil).
func zone(_ context: ControlContext) throws -> String? {
    guard let raw = context.parameters.get("zone") else { return nil }
    guard let name = raw.removingPercentEncoding else {
        throw ControlError.badRequest("malformed zone name in the path: '\(raw)' (percent-encode it as UTF-8)")
    }
    return name
}

/// Decodes a JSON body, saying what was wrong with it.
func body<T: Decodable>(_ type: T.Type, _ request: Request, _ context: ControlContext) async throws -> T {
    let buffer = try await request.body.collect(upTo: context.maxUploadSize)
    return try RequestBody.decode(T.self, Array(buffer.readableBytesView))
}

func describe(_ error: DecodingError) -> String {
    func path(_ context: DecodingError.Context) -> String {
        let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        return names.isEmpty ? "" : " at '\(names.joined(separator: "."))'"
    }
    switch error {
    case let .keyNotFound(key, context): return "missing field '\(key.stringValue)'\(path(context))"
    case let .typeMismatch(type, context): return "expected \(type)\(path(context))"
    case let .valueNotFound(type, context): return "missing \(type)\(path(context))"
    case let .dataCorrupted(context): return "\(context.debugDescription)\(path(context))"
    @unknown default: return "\(error)"
    }
}

/// Play, pause, next, seek...
enum TransportRoutes {
    static func add(to api: RouterGroup<ControlContext>, service: any ControlService, gate: TokenGate) {
        api.post("transport/:command") { request, context -> NowPlaying in
            try gate.authorize(request, context)
            let name = try context.parameters.require("command")
            let command: TransportCommand
            switch name {
            case "play": command = .play
            case "pause": command = .pause
            case "toggle": command = .toggle
            case "stop": command = .stop
            case "next": command = .next
            case "previous": command = .previous
            case "seek":
                command = try await body(SeekRequest.self, request, context).command()
            case "skip":
                command = try await body(SkipRequest.self, request, context).command()
            default:
                throw ControlError.notFound("unknown transport command '\(name)': use play, pause, toggle, stop, next, previous, seek or skip")
            }
            return try await service.transport(command, zone: try zone(context))
        }
        api.post("queue/play") { request, context -> NowPlaying in
            try gate.authorize(request, context)
            let index = try await body(PlayIndexRequest.self, request, context).index
            return try await service.transport(.playItem(index: index), zone: try zone(context))
        }
    }
}

/// What a zone plays, to read: open, whole file paths only with the token (`Redaction`).
enum ZoneReadRoutes {
    static func add(to api: RouterGroup<ControlContext>, service: any ControlService, gate: TokenGate) {
        api.get("status") { request, context in gate.shown(try await service.status(zone: try zone(context)), request, context) }
        api.get("now-playing") { request, context in gate.shown(try await service.nowPlaying(zone: try zone(context)), request, context) }
        api.get("queue") { request, context in gate.shown(try await service.queue(zone: try zone(context)), request, context) }
        api.get("lyrics") { request, context -> TrackLyrics in
            guard let lyrics = try await service.lyrics(itemID: nil, zone: try zone(context)) else {
                throw ControlError.conflict("nothing is playing or queued")
            }
            return gate.shown(lyrics, request, context)
        }
        api.get("lyrics/:id") { request, context -> TrackLyrics in
            let id = try context.parameters.require("id", as: Int.self)
            guard let lyrics = try await service.lyrics(itemID: id, zone: try zone(context)) else {
                throw ControlError.notFound("no queue item with id \(id)")
            }
            return gate.shown(lyrics, request, context)
        }
        api.get("artwork/:id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            // Served as the image its bytes are (never as the type the service says), else not at all.
            guard let art = try await service.artwork(itemID: id, zone: try zone(context)), let type = PictureKind.mimeType(of: art.data) else {
                throw ControlError.notFound("queue item \(id) has no artwork")
            }
            return Response(status: .ok, headers: [.contentType: type, .cacheControl: "max-age=3600"],
                            body: .init(byteBuffer: ByteBuffer(bytes: art.data)))
        }
    }
}

/// A zone's queue, loop mode, group volume, and feedback on what it plays.
enum QueueRoutes {
    static func add(to api: RouterGroup<ControlContext>, service: any ControlService, library: (any LibraryService)?, gate: TokenGate) {
        api.post("queue") { request, context -> [QueueEntry] in
            try gate.authorize(request, context)
            let add = try await body(AddRequest.self, request, context)
            var paths = add.paths
            if let ids = add.ids, !ids.isEmpty {
                guard let library else { throw ControlError.notFound("the coordinator has no music library: queue files by their paths") }
                paths += try await LibraryReads.run { () throws(ControlError) in try library.paths(of: ids) }
            }
            guard !paths.isEmpty else { throw ControlError.badRequest("paths and ids are empty: name files, folders or playlists, or library tracks") }
            return try await service.add(paths: paths, placement: add.placement ?? .end, zone: try zone(context))
        }
        api.delete("queue") { request, context -> Done in
            try gate.authorize(request, context)
            try await service.clearQueue(zone: try zone(context))
            return Done()
        }
        api.delete("queue/:id") { request, context -> Done in
            try gate.authorize(request, context)
            try await service.remove(itemID: try context.parameters.require("id", as: Int.self), zone: try zone(context))
            return Done()
        }
        api.post("queue/:id/move") { request, context -> Done in
            try gate.authorize(request, context)
            let id = try context.parameters.require("id", as: Int.self)
            try await service.move(itemID: id, to: try await body(MoveRequest.self, request, context).index, zone: try zone(context))
            return Done()
        }
        api.put("loop") { request, context -> NowPlaying in
            try gate.authorize(request, context)
            let zone = try zone(context)
            try await service.setLoopMode(try await body(LoopRequest.self, request, context).mode, zone: zone)
            return try await service.nowPlaying(zone: zone)
        }
        api.put("volume") { request, context -> NowPlaying in
            try gate.authorize(request, context)
            let zone = try zone(context)
            let volume = try await body(VolumeRequest.self, request, context)
            try await service.setGroup(volume: volume.volume.map { $0 / 100 }, muted: volume.muted, zone: zone)
            return try await service.nowPlaying(zone: zone)
        }
        api.post("feedback") { request, context -> FeedbackEntry in
            try gate.authorize(request, context)
            return try await service.recordFeedback(try await body(FeedbackRequest.self, request, context).kind, zone: try zone(context))
        }
    }
}

/// The house's: loudness, rooms, pairing, feedback entries.
enum HouseRoutes {
    static func add(to api: RouterGroup<ControlContext>, service: any ControlService, gate: TokenGate) {
        api.put("replaygain") { request, context -> ReplayGain in
            try gate.authorize(request, context)
            return try await service.setReplayGain(try await body(ReplayGainUpdate.self, request, context))
        }
        api.put("rooms/:name") { request, context -> RoomView in
            try gate.authorize(request, context)
            return try await service.updateRoom(try roomName(context), try await body(RoomUpdate.self, request, context))
        }
        api.delete("rooms/:name") { request, context -> Done in
            try gate.authorize(request, context)
            try await service.removeRoom(try roomName(context))
            return Done()
        }
        api.post("pairing") { request, context -> PairingCode in
            try gate.authorize(request, context)
            return try await service.openPairing()
        }
        // No token: the code is the credential. Wrong codes count against the sender too, and
        // so does asking while no code is open (a stranger waiting to spend the next one).
        api.post("pair") { request, context -> PairingAnswer in
            try gate.admit(context)
            let pairing = try await body(PairingRequest.self, request, context)
            do throws(ControlError) {
                return try await service.pair(pairing, from: context.peer)
            } catch {
                if error.status == 403 || error.status == 409 { gate.failed(context) }
                throw error
            }
        }
        api.get("members") { request, context -> MembersView in
            try gate.authorize(request, context)
            return await service.members()
        }
        api.put("members/enrolment") { request, context -> MembersView in
            try gate.authorize(request, context)
            return try await service.setEnrolment(try await body(EnrolmentUpdate.self, request, context).open)
        }
        api.delete("members/:member") { request, context -> MembersView in
            try gate.authorize(request, context)
            let member = try context.parameters.require("member")
            return try await service.revokeMember(member.removingPercentEncoding ?? member)
        }
        api.get("sendspin/players") { request, context -> SendspinPlayersView in
            try gate.authorize(request, context)
            return try await service.sendspinPlayers()
        }
        api.delete("sendspin/players/:player") { request, context -> SendspinPlayersView in
            try gate.authorize(request, context)
            let player = try context.parameters.require("player")
            return try await service.unpairSendspin(player.removingPercentEncoding ?? player)
        }
        api.post("sendspin/pair") { request, context -> SendspinPairAnswer in
            try gate.authorize(request, context)
            return try await service.pairSendspin(try await body(SendspinPairRequest.self, request, context))
        }
        api.post("calibration") { request, context -> CalibrationStarted in
            try gate.authorize(request, context)
            let bytes = Array(try await request.body.collect(upTo: context.maxUploadSize).readableBytesView)
            return try await service.startCalibration(bytes.isEmpty ? CalibrationRequest() : try RequestBody.decode(CalibrationRequest.self, bytes))
        }
        // The recording: mono 32-bit float samples (little-endian) at 48 kHz, as the body.
        api.post("calibration/:id/recording") { request, context -> CalibrationReport in
            try gate.authorize(request, context)
            let id = try context.parameters.require("id")
            let apply = request.uri.queryParameters.get("apply").map { $0 == "true" || $0 == "1" } ?? false
            let by = request.uri.queryParameters.get("by") ?? "api"
            let buffer = try await request.body.collect(upTo: Calibration.maximumRecordingBytes)
            let bytes = buffer.readableBytesView
            guard bytes.count % 4 == 0 else {
                throw ControlError.badRequest("the recording must be 32-bit float samples (little-endian), not \(bytes.count) bytes")
            }
            let samples = Calibration.samples(Array(bytes))
            return try await service.finishCalibration(id, recording: samples, apply: apply, by: by)
        }
        api.post("calibration/:id/apply") { request, context -> CalibrationReport in
            try gate.authorize(request, context)
            return try await service.applyCalibration(try context.parameters.require("id"), by: request.uri.queryParameters.get("by") ?? "api")
        }
        api.delete("feedback/:id") { request, context -> Done in
            try gate.authorize(request, context)
            try await service.removeFeedback(id: try context.parameters.require("id", as: Int.self))
            return Done()
        }
    }
}

/// The zones: listed, made, renamed, removed, merged.
enum ZoneRoutes {
    static func add(to api: RouterGroup<ControlContext>, service: any ControlService, gate: TokenGate) {
        api.get("zones") { request, context in gate.shown(await service.zones(), request, context) }
        // A zone may be named "party": the static route beside the parameter would take its
        // path for every method, so its own reads and changes are routed to it by name.
        for (path, named) in [("zones/:zone", nil as String?), ("zones/party", "party")] {
            @Sendable func name(_ context: ControlContext) throws -> String? { try named ?? zone(context) }
            api.get(RouterPath(path)) { request, context -> ZoneView in
                let id = try await service.nowPlaying(zone: try name(context)).zone
                guard let found = await service.zones().first(where: { $0.id == id }) else { throw ControlError.notFound("no such zone") }
                return gate.shown(found, request, context)
            }
            api.put(RouterPath(path)) { request, context -> ZoneView in
                try gate.authorize(request, context)
                return try await service.renameZone(try name(context) ?? "", to: try await body(ZoneRequest.self, request, context).name)
            }
            api.delete(RouterPath(path)) { request, context -> Done in
                try gate.authorize(request, context)
                try await service.removeZone(try name(context) ?? "")
                return Done()
            }
        }
        api.post("zones") { request, context -> ZoneView in
            try gate.authorize(request, context)
            return try await service.addZone(try await body(ZoneRequest.self, request, context).name)
        }
        api.post("zones/party") { request, context -> ZoneView in
            try gate.authorize(request, context)
            // The body may be left out: the default zone.
            let bytes = Array(try await request.body.collect(upTo: context.maxUploadSize).readableBytesView)
            let party = bytes.isEmpty ? PartyRequest() : try RequestBody.decode(PartyRequest.self, bytes)
            return try await service.party(zone: party.zone)
        }
    }
}

enum Calibration {
    /// A calibration's recording, at most: a minute of mono float samples at 48 kHz.
    static let maximumRecordingBytes = 60 * 48_000 * 4

    /// 32-bit little-endian floats.
    static func samples(_ bytes: [UInt8]) -> [Float] {
        var out = [Float](repeating: 0, count: bytes.count / 4)
        for i in out.indices {
            let b0 = UInt32(bytes[4 * i]), b1 = UInt32(bytes[4 * i + 1]), b2 = UInt32(bytes[4 * i + 2]), b3 = UInt32(bytes[4 * i + 3])
            out[i] = Float(bitPattern: b0 | b1 << 8 | b2 << 16 | b3 << 24)
        }
        return out
    }
}

/// Every error becomes `{"error": "what was wrong"}` with its status.
struct ErrorMiddleware: RouterMiddleware {
    func handle(_ request: Request, context: ControlContext,
                next: (Request, ControlContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ControlError {
            return Self.json(error.status, error.message)
        } catch let error as DecodingError {
            return Self.json(400, "malformed request: \(describe(error))")
        } catch let error as any HTTPResponseError {
            let message: String
            switch error.status.code {
            case 404: message = "no such endpoint: \(request.method) \(request.uri.path) (see docs/api.md)"
            case 405: message = "\(request.method) is not allowed on \(request.uri.path)"
            case 413:
                let limit = request.uri.path.hasSuffix("/recording") ? Calibration.maximumRecordingBytes : context.maxUploadSize
                message = "request body too large (at most \(limit) bytes)"
            default: message = (error as? HTTPError)?.body ?? error.status.reasonPhrase
            }
            return Self.json(error.status.code, message)
        }
    }

    static func json(_ status: Int, _ message: String) -> Response {
        let data = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return Response(status: .init(code: status), headers: [.contentType: "application/json; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
