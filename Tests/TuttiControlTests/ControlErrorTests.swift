import Testing
import TuttiAPI
@testable import TuttiControl
import TuttiCore

@Suite("Control API errors")
struct ControlErrorTests {
    @Test func domainErrorsMapToStatuses() {
        #expect(ControlError(TransportError.emptyQueue).status == 409)
        #expect(ControlError(TransportError.seekOutOfRange(requested: 10, duration: 5)).status == 400)
        #expect(ControlError(QueueError.noSuchItem(id: 3)).status == 404)
        #expect(ControlError(RoomError.nameTaken("Kitchen")).status == 409)
        #expect(ControlError(RoomError.noSuchRoom("Garage", known: [])).message.contains("Garage"))
    }

    /// Regression: WebSocket upgrades were accepted from any `Origin`, so a page from anywhere,
    /// opened in a browser in the house, could reach the event stream (and its parser). Only
    /// the coordinator's own pages, and clients that send no `Origin`, are let in.
    @Test func eventStreamUpgradesOnlyFromTheCoordinatorsOwnPages() {
        #expect(SameOrigin.allows(origin: nil, host: "house.local:8485"))
        #expect(SameOrigin.allows(origin: "http://house.local:8485", host: "house.local:8485"))
        #expect(SameOrigin.allows(origin: "http://HOUSE.local:8485", host: "house.local:8485"))
        #expect(SameOrigin.allows(origin: "http://192.168.1.5", host: "192.168.1.5:80"))
        #expect(SameOrigin.allows(origin: "http://[::1]:8485", host: "[::1]:8485"))
        #expect(!SameOrigin.allows(origin: "http://evil.example", host: "house.local:8485"))
        #expect(!SameOrigin.allows(origin: "http://house.local:9999", host: "house.local:8485"))
        #expect(!SameOrigin.allows(origin: "http://house.local.evil.example:8485", host: "house.local:8485"))
        #expect(!SameOrigin.allows(origin: "null", host: "house.local:8485"))
        #expect(!SameOrigin.allows(origin: "http://house.local:8485", host: nil))
    }
}

/// The names the control API answers to, and the ones it refuses (DNS rebinding: a site
/// whose own name now points at the coordinator).
@Suite("Host names")
struct HostNamesTests {
    @Test func itAnswersToItsAddressesAndNamesOnly() {
        let names = HostNames(hostName: "Living-Room.lan", extra: ["music.example.org"])
        #expect(HostNames(hostName: "pi", extra: ["pi.fritz.box"]).allows("PI.fritz.box:8485"), "a router's domain, given")
        for ok in ["127.0.0.1:8485", "192.168.1.20", "[::1]:8485", "[fe80::1]", "localhost:8485", "LOCALHOST",
                   "living-room.lan", "living-room:8485", "living-room.local:8485", "living-room.internal", "living-room.home.arpa",
                   "Music.Example.Org", "music.example.org.", nil, ""] {
            #expect(names.allows(ok), "\(String(describing: ok))")
        }
        for refused in ["evil.example", "evil.example:8485", "living-room.evil.example", "127.0.0.1.nip.io", "localhost.evil",
                        "kitchen.lan", "living-room.lan.evil.example",
                        // Public top-level domains: anyone may register these and point them at the house.
                        "living-room.box", "living-room.fritz.box", "living-room.localnet", "living-room.home.box"] {
            #expect(!names.allows(refused), "\(refused)")
        }
    }
}

/// What a reader without the token sees of a URL: never its query, fragment or credentials,
/// nor a host of the house's own network.
@Suite("Redaction of URLs")
struct URLRedactionTests {
    @Test func secretsAndTheHouseNetworkAreNotShown() {
        let cases: [(String, String)] = [
            ("https://radio.example.org/live/stream.mp3?apikey=SECRET#t=1", "https://radio.example.org/…/stream.mp3"),
            ("http://user:password@radio.example.org/", "http://radio.example.org"),
            ("http://192.168.1.5:8000/music/song.flac?token=abc", "a server on the house network (song.flac)"),
            ("http://[fd00::5]/a.mp3", "a server on the house network (a.mp3)"),
            ("http://nas.lan/Music/Ágætis/01.flac", "a server on the house network (01.flac)"),
            ("http://nas/", "a server on the house network"),
            ("http://10.0.0.2:8000", "a server on the house network"),
            ("http://nas.home.arpa/x.ogg", "a server on the house network (x.ogg)"),
        ]
        for (url, shown) in cases {
            #expect(Redaction.fileName(url) == shown, "\(url)")
            #expect(!Redaction.fileName(url).contains("SECRET") && !Redaction.fileName(url).contains("password"))
        }
        #expect(Redaction.fileName("/home/me/Music/a.flac") == "a.flac")
    }
}
