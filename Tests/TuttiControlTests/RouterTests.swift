import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing
import TuttiAPI
@testable import TuttiControl
import TuttiCore

/// The control API's routes in memory (HummingbirdTesting's router mode: no socket): each
/// endpoint's status, body and what reached the house, and each kind of refusal.
@Suite("Control API routes")
struct RouterTests {
    static let token = "s3cret-token"
    static let auth: HTTPFields = [.authorization: "Bearer \(token)"]

    /// Runs `body` against a router over a `FakeHouse`.
    func withRouter(_ body: @escaping @Sendable (FakeHouse, any TestClientProtocol) async throws -> Void) async throws {
        let house = FakeHouse()
        let server = ControlServer(service: house, configuration: .init())
        let app = Application(router: server.makeRouter())
        try await app.test(.router) { client in try await body(house, client) }
    }

    func json<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
    }

    func message(_ response: TestResponse) -> String {
        (try? JSONDecoder().decode([String: String].self, from: Data(buffer: response.body)))?["error"] ?? String(buffer: response.body)
    }

    @Test func readsAreOpenAndShowFileNamesOnlyWithoutTheToken() async throws {
        try await withRouter { _, client in
            for path in ["status", "now-playing", "queue", "rooms", "feedback"] {
                let response = try await client.execute(uri: "/api/v1/\(path)", method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true, "\(path)")
            }
            let open = try await client.execute(uri: "/api/v1/queue", method: .get)
            #expect(try json(QueueView.self, open).items.map(\.path) == ["song.mp3"])
            let member = try await client.execute(uri: "/api/v1/queue", method: .get, headers: Self.auth)
            #expect(try json(QueueView.self, member).items.map(\.path) == ["/music/album/song.mp3"])
            let playing = try await client.execute(uri: "/api/v1/now-playing", method: .get)
            #expect(try json(NowPlaying.self, playing).path == "song.mp3")
        }
    }

    /// Calibration: begun with or without a body, its recording taken as little-endian
    /// floats up to a minute; a body that is not floats, an unknown id, a recording past its
    /// limit and a caller without the token are each refused with what was wrong.
    @Test func calibrationTakesItsRecordingAsFloatsAndRefusesTheRest() async throws {
        try await withRouter { house, client in
            let begun = try await client.execute(uri: "/api/v1/calibration", method: .post, headers: Self.auth)
            #expect(try begun.status == .ok && json(CalibrationStarted.self, begun).id == "c1")
            let named = try await client.execute(uri: "/api/v1/calibration", method: .post, headers: Self.auth,
                                                 body: ByteBuffer(string: #"{"rooms": ["kitchen"], "level": 0.5}"#))
            #expect(named.status == .ok)
            let samples: [Float] = [0.25, -1, 0.5]
            var bytes: [UInt8] = []
            for v in samples { withUnsafeBytes(of: v.bitPattern.littleEndian) { bytes += $0 } }
            let sent = try await client.execute(uri: "/api/v1/calibration/c1/recording?apply=true&by=web", method: .post, headers: Self.auth,
                                                body: ByteBuffer(bytes: bytes))
            #expect(try sent.status == .ok && json(CalibrationReport.self, sent).applied)
            let applied = try await client.execute(uri: "/api/v1/calibration/c1/apply?by=web", method: .post, headers: Self.auth)
            #expect(applied.status == .ok)
            #expect(house.commands == ["calibrate [] -1.0", "calibrate [\"kitchen\"] 0.5", "recording 3 0.25 true web", "apply c1 web"])
            let odd = try await client.execute(uri: "/api/v1/calibration/c1/recording", method: .post, headers: Self.auth,
                                               body: ByteBuffer(bytes: [1, 2, 3]))
            #expect(odd.status == .badRequest && message(odd).contains("32-bit float"), "\(message(odd))")
            let unknown = try await client.execute(uri: "/api/v1/calibration/nope/recording", method: .post, headers: Self.auth,
                                                   body: ByteBuffer(bytes: bytes))
            #expect(unknown.status == .notFound)
            let huge = try await client.execute(uri: "/api/v1/calibration/c1/recording", method: .post, headers: Self.auth,
                                                body: ByteBuffer(repeating: 0, count: Calibration.maximumRecordingBytes + 4))
            #expect(huge.status == .contentTooLarge && message(huge).contains("\(Calibration.maximumRecordingBytes)"), "\(message(huge))")
            let stranger = try await client.execute(uri: "/api/v1/calibration", method: .post)
            #expect(stranger.status == .unauthorized)
            #expect(house.commands.count == 4)
        }
    }

    @Test func pagesAreServed() async throws {
        try await withRouter { _, client in
            for path in ["/", "/lyrics"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                let page = String(buffer: response.body)
                #expect(page.contains("<html"))
                // No inline script may run: the policy allows none, and the page has none.
                let policy = response.headers[.contentSecurityPolicy] ?? ""
                #expect(policy.contains("script-src 'self';") && !policy.contains("unsafe-inline"), "\(policy)")
                #expect(!page.contains("<script>") && !page.contains("<style") && !page.contains(" style=") && !page.contains(" onclick="))
                // Every file the page loads is served, as what it is.
                let loads = page.matches(of: /(?:src|href)="(\/[^"]*)"/).map { String($0.output.1) }
                #expect(loads.count >= 2, "\(path) loads \(loads)")
                for file in loads {
                    let asset = try await client.execute(uri: file, method: .get)
                    #expect(asset.status == .ok, "\(file)")
                    let type = asset.headers[.contentType] ?? ""
                    let expected = file.hasSuffix(".js") ? "text/javascript" : file.hasSuffix(".css") ? "text/css"
                        : file.hasSuffix(".svg") ? "image/svg+xml" : "application/manifest+json"
                    #expect(type.hasPrefix(expected), "\(file): \(type)")
                    #expect(asset.body.readableBytes > 100, "\(file)")
                }
            }
            #expect(try await client.execute(uri: "/nowhere", method: .get).status == .notFound)
        }
    }

    /// The library's routes over a library of three tracks: open reads with file names only,
    /// the token for a rescan, queueing by id in order; without a library, 404s that say why.
    @Test func theLibraryIsReadOpenlyAndQueuedByID() async throws {
        let library = FakeLibrary()
        var configuration = ControlServer.Configuration()
        configuration.library = library
        let house = FakeHouse()
        let app = Application(router: ControlServer(service: house, configuration: configuration).makeRouter())
        try await app.test(.router) { client in
            let open = try await client.execute(uri: "/api/v1/library/search?q=song", method: .get)
            #expect(open.status == .ok)
            let found = try json(LibrarySearch.self, open)
            #expect(found.tracks.map(\.path) == ["1.flac", "2.flac"] && library.asked.withLock { $0 } == ["song"])
            let owner = try await client.execute(uri: "/api/v1/library/albums/1", method: .get, headers: Self.auth)
            #expect(try json(LibraryAlbum.self, owner).tracks?.first?.path == "/music/a/1.flac")
            #expect(try await client.execute(uri: "/api/v1/library/search?q=x&limit=500", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/api/v1/library/albums/x", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/api/v1/library/albums/9", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/api/v1/library/rescan", method: .post).status == .unauthorized)
            #expect(try await client.execute(uri: "/api/v1/library/rescan", method: .post, headers: Self.auth).status == .ok)
            #expect(library.rescans.withLock { $0 } == 1)
            let art = try await client.execute(uri: "/api/v1/library/albums/1/art", method: .get)
            #expect(art.status == .ok && art.headers[.contentType] == "image/png")

            let body = ByteBuffer(string: #"{"ids": [3, 1], "placement": "now"}"#)
            let queued = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth, body: body)
            #expect(queued.status == .ok)
            #expect(house.commands.last == "add /music/b/3.flac /music/a/1.flac now")
            let unknown = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth,
                                                   body: ByteBuffer(string: #"{"ids": [1, 77]}"#))
            #expect(unknown.status == .notFound && message(unknown).contains("77"))
            let both = try await client.execute(uri: "/api/v1/zones/kitchen/queue", method: .post, headers: Self.auth,
                                                body: ByteBuffer(string: #"{"paths": ["/x.mp3"], "ids": [2]}"#))
            #expect(both.status == .ok && house.commands.last == "add /x.mp3 /music/a/2.flac end @kitchen")
        }
        try await withRouter { house, client in
            let none = try await client.execute(uri: "/api/v1/library/albums", method: .get)
            #expect(none.status == .notFound && message(none).contains("--library"))
            let ids = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth, body: ByteBuffer(string: #"{"ids": [1]}"#))
            #expect(ids.status == .notFound)
            let empty = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth, body: ByteBuffer(string: #"{"ids": []}"#))
            #expect(empty.status == .badRequest && house.commands.isEmpty)
        }
    }

    @Test func changesNeedTheHouseToken() async throws {
        try await withRouter { house, client in
            let none = try await client.execute(uri: "/api/v1/transport/play", method: .post)
            #expect(none.status == .unauthorized)
            #expect(message(none).contains("needs its token"))
            let wrong = try await client.execute(uri: "/api/v1/transport/play", method: .post, headers: [.authorization: "Bearer nope"])
            #expect(wrong.status == .forbidden)
            #expect(house.commands.isEmpty, "a refused call reaches nothing")
            let right = try await client.execute(uri: "/api/v1/transport/play", method: .post, headers: Self.auth)
            #expect(right.status == .ok)
            #expect(house.commands == ["transport play"])
        }
    }

    @Test func tooManyWrongTokensAreRefusedForAWhile() async throws {
        try await withRouter { house, client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<12 {
                statuses.append(try await client.execute(uri: "/api/v1/transport/play", method: .post,
                                                         headers: [.authorization: "Bearer nope"]).status)
            }
            #expect(statuses.first == .forbidden)
            #expect(statuses.last == .tooManyRequests, "\(statuses)")
            let right = try await client.execute(uri: "/api/v1/transport/play", method: .post, headers: Self.auth)
            #expect(right.status == .tooManyRequests, "the right token waits its turn too")
            #expect(house.commands.isEmpty)
        }
    }

    /// Any web page can make its visitor's browser POST without the token (a cross-site form
    /// cannot carry one): such refusals are not counted, so they never lock the owner's own
    /// address out.
    @Test func refusalsWithoutATokenDoNotCountAgainstTheAddress() async throws {
        try await withRouter { house, client in
            for _ in 0..<30 {
                let none = try await client.execute(uri: "/api/v1/transport/play", method: .post, headers: [.contentType: "text/plain"],
                                                    body: ByteBuffer(string: "x"))
                #expect(none.status == .unauthorized)
            }
            let right = try await client.execute(uri: "/api/v1/transport/play", method: .post, headers: Self.auth)
            #expect(right.status == .ok, "the owner is not refused for a page's requests")
            #expect(house.commands == ["transport play"])
        }
    }

    @Test func transportCommandsReachTheHouse() async throws {
        try await withRouter { house, client in
            for name in ["play", "pause", "toggle", "stop", "next", "previous"] {
                #expect(try await client.execute(uri: "/api/v1/transport/\(name)", method: .post, headers: Self.auth).status == .ok)
            }
            let seek = try await client.execute(uri: "/api/v1/transport/seek", method: .post, headers: Self.auth,
                                                body: ByteBuffer(string: #"{"position": 42.5}"#))
            #expect(seek.status == .ok)
            let skip = try await client.execute(uri: "/api/v1/transport/skip", method: .post, headers: Self.auth,
                                                body: ByteBuffer(string: #"{"seconds": -10}"#))
            #expect(skip.status == .ok)
            let item = try await client.execute(uri: "/api/v1/queue/play", method: .post, headers: Self.auth,
                                                body: ByteBuffer(string: #"{"index": 0}"#))
            #expect(item.status == .ok)
            #expect(house.commands == ["transport play", "transport pause", "transport toggle", "transport stop", "transport next",
                                       "transport previous", "transport seek(to: 2040000 frames)", "transport skip(by: -480000 frames)",
                                       "transport playItem(index: 0)"])
        }
    }

    /// What plays is per zone: today's paths are the default zone's, the same paths under
    /// /zones/{zone}/ a zone's (by name or id, percent-encoded); an unknown zone is a 404.
    @Test func zonePathsAndZoneEndpointsReachTheHouse() async throws {
        try await withRouter { house, client in
            func call(_ uri: String, _ method: HTTPRequest.Method, _ body: String? = nil) async throws -> TestResponse {
                try await client.execute(uri: uri, method: method, headers: Self.auth, body: body.map { ByteBuffer(string: $0) })
            }
            #expect(try await call("/api/v1/zones/kitchen/transport/play", .post).status == .ok)
            #expect(try await call("/api/v1/zones/Kitchen/queue", .post, #"{"paths": ["/music/a.mp3"]}"#).status == .ok)
            #expect(try await call("/api/v1/zones/kitchen/volume", .put, #"{"volume": 50}"#).status == .ok)
            #expect(try await call("/api/v1/zones/kitchen/loop", .put, #"{"mode": "all"}"#).status == .ok)
            #expect(try await call("/api/v1/zones/kitchen/queue", .delete).status == .ok)
            let np = try await client.execute(uri: "/api/v1/zones/kitchen/now-playing", method: .get)
            #expect(try json(NowPlaying.self, np).zone == "kitchen")
            #expect(try json(NowPlaying.self, try await client.execute(uri: "/api/v1/now-playing", method: .get)).zone == "default")
            let unknown = try await client.execute(uri: "/api/v1/zones/garage/queue", method: .get)
            #expect(unknown.status == .notFound && message(unknown).contains("garage"))
            #expect(try await call("/api/v1/zones/garage/transport/play", .post).status == .notFound)

            let zones = try json([ZoneView].self, try await client.execute(uri: "/api/v1/zones", method: .get))
            #expect(zones.map(\.id) == ["default", "kitchen"])
            #expect(zones[0].nowPlaying.path == "song.mp3", "file names only without the token")
            #expect(try json(ZoneView.self, try await client.execute(uri: "/api/v1/zones/kitchen", method: .get)).rooms == ["kitchen"])
            #expect(try await call("/api/v1/zones", .post, #"{"name": "Garden"}"#).status == .ok)
            let taken = try await call("/api/v1/zones", .post, #"{"name": "Kitchen"}"#)
            #expect(taken.status == .conflict)
            #expect(try await client.execute(uri: "/api/v1/zones", method: .post, body: ByteBuffer(string: #"{"name": "x"}"#)).status == .unauthorized)
            #expect(try await call("/api/v1/zones/kitchen", .put, #"{"name": "Cuisine"}"#).status == .ok)
            #expect(try await call("/api/v1/rooms/kitchen", .put, #"{"zone": "default"}"#).status == .ok)
            #expect(try await call("/api/v1/zones/party", .post).status == .ok)
            #expect(try await call("/api/v1/zones/party", .post, #"{"zone": "kitchen"}"#).status == .ok)
            #expect(try await call("/api/v1/zones/default", .delete).status == .conflict)
            #expect(try await call("/api/v1/zones/kitchen", .delete).status == .ok)
            #expect(house.commands == ["transport play @kitchen", "add /music/a.mp3 end @kitchen", "volume 0.5 nil @kitchen", "loop all @kitchen",
                                       "clear @kitchen", "add zone Garden", "add zone Kitchen",
                                       "rename zone @kitchen to Cuisine", "room kitchen to default", "party", "party @kitchen",
                                       "remove zone @default", "remove zone @kitchen"])
        }
    }

    /// A zone may be named like a route beside its own (`party`): it is read, steered,
    /// renamed and removed at /zones/party like any other; POST /zones/party stays the party.
    @Test func aZoneNamedPartyIsAZoneLikeAnyOther() async throws {
        try await withRouter { house, client in
            func call(_ uri: String, _ method: HTTPRequest.Method, _ body: String? = nil) async throws -> TestResponse {
                try await client.execute(uri: uri, method: method, headers: Self.auth, body: body.map { ByteBuffer(string: $0) })
            }
            let np = try await client.execute(uri: "/api/v1/zones/party/now-playing", method: .get)
            #expect(np.status == .ok, "\(message(np))")
            #expect(try await call("/api/v1/zones/party/transport/play", .post).status == .ok)
            let zone = try await client.execute(uri: "/api/v1/zones/party", method: .get)
            #expect(zone.status == .ok, "\(message(zone))")
            #expect(try await call("/api/v1/zones/party", .put, #"{"name": "Fête"}"#).status == .ok)
            #expect(try await call("/api/v1/zones/party", .delete).status == .ok)
            #expect(house.commands == ["transport play @party", "rename zone @party to Fête", "remove zone @party"])
        }
    }

    @Test func badRequestsGetAClearError() async throws {
        try await withRouter { house, client in
            let unknown = try await client.execute(uri: "/api/v1/transport/rewind", method: .post, headers: Self.auth)
            #expect(unknown.status == .notFound)
            #expect(message(unknown).contains("unknown transport command 'rewind'"))
            let malformed = try await client.execute(uri: "/api/v1/transport/seek", method: .post, headers: Self.auth,
                                                     body: ByteBuffer(string: "{position"))
            #expect(malformed.status == .badRequest)
            #expect(message(malformed).hasPrefix("malformed request"))
            let missing = try await client.execute(uri: "/api/v1/transport/seek", method: .post, headers: Self.auth,
                                                   body: ByteBuffer(string: "{}"))
            #expect(missing.status == .badRequest)
            #expect(message(missing).contains("position"))
            let big = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth,
                                               body: ByteBuffer(repeating: UInt8(ascii: " "), count: 70_000))
            #expect(big.status == .contentTooLarge)
            #expect(message(big).contains("too large"))
            let notNumber = try await client.execute(uri: "/api/v1/queue/abc", method: .delete, headers: Self.auth)
            #expect(notNumber.status == .badRequest)
            #expect(house.commands.isEmpty)
        }
    }

    @Test func theHouseRefusalsKeepTheirStatusAndMessage() async throws {
        try await withRouter { house, client in
            let gone = try await client.execute(uri: "/api/v1/queue/99", method: .delete, headers: Self.auth)
            #expect(gone.status == .notFound)
            #expect(message(gone) == "no queue item with id 99")
            let lyrics = try await client.execute(uri: "/api/v1/lyrics/99", method: .get)
            #expect(lyrics.status == .notFound)
            let art = try await client.execute(uri: "/api/v1/artwork/99", method: .get)
            #expect(art.status == .notFound)
            let room = try await client.execute(uri: "/api/v1/rooms/attic", method: .delete, headers: Self.auth)
            #expect(room.status == .notFound)
            #expect(message(room).contains("attic"))
            // Pairing needs no token (the code is the credential), and a refused code counts
            // against the address like a wrong token.
            let pair = try await client.execute(uri: "/api/v1/pair", method: .post,
                                                body: ByteBuffer(string: #"{"publicKey": "a", "proof": "b"}"#))
            #expect(pair.status == .forbidden)
            #expect(message(pair) == "no pairing code is open")
            #expect(house.commands == ["remove 99", "remove room attic", "pair"])
        }
    }

    @Test func queueRoomsVolumeLoopFeedbackAndPairingReachTheHouse() async throws {
        try await withRouter { house, client in
            let add = try await client.execute(uri: "/api/v1/queue", method: .post, headers: Self.auth,
                                               body: ByteBuffer(string: #"{"paths": ["/music/b.mp3"], "placement": "next"}"#))
            #expect(add.status == .ok)
            #expect(try json([QueueEntry].self, add).map(\.path) == ["/music/b.mp3"])
            #expect(try await client.execute(uri: "/api/v1/queue/1/move", method: .post, headers: Self.auth,
                                             body: ByteBuffer(string: #"{"index": 0}"#)).status == .ok)
            #expect(try await client.execute(uri: "/api/v1/queue", method: .delete, headers: Self.auth).status == .ok)
            #expect(try await client.execute(uri: "/api/v1/loop", method: .put, headers: Self.auth,
                                             body: ByteBuffer(string: #"{"mode": "all"}"#)).status == .ok)
            #expect(try await client.execute(uri: "/api/v1/volume", method: .put, headers: Self.auth,
                                             body: ByteBuffer(string: #"{"volume": 50}"#)).status == .ok)  // percent
            let kitchen = try await client.execute(uri: "/api/v1/rooms/k%C3%BCche", method: .put, headers: Self.auth,
                                                   body: ByteBuffer(string: #"{"muted": true}"#))
            #expect(kitchen.status == .ok)
            #expect(try json(RoomView.self, kitchen).name == "küche")
            #expect(try await client.execute(uri: "/api/v1/feedback", method: .post, headers: Self.auth,
                                             body: ByteBuffer(string: #"{"kind": "like"}"#)).status == .ok)
            #expect(try await client.execute(uri: "/api/v1/feedback/1", method: .delete, headers: Self.auth).status == .ok)
            let code = try await client.execute(uri: "/api/v1/pairing", method: .post, headers: Self.auth)
            #expect(try json(PairingCode.self, code).code == "123-456")
            #expect(house.commands == ["add /music/b.mp3 afterCurrent", "move 1 to 0", "clear", "loop all", "volume 0.5 nil",
                                       "room küche muted", "feedback like", "remove feedback 1", "open pairing"])
        }
    }

    /// The members need the token to be listed, revoked, or enrolment changed; a revoked
    /// member's name is percent-decoded; an unknown one is a 404.
    @Test func membersAreListedAndRevokedWithTheTokenOnly() async throws {
        try await withRouter { house, client in
            #expect(try await client.execute(uri: "/api/v1/members", method: .get).status == .unauthorized)
            #expect(try await client.execute(uri: "/api/v1/members/1", method: .delete).status == .unauthorized)
            let listed = try await client.execute(uri: "/api/v1/members", method: .get, headers: Self.auth)
            #expect(try json(MembersView.self, listed).members.map(\.room) == ["Kitchen"])
            let revoked = try await client.execute(uri: "/api/v1/members/Kitchen", method: .delete, headers: Self.auth)
            #expect(try revoked.status == .ok && !json(MembersView.self, revoked).enrolment)
            #expect(try await client.execute(uri: "/api/v1/members/Attic%20Room", method: .delete, headers: Self.auth).status == .notFound)
            let enrolment = try await client.execute(uri: "/api/v1/members/enrolment", method: .put, headers: Self.auth,
                                                     body: ByteBuffer(string: #"{"open": true}"#))
            #expect(try json(MembersView.self, enrolment).enrolment)
            #expect(house.commands == ["members", "revoke Kitchen", "revoke Attic Room", "enrolment true"])
        }
    }

    /// A ticket for the event stream needs the token; each is good once, for a minute.
    @Test func eventTicketsNeedTheTokenAndServeOnce() async throws {
        try await withRouter { _, client in
            #expect(try await client.execute(uri: "/api/v1/events/ticket", method: .post).status == .unauthorized)
            let issued = try await client.execute(uri: "/api/v1/events/ticket", method: .post, headers: Self.auth)
            let ticket = try json(EventTicket.self, issued)
            #expect(ticket.ticket.count == 32 && ticket.expiresInSeconds == 60)
        }
        let tickets = EventTickets()
        let one = tickets.issue(), two = tickets.issue()
        #expect(one != two && tickets.isValid(one) && tickets.isValid(one), "looking does not spend it")
        #expect(tickets.take(one) && !tickets.take(one) && !tickets.isValid(one), "spent once")
        #expect(!tickets.take("0123") && !tickets.take(nil) && tickets.take(two))
        for _ in 0..<(EventTickets.limit + 10) { _ = tickets.issue() }
        #expect(!tickets.isValid(one))
    }

    /// ReplayGain: read without the token, changed with it; a gain that is not a sane number
    /// of decibels is refused by name (never a crash converting it).
    @Test func replayGainIsReadAndChanged() async throws {
        try await withRouter { house, client in
            let read = try await client.execute(uri: "/api/v1/replaygain", method: .get)
            #expect(read.status == .ok)
            #expect(try json(ReplayGain.self, read) == .standard)
            let unauthorized = try await client.execute(uri: "/api/v1/replaygain", method: .put,
                                                        body: ByteBuffer(string: #"{"mode": "off"}"#))
            #expect(unauthorized.status == .unauthorized)
            let set = try await client.execute(uri: "/api/v1/replaygain", method: .put, headers: Self.auth,
                                               body: ByteBuffer(string: #"{"mode": "track", "untaggedDb": -6}"#))
            #expect(set.status == .ok)
            #expect(try json(ReplayGain.self, set) == ReplayGain(mode: .track, preampDB: 0, untaggedDB: -6))
            for bad in [#"{"preampDb": 1e300}"#, #"{"untaggedDb": -25}"#, #"{"mode": "loud"}"#, #"{"preampDb": "x"}"#] {
                let refused = try await client.execute(uri: "/api/v1/replaygain", method: .put, headers: Self.auth,
                                                       body: ByteBuffer(string: bad))
                #expect(refused.status == .badRequest, "\(bad)")
            }
            #expect(house.commands == ["replaygain track 0.0 -6.0"])
        }
    }

    @Test func lyricsAndArtworkAreServed() async throws {
        try await withRouter { _, client in
            let lyrics = try await client.execute(uri: "/api/v1/lyrics", method: .get)
            #expect(lyrics.status == .ok)
            #expect(try json(TrackLyrics.self, lyrics).itemID == 1)
            let art = try await client.execute(uri: "/api/v1/artwork/1", method: .get)
            #expect(art.status == .ok)
            #expect(art.headers[.contentType] == "image/png")
            #expect(Array(buffer: art.body) == FakeHouse.png)
            #expect(art.headers[.xContentTypeOptions] == "nosniff")
            #expect(art.headers[.contentSecurityPolicy]?.contains("sandbox") == true)
        }
    }

    /// Artwork is served only as the image its bytes are: a picture frame that claims to be a
    /// page (or an SVG, which can hold a script) is not served at all, so it can never run on
    /// the remote's origin and read the token. Every answer says `nosniff` and carries a
    /// policy: the pages theirs, the rest one under which nothing runs.
    @Test func artworkIsOnlyEverAnImageAndNothingServedRunsAnotherSitesCode() async throws {
        try await withRouter { _, client in
            for id in [2, 3] {
                let art = try await client.execute(uri: "/api/v1/artwork/\(id)", method: .get)
                #expect(art.status == .notFound, "artwork \(id): \(art.status)")
                #expect(art.headers[.contentType]?.hasPrefix("application/json") == true)
            }
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'self'") == true)
            #expect(page.headers[.xContentTypeOptions] == "nosniff")
            let status = try await client.execute(uri: "/api/v1/status", method: .get)
            #expect(status.headers[.contentSecurityPolicy] == "default-src 'none'; sandbox; frame-ancestors 'none'")
            let missing = try await client.execute(uri: "/api/v1/nothing", method: .get)
            #expect(missing.headers[.xContentTypeOptions] == "nosniff")
        }
    }
}

/// A house that answers with fixed figures and records what reached it, one line per call.
final class FakeHouse: ControlService {
    private let log = Mutex<[String]>([])
    var commands: [String] { log.withLock { $0 } }
    private func record(_ line: String) { log.withLock { $0.append(line) } }

    static let playing: NowPlaying = {
        var np = NowPlaying(state: .playing, elapsed: 1, rate: 1, queueCount: 1, loopMode: .once, volume: 100, muted: false, at: 0, epoch: 1)
        np.itemID = 1
        np.path = "/music/album/song.mp3"
        return np
    }()
    static let room = RoomView(key: "kitchen", name: "kitchen", connected: true, volume: 100, muted: false, outputDelayMs: 0,
                               report: nil, lastSeenSecondsAgo: 0.5)

    /// The zones this house has: the default one and a kitchen; any other is a 404.
    private func check(_ zone: String?) throws(ControlError) -> String {
        guard let zone else { return "" }
        guard ["default", "kitchen", "Kitchen", "party"].contains(zone) else { throw .notFound("no zone named '\(zone)'") }
        return " @\(zone.lowercased())"
    }

    func status(zone: String?) throws(ControlError) -> Status {
        _ = try check(zone)
        return Status(nowPlaying: Self.playing, rooms: [Self.room], version: "test")
    }
    func nowPlaying(zone: String?) throws(ControlError) -> NowPlaying {
        var np = Self.playing
        np.zone = try check(zone).isEmpty ? "default" : "kitchen"
        return np
    }
    func queue(zone: String?) throws(ControlError) -> QueueView {
        _ = try check(zone)
        return queue()
    }
    func queue() -> QueueView {
        QueueView(items: [QueueEntry(index: 0, id: 1, path: "/music/album/song.mp3", title: "Song", artist: nil, album: nil,
                                     duration: 180, current: true)], currentIndex: 0, loopMode: .once)
    }
    func rooms() -> [RoomView] { [Self.room] }
    func feedback() -> [FeedbackEntry] { [] }
    func lyrics(itemID: Int?, zone: String?) throws(ControlError) -> TrackLyrics? {
        _ = try check(zone)
        return (itemID ?? 1) == 1 ? TrackLyrics(itemID: 1, lyrics: nil, nowPlaying: Self.playing) : nil
    }
    func coordinatorTime() -> Int64 { 0 }
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
    func artwork(itemID: Int, zone: String?) throws(ControlError) -> (mimeType: String, data: [UInt8])? {
        _ = try check(zone)
        return switch itemID {
        case 1: ("image/png", Self.png)
        // A track whose picture frame claims to be a page, with a script in it.
        case 2: ("text/html", Array("<html><script>fetch('/x?'+localStorage.token)</script>".utf8))
        case 3: ("image/svg+xml", Array("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>".utf8))
        default: nil
        }
    }

    func transport(_ command: TransportCommand, zone: String?) throws(ControlError) -> NowPlaying {
        record("transport \(command)\(try check(zone))")
        return Self.playing
    }
    func add(paths: [String], placement: PlayQueue.Placement, zone: String?) throws(ControlError) -> [QueueEntry] {
        record("add \(paths.joined(separator: " ")) \(placement)\(try check(zone))")
        return paths.enumerated().map { QueueEntry(index: $0.offset + 1, id: $0.offset + 2, path: $0.element, title: nil, artist: nil,
                                                    album: nil, duration: nil, current: false) }
    }
    func remove(itemID: Int, zone: String?) throws(ControlError) {
        record("remove \(itemID)\(try check(zone))")
        if itemID != 1 { throw .notFound("no queue item with id \(itemID)") }
    }
    func move(itemID: Int, to index: Int, zone: String?) throws(ControlError) { record("move \(itemID) to \(index)\(try check(zone))") }
    func clearQueue(zone: String?) throws(ControlError) { record("clear\(try check(zone))") }
    func setLoopMode(_ mode: LoopMode, zone: String?) throws(ControlError) { record("loop \(mode.rawValue)\(try check(zone))") }
    func replayGain() -> ReplayGain { .standard }
    func setReplayGain(_ update: ReplayGainUpdate) throws(ControlError) -> ReplayGain {
        let setting = try update.applied(to: .standard)
        record("replaygain \(setting.mode.rawValue) \(setting.preampDB) \(setting.untaggedDB)")
        return setting
    }
    func setGroup(volume: Double?, muted: Bool?, zone: String?) throws(ControlError) {
        record("volume \(volume.map { "\($0)" } ?? "nil") \(muted.map { "\($0)" } ?? "nil")\(try check(zone))")
    }
    func updateRoom(_ name: String, _ update: RoomUpdate) throws(ControlError) -> RoomView {
        record("room \(name)\(update.muted == true ? " muted" : "")\(update.zone.map { " to \($0)" } ?? "")")
        var view = Self.room
        view.name = name
        return view
    }
    func removeRoom(_ name: String) throws(ControlError) {
        record("remove room \(name)")
        throw .notFound("no room named '\(name)'")
    }
    func recordFeedback(_ kind: FeedbackKind, zone: String?) throws(ControlError) -> FeedbackEntry {
        record("feedback \(kind.rawValue)\(try check(zone))")
        let json = #"{"id": 1, "kind": "\#(kind.rawValue)", "path": "/music/album/song.mp3", "date": 0}"#
        return try! JSONDecoder().decode(FeedbackEntry.self, from: Data(json.utf8))
    }
    func removeFeedback(id: Int) throws(ControlError) { record("remove feedback \(id)") }
    func subscribe(zone: String?) throws(ControlError) -> AsyncStream<Event> {
        _ = try check(zone)
        return AsyncStream { $0.finish() }
    }
    func zones() -> [ZoneView] {
        var kitchen = Self.playing
        kitchen.zone = "kitchen"
        return [ZoneView(id: "default", name: "Default", rooms: [], nowPlaying: Self.playing),
                ZoneView(id: "kitchen", name: "Kitchen", rooms: ["kitchen"], nowPlaying: kitchen)]
    }
    func addZone(_ name: String) throws(ControlError) -> ZoneView {
        record("add zone \(name)")
        guard name != "Kitchen" else { throw .conflict("a zone is already called 'Kitchen'") }
        return ZoneView(id: name.lowercased(), name: name, rooms: [], nowPlaying: Self.playing)
    }
    func renameZone(_ zone: String, to name: String) throws(ControlError) -> ZoneView {
        record("rename zone\(try check(zone)) to \(name)")
        return ZoneView(id: "kitchen", name: name, rooms: [], nowPlaying: Self.playing)
    }
    func removeZone(_ zone: String) throws(ControlError) {
        record("remove zone\(try check(zone))")
        if zone == "default" { throw .conflict("the default zone cannot be removed") }
    }
    func party(zone: String?) throws(ControlError) -> ZoneView {
        record("party\(try check(zone))")
        return zones()[0]
    }
    func authorizes(token: String) -> Bool { token == RouterTests.token }
    func openPairing() throws(ControlError) -> PairingCode {
        record("open pairing")
        return PairingCode(code: "123-456", expiresInSeconds: 300, tries: 5)
    }
    func members() -> MembersView {
        record("members")
        return MembersView(enrolment: true, keyGeneration: 0, members: [.init(id: 1, name: "Kitchen", room: "Kitchen", added: 0,
                                                                              fingerprint: "0a1b2c3d", keyGeneration: 0)])
    }
    func revokeMember(_ member: String) throws(ControlError) -> MembersView {
        record("revoke \(member)")
        guard member == "1" || member == "Kitchen" else { throw .notFound("no member '\(member)'") }
        return MembersView(enrolment: false, keyGeneration: 0, members: [])
    }
    func startCalibration(_ request: CalibrationRequest) throws(ControlError) -> CalibrationStarted {
        record("calibrate \(request.rooms ?? []) \(request.level ?? -1)")
        return CalibrationStarted(id: "c1", rooms: ["kitchen"], keys: ["kitchen"], firstInSeconds: 1, recordSeconds: 4, level: request.level ?? 0.2)
    }
    func finishCalibration(_ id: String, recording: [Float], apply: Bool, by: String) throws(ControlError) -> CalibrationReport {
        guard id == "c1" else { throw .notFound("no calibration '\(id)'") }
        record("recording \(recording.count) \(recording.first ?? 0) \(apply) \(by)")
        return CalibrationReport(outcome: CalibrationOutcome(id: id, rooms: [], spreadMs: nil, clockPPM: 0), names: [:], applied: apply)
    }
    func applyCalibration(_ id: String, by: String) throws(ControlError) -> CalibrationReport {
        record("apply \(id) \(by)")
        return CalibrationReport(outcome: CalibrationOutcome(id: id, rooms: [], spreadMs: nil, clockPPM: 0), names: [:], applied: true)
    }
    func setEnrolment(_ open: Bool) throws(ControlError) -> MembersView {
        record("enrolment \(open)")
        return MembersView(enrolment: open, keyGeneration: 0, members: [])
    }
    func pair(_ request: PairingRequest, from sender: String) throws(ControlError) -> PairingAnswer {
        record("pair")
        throw ControlError(status: 403, "no pairing code is open")
    }
}

/// A library of three tracks on two albums.
final class FakeLibrary: LibraryService {
    let asked = Mutex<[String]>([])
    let rescans = Mutex(0)
    static let tracks = [
        LibraryTrack(id: 1, path: "/music/a/1.flac", title: "Song One", albumID: 1),
        LibraryTrack(id: 2, path: "/music/a/2.flac", title: "Song Two", albumID: 1),
        LibraryTrack(id: 3, path: "/music/b/3.flac", title: "Other", albumID: 2),
    ]

    func status() -> LibraryStatus {
        LibraryStatus(folders: ["music"], tracks: 3, albums: 2, artists: 0, scanning: false, watching: true, lastScan: nil)
    }
    func search(_ query: String, limit: Int) throws(ControlError) -> LibrarySearch {
        asked.withLock { $0.append(query) }
        return LibrarySearch(query: query, artists: [], albums: [], tracks: Array(Self.tracks.prefix(2)), milliseconds: 0.1)
    }
    func albums() throws(ControlError) -> [LibraryAlbum] { [try album(id: 1), try album(id: 2)] }
    func album(id: Int64) throws(ControlError) -> LibraryAlbum {
        guard id == 1 || id == 2 else { throw .notFound("no album \(id)") }
        return LibraryAlbum(id: id, title: "Album \(id)", artist: nil, artistID: nil, year: nil, trackCount: 1, duration: 0,
                            artworkURL: nil, tracks: Self.tracks.filter { $0.albumID == id })
    }
    func artists() throws(ControlError) -> [LibraryArtist] { [] }
    func artist(id: Int64) throws(ControlError) -> LibraryArtist { throw .notFound("no artist \(id)") }
    func folder(_ path: String) throws(ControlError) -> LibraryFolder { LibraryFolder(path: path, folders: [], tracks: Self.tracks) }
    func paths(of ids: [Int64]) throws(ControlError) -> [String] {
        try ids.map { id throws(ControlError) in
            guard let track = Self.tracks.first(where: { $0.id == id }) else { throw .notFound("no track with id \(id) in the library") }
            return track.path
        }
    }
    func artwork(albumID: Int64) throws(ControlError) -> (mimeType: String, data: [UInt8]) {
        ("image/png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52])
    }
    func rescan() { rescans.withLock { $0 += 1 } }
}
