import Testing
import Foundation
import TuttiAPI
import TuttiCore
@testable import TuttiMPRIS

@Suite struct MPRISPlayerTests {
    static func card(_ state: PlaybackState = .playing, loop: LoopMode = .all, live: Bool = false) -> NowPlaying {
        var np = try! JSONDecoder().decode(NowPlaying.self, from: Data(#"{"state":"playing","elapsed":10,"rate":1,"queueCount":2,"loopMode":"all","volume":80,"muted":false,"at":0,"epoch":1}"#.utf8))
        np.state = state
        np.itemID = 7
        np.title = "Tutti"
        np.artist = "The band"
        np.duration = 32
        np.loopMode = loop
        np.artworkURL = "/api/v1/artwork/7"
        np.isLiveStream = live ? true : nil
        return np
    }

    static func state(_ card: NowPlaying?) -> MPRISPlayer.State {
        var s = MPRISPlayer.State(baseURL: "http://hall:8485/")
        s.nowPlaying = card
        s.receivedAt = 1_000_000_000
        s.lyricLine = "Every room sings"
        return s
    }

    static func property(_ name: String, _ state: MPRISPlayer.State, now: Int64 = 1_000_000_000) -> DBusValue? {
        MPRISPlayer.playerProperties(state, now: now).first { $0.0 == name }?.1
    }

    /// One player per zone: the default zone's under today's name, another's under a name
    /// the bus takes (its id's dashes and any other character as underscores).
    @Test func eachZoneHasABusNameOfItsOwn() {
        #expect(MPRISPlayer.busName(zone: "default") == "org.mpris.MediaPlayer2.tutti")
        #expect(MPRISPlayer.busName(zone: "kids-room") == "org.mpris.MediaPlayer2.tutti.kids_room")
        #expect(MPRISPlayer.busName(zone: "2nd-floor") == "org.mpris.MediaPlayer2.tutti.z2nd_floor")
        #expect(MPRISPlayer.busName(zone: "küche") == "org.mpris.MediaPlayer2.tutti.k_che")
        for zone in ["kids-room", "2nd-floor", "küche", "a.b c"] {
            let element = MPRISPlayer.busName(zone: zone).split(separator: ".").last!
            #expect(element.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") } && !element.first!.isNumber)
        }
        #expect(MPRISPlayer.rootProperties(identity: "tutti · Kitchen").contains { $0.0 == "Identity" && $0.1 == .string("tutti · Kitchen") })
    }

    @Test func theCardBecomesTheSpecificationsProperties() {
        let s = Self.state(Self.card())
        #expect(Self.property("PlaybackStatus", s) == .string("Playing"))
        #expect(Self.property("LoopStatus", s) == .string("Playlist"))
        #expect(Self.property("Shuffle", s) == .bool(false))
        #expect(Self.property("Volume", s) == .double(0.8))
        #expect(Self.property("CanSeek", s) == .bool(true))
        // The position runs on while playing.
        #expect(Self.property("Position", s, now: 3_500_000_000) == .int64(12_500_000))
        guard case let .dictionary(metadata)? = Self.property("Metadata", s) else { Issue.record("no metadata"); return }
        let keys = metadata.map(\.0)
        #expect(keys == ["mpris:trackid", "mpris:length", "xesam:title", "xesam:artist", "mpris:artUrl", "xesam:asText"])
        #expect(metadata.first { $0.0 == "mpris:artUrl" }?.1 == .string("http://hall:8485/api/v1/artwork/7"))
        #expect(metadata.first { $0.0 == "xesam:asText" }?.1 == .string("Every room sings"))
        #expect(Self.property("PlaybackStatus", Self.state(Self.card(.paused))) == .string("Paused"))
        #expect(Self.property("PlaybackStatus", Self.state(Self.card(.failed))) == .string("Stopped"))
        #expect(Self.property("LoopStatus", Self.state(Self.card(loop: .one))) == .string("Track"))
        #expect(Self.property("Shuffle", Self.state(Self.card(loop: .shuffle))) == .bool(true))
        #expect(Self.property("CanSeek", Self.state(Self.card(live: true))) == .bool(false))
        #expect(Self.property("Metadata", Self.state(nil)) == .dictionary([("mpris:trackid", .objectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack"))]))
    }

    @Test func methodsAndSettingsBecomeCommands() throws {
        let s = Self.state(Self.card(loop: .shuffle))
        #expect(try MPRISPlayer.command(method: "PlayPause", [], state: s) == .transport("toggle"))
        #expect(try MPRISPlayer.command(method: "Seek", [.int64(-5_000_000)], state: s) == .skip(-5))
        #expect(try MPRISPlayer.command(method: "SetPosition", [.objectPath("/org/tutti/track/7"), .int64(20_000_000)], state: s) == .seek(20))
        // A stale track or a position past the end is ignored, as the specification says.
        #expect(try MPRISPlayer.command(method: "SetPosition", [.objectPath("/org/tutti/track/6"), .int64(1)], state: s) == nil)
        #expect(try MPRISPlayer.command(method: "SetPosition", [.objectPath("/org/tutti/track/7"), .int64(99_000_000)], state: s) == nil)
        #expect(try MPRISPlayer.command(method: "OpenUri", [.string("file:///music/a%20b.mp3")], state: s) == .open("/music/a b.mp3"))
        #expect(try MPRISPlayer.command(method: "OpenUri", [.string("https://radio.example/stream")], state: s)
            == .open("https://radio.example/stream"))
        // Any program on the session bus may call it: nothing but its schemes is queued.
        for uri in ["pcm:/etc/shadow", "/etc/passwd", "file:relative", "ftp://host/x", "javascript:alert(1)"] {
            #expect(throws: MPRISPlayer.Refusal.self) { try MPRISPlayer.command(method: "OpenUri", [.string(uri)], state: s) }
        }
        #expect(throws: MPRISPlayer.Refusal.badArguments("Seek takes an offset in microseconds (x)")) {
            try MPRISPlayer.command(method: "Seek", [.string("x")], state: s)
        }
        #expect(throws: MPRISPlayer.Refusal.unknownMethod("no method Dance on org.mpris.MediaPlayer2.Player")) {
            try MPRISPlayer.command(method: "Dance", [], state: s)
        }
        #expect(try MPRISPlayer.set("Volume", .variant(.double(1.5)), state: s) == .volume(100))
        #expect(try MPRISPlayer.set("LoopStatus", .variant(.string("Playlist")), state: s) == .loop(.shuffle))
        #expect(try MPRISPlayer.set("Shuffle", .variant(.bool(false)), state: s) == .loop(.all))
        #expect(throws: MPRISPlayer.Refusal.readOnly("Metadata cannot be set")) { try MPRISPlayer.set("Metadata", .variant(.string("x")), state: s) }
        #expect(throws: MPRISPlayer.Refusal.self) { try MPRISPlayer.set("LoopStatus", .variant(.string("Forever")), state: s) }
    }
}
