import Foundation
import Testing
import TuttiAPI
@testable import TuttiControl
import TuttiCore

/// The event stream's messages: a typed change in Swift, the same JSON on the wire that
/// docs/api.md describes and clients (the web pages, `tutti ctl --follow --json`) read.
@Suite("Events on the wire")
struct EventTests {
    static let playing = FakeHouse.playing
    static let failed: NowPlaying = {
        var np = FakeHouse.playing
        np.state = .failed
        np.failure = "http://192.168.1.1:8080/admin: connection refused"
        return np
    }()
    static let queue = FakeHouse().queue()
    static let lyrics = Lyrics(lines: [LyricLine(time: 1_000, text: "la")], source: "/music/album/song.lrc")
    static let feedback: FeedbackEntry = try! JSONDecoder().decode(
        FeedbackEntry.self, from: Data(#"{"id": 1, "kind": "like", "path": "/music/album/song.mp3", "date": 0}"#.utf8))

    static let everyChange: [Event.Change] = [
        .hello(nowPlaying: playing, queue: queue, rooms: [FakeHouse.room], lyrics: lyrics),
        .hello(nowPlaying: playing, queue: queue, rooms: [], lyrics: nil),
        .nowPlaying(playing),
        .nowPlaying(failed),
        .state(.stopped, previous: .loading, reason: "no such file"),
        .state(.failed, previous: .loading, reason: "http://192.168.1.1:8080/admin: connection refused; /music/secret/a.mp3"),
        .state(.paused, previous: .playing, reason: nil),
        .trackChanged(itemID: 1, nowPlaying: playing, lyrics: lyrics),
        .trackChanged(itemID: nil, nowPlaying: playing, lyrics: nil),
        .trackEnded(itemID: 7),
        .queue(queue),
        .volume(rooms: [FakeHouse.room]),
        .roomJoined(FakeHouse.room), .roomLeft(FakeHouse.room), .room(FakeHouse.room),
        .feedback(feedback),
    ]

    static func object(_ event: Event) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(event)) as? [String: Any])
    }

    @Test(arguments: everyChange)
    func everyChangeComesBackAsItWent(_ change: Event.Change) throws {
        let event = Event(change, at: 42)
        #expect(try JSONDecoder().decode(Event.self, from: JSONEncoder().encode(event)) == event)
        let object = try Self.object(event)
        #expect(object["type"] as? String == event.kind.rawValue)
        #expect(object["at"] as? Int == 42)
    }

    /// The fields beside `type` and `at` are the ones docs/api.md names for each type, and
    /// an absent optional is left out, not sent as null.
    @Test func theWireShapeIsTheDocumentedOne() throws {
        func keys(_ change: Event.Change) throws -> Set<String> { Set(try Self.object(Event(change, at: 0)).keys) }
        #expect(try keys(.state(.paused, previous: .playing, reason: nil)) == ["type", "at", "state", "previousState"])
        #expect(try keys(.state(.stopped, previous: .loading, reason: "x")) == ["type", "at", "state", "previousState", "reason"])
        #expect(try keys(.hello(nowPlaying: Self.playing, queue: Self.queue, rooms: [], lyrics: nil)) == ["type", "at", "nowPlaying", "queue", "rooms"])
        #expect(try keys(.trackChanged(itemID: 1, nowPlaying: Self.playing, lyrics: nil)) == ["type", "at", "itemID", "nowPlaying"])
        #expect(try keys(.trackEnded(itemID: 1)) == ["type", "at", "itemID"])
        #expect(try keys(.volume(rooms: [])) == ["type", "at", "rooms"])
        #expect(try keys(.roomLeft(FakeHouse.room)) == ["type", "at", "room"])
        #expect(try keys(.feedback(Self.feedback)) == ["type", "at", "feedback"])
        // What a client wrote by hand from the docs reads back.
        let text = #"{"type": "state", "at": 5, "state": "paused", "previousState": "playing"}"#
        #expect(try JSONDecoder().decode(Event.self, from: Data(text.utf8)) == Event(.state(.paused, previous: .playing, reason: nil), at: 5))
    }

    /// An unknown type, or a type without the payload it must carry, is a decoding error
    /// (`tutti ctl --follow` and the lyric screen skip such a message), never a half-empty event.
    @Test(arguments: [
        #"{"type": "fireworks", "at": 1}"#,
        #"{"type": "state", "at": 1, "state": "paused"}"#,
        #"{"type": "now-playing", "at": 1}"#,
        #"{"type": "track-ended", "at": 1, "itemID": "seven"}"#,
        #"{"type": "room-joined", "at": 1}"#,
        #"{"type": "queue"}"#,
        #"{"at": 1}"#,
    ])
    func malformedEventsAreRefused(_ text: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Event.self, from: Data(text.utf8)) }
    }

    /// Without the house's token a client sees file names, never folders, in any event.
    @Test(arguments: everyChange)
    func redactionLeavesNoFolderInAnyEvent(_ change: Event.Change) throws {
        let text = String(decoding: try JSONEncoder().encode(Event(change, at: 0).withoutFolders), as: UTF8.self)
        #expect(!text.contains("/music"), "\(text)")
        // Nor why a track failed: a server's answer about an address on the house's network
        // would map it for a stranger.
        #expect(!text.contains("192.168") && !text.contains("refused"), "\(text)")
        #expect(Event(change, at: 0).withoutFolders.kind == Event(change, at: 0).kind)
    }
}
