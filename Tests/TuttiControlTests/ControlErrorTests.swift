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
        for ok in ["127.0.0.1:8485", "192.168.1.20", "[::1]:8485", "[fe80::1]", "localhost:8485", "LOCALHOST",
                   "living-room.lan", "living-room:8485", "living-room.local:8485", "living-room.fritz.box", "living-room.home.arpa",
                   "Music.Example.Org", "music.example.org.", nil, ""] {
            #expect(names.allows(ok), "\(String(describing: ok))")
        }
        for refused in ["evil.example", "evil.example:8485", "living-room.evil.example", "127.0.0.1.nip.io", "localhost.evil",
                        "kitchen.lan", "living-room.lan.evil.example"] {
            #expect(!names.allows(refused), "\(refused)")
        }
    }
}
