import Foundation
import Testing
@testable import TuttiSendspin

/// The player's side of a session (a tutti follower playing from a Sendspin server): its
/// hello as the reference server reads it, and what it makes of the server's messages.
@Suite("Sendspin: the player's session")
struct SendspinClientSessionTests {
    static let pcm = SendspinFormat(codec: "pcm", channels: 2, sampleRate: 48_000, bitDepth: 24)

    @Test func theHelloDeclaresThePlayerRoleAndItsFormats() throws {
        let session = SendspinClientSession(name: "Attic", formats: [Self.pcm])
        let hello = try #require(try JSONSerialization.jsonObject(with: Data(session.hello(bufferCapacity: 1_000, product: "p").utf8)) as? [String: Any])
        #expect(hello["type"] as? String == "client/hello")
        let payload = hello["payload"] as? [String: Any]
        #expect(payload?["name"] as? String == "Attic" && payload?["supported_roles"] as? [String] == ["player@v1"])
        let support = payload?["player@v1_support"] as? [String: Any]
        #expect((support?["supported_formats"] as? [[String: Any]])?.first?["codec"] as? String == "pcm")
        #expect(support?["buffer_capacity"] as? Int == 1_000 && support?["supported_commands"] == nil)
        #expect((payload?["unpaired_access"] as? [String: Any])?["enabled"] as? Bool == true && payload?["supported_pair_methods"] != nil)
        let state = try #require(try JSONSerialization.jsonObject(with: Data(session.state(available: true, volume: 40, muted: false,
                                                                                                requiredLeadMilliseconds: 100).utf8)) as? [String: Any])
        #expect(((state["payload"] as? [String: Any])?["player"] as? [String: Any])?["volume"] as? Int == 40)
    }

    @Test func theServersMessagesBecomeEvents() throws {
        var session = SendspinClientSession(name: "Attic", formats: [Self.pcm])
        #expect(try session.receive(#"{"type":"server/hello","payload":{"name":"Reference"}}"#) == .hello(serverName: "Reference"))
        #expect(try session.receive(#"{"type":"server/activate","payload":{"activities":["playback"]}}"#) == .activated(playback: true))
        #expect(try session.receive(#"{"type":"server/time","payload":{"client_transmitted":5,"server_received":100,"server_transmitted":101}}"#)
                == .time(clientTransmitted: 5, received: 100, transmitted: 101))
        // A chunk outside a stream is dropped; inside, it is the chunk.
        let chunk = SendspinAudioChunk(timestamp: 1_000, sendAhead: 0, payload: [1, 2, 3, 4, 5, 6]).bytes
        #expect(session.receive(binary: chunk) == .ignored("an audio chunk outside a stream"))
        #expect(try session.receive(#"{"type":"stream/start","payload":{"server_transmitted":1,"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":24}}}"#)
                == .streamStart(Self.pcm))
        #expect(session.receive(binary: chunk) == .chunk(timestamp: 1_000, payload: [1, 2, 3, 4, 5, 6]))
        #expect(try session.receive(#"{"type":"stream/clear","payload":{"server_transmitted":77,"roles":["player"]}}"#) == .clear(at: 77))
        #expect(try session.receive(#"{"type":"stream/clear","payload":{"roles":["visualizer"]}}"#) == .ignored("stream/clear of other roles"))
        #expect(try session.receive(#"{"type":"server/command","payload":{"player":{"command":"volume","volume":140}}}"#) == .volume(100))
        #expect(try session.receive(#"{"type":"server/command","payload":{"player":{"command":"mute","mute":true}}}"#) == .mute(true))
        #expect(try session.receive(#"{"type":"group/update","payload":{"playback_state":"playing","group_name":"Den"}}"#)
                == .group(name: "Den", playing: true))
        #expect(try session.receive(#"{"type":"stream/end","payload":{}}"#) == .end)
        #expect(session.format == nil)
        #expect(try session.receive(#"{"type":"server/state","payload":{}}"#) == .ignored("server/state"))
    }

    @Test func aFormatItDidNotOfferOrAMalformedMessageIsRefused() {
        var session = SendspinClientSession(name: "Attic", formats: [Self.pcm])
        #expect(throws: SendspinClientSession.Failure.unsupported(SendspinFormat(codec: "flac", channels: 2, sampleRate: 48_000, bitDepth: 24))) {
            try session.receive(#"{"type":"stream/start","payload":{"player":{"codec":"flac","sample_rate":48000,"channels":2,"bit_depth":24}}}"#)
        }
        for bad in ["", "[]", #"{"type":"server/time","payload":{"client_transmitted":"x"}}"#, String(repeating: "{", count: 700)] {
            #expect(throws: SendspinClientSession.Failure.self) { try session.receive(bad) }
        }
    }
}
