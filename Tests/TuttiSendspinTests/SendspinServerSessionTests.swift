import Foundation
import Testing
@testable import TuttiSendspin

/// The server's side of a sealed Sendspin session, in the reference server's order (its
/// transcript with `sendspin daemon`, aiosendspin 10.2.1): hello, the player's hello and the
/// activation with its role, the stream once the player is available and audio comes.
@Suite("Sendspin: the server's session")
struct SendspinServerSessionTests {
    static func hello(_ formats: String, roles: String = #"["player@v1"]"#, name: String = "Porch") -> String {
        #"{"type":"client/hello","payload":{"name":"\#(name)","supported_roles":\#(roles),"player@v1_support":{"supported_formats":[\#(formats)],"buffer_capacity":32000000},"unpaired_access":{"enabled":true}}}"#
    }
    static let referenceFormats = #"{"codec":"flac","channels":2,"sample_rate":48000,"bit_depth":24},{"codec":"pcm","channels":2,"sample_rate":44100,"bit_depth":24},{"codec":"pcm","channels":2,"sample_rate":48000,"bit_depth":24},{"codec":"pcm","channels":1,"sample_rate":48000,"bit_depth":16}"#
    static func state(available: Bool, volume: Int = 25) -> String {
        #"{"type":"client/state","payload":{"available":\#(available),"player":{"volume":\#(volume),"muted":false,"output_delay_ms":0,"required_lead_time_ms":250,"min_buffer_ms":250}}}"#
    }

    static func json(_ message: SendspinMessage) -> [String: Any]? {
        guard case let .text(text) = message else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }
    static func types(_ messages: [SendspinMessage]) -> [String] {
        messages.map { message in
            if case let .binary(bytes) = message { return "binary \(bytes.first ?? 0)" }
            return json(message)?["type"] as? String ?? "?"
        }
    }

    func opened() throws -> SendspinServerSession {
        var session = SendspinServerSession(serverName: "tutti on test")
        _ = try session.receive(Self.hello(Self.referenceFormats), received: 0) { 0 }
        return session
    }

    @Test func helloActivatesThePlayerInTheFirstFormatTuttiSends() throws {
        var session = SendspinServerSession(serverName: "tutti on test")
        let first = session.start()
        #expect(Self.types(first) == ["server/hello"])
        #expect((Self.json(first[0])?["payload"] as? [String: Any])?["name"] as? String == "tutti on test")
        let (send, events) = try session.receive(Self.hello(Self.referenceFormats), received: 0) { 0 }
        #expect(Self.types(send) == ["server/activate"])
        let activate = Self.json(send[0])?["payload"] as? [String: Any]
        #expect(activate?["active_roles"] as? [String] == ["player@v1"])
        #expect(activate?["activities"] as? [String] == [])
        // FLAC and 44.1 kHz are passed over: PCM at 48 kHz, 24-bit stereo.
        let format = SendspinFormat(codec: "pcm", channels: 2, sampleRate: 48_000, bitDepth: 24)
        guard case let .hello(hello, chosen) = events.first else { Issue.record("no hello event"); return }
        #expect(chosen == format && session.format == format)
        #expect(hello.name == "Porch" && hello.bufferCapacity == 32_000_000 && hello.formats.count == 4)
    }

    @Test func aPlayerTuttiCannotFeedOrThatSpeaksOutOfTurnIsRefused() {
        var session = SendspinServerSession(serverName: "t")
        #expect(throws: SendspinServerSession.Failure.outOfTurn("client/state")) {
            try session.receive(Self.state(available: true), received: 0) { 0 }
        }
        let flacOnly = #"{"codec":"flac","channels":2,"sample_rate":48000,"bit_depth":24}"#
        #expect(throws: SendspinServerSession.Failure.self) { try session.receive(Self.hello(flacOnly), received: 0) { 0 } }
        #expect(throws: SendspinServerSession.Failure.self) {
            try session.receive(Self.hello(Self.referenceFormats, roles: #"["visualizer@v1"]"#), received: 0) { 0 }
        }
        for bad in ["", "nonsense", "{}", #"{"type":5}"#, String(repeating: "[", count: 600) + #"{"type":"client/time"}"#,
                    #"{"type":"client/time","payload":{}}"#, #"{"type":"client/hello","payload":{"name":1}}"#] {
            #expect(throws: SendspinServerSession.Failure.self, "\(bad.prefix(40))") { try session.receive(bad, received: 0) { 0 } }
        }
        var open = try? opened()
        #expect(throws: SendspinServerSession.Failure.malformed("a second client/hello")) {
            try open?.receive(Self.hello(Self.referenceFormats), received: 0) { 0 }
        }
        // A type the server does not act on is counted and dropped, not an error.
        let unknown = try? open?.receive(#"{"type":"client/whatever","payload":{}}"#, received: 0) { 0 }
        #expect(unknown?.events == [.ignored("client/whatever")] && open?.ignored == 1)
    }

    @Test func theClockIsAnsweredWithTheServersStamps() throws {
        var session = SendspinServerSession(serverName: "t")
        let (send, _) = try session.receive(#"{"type":"client/time","payload":{"client_transmitted":45330308173}}"#, received: 1_000) { 1_007 }
        let payload = Self.json(send[0])?["payload"] as? [String: Any]
        #expect(Self.types(send) == ["server/time"])
        #expect(payload?["client_transmitted"] as? Int == 45_330_308_173)
        #expect(payload?["server_received"] as? Int == 1_000 && payload?["server_transmitted"] as? Int == 1_007)
    }

    @Test func audioWaitsForThePlayerToBeAvailableAndWhatIsPastIsNotSent() throws {
        var session = try opened()
        let frame = [Float](repeating: 0.25, count: 960 * 2)
        // Not yet available: held.
        #expect(session.audio(frame, channels: 2, heard: 100_000, now: 0).isEmpty)
        #expect(session.audio(frame, channels: 2, heard: 120_000, now: 0).isEmpty)
        #expect(!session.streaming)
        // Available at 110 ms: the stream starts, and only the chunk still to be heard goes.
        let (send, events) = try session.receive(Self.state(available: true, volume: 40), received: 110_000) { 110_000 }
        #expect(Self.types(send) == ["server/activate", "stream/start", "binary 4"])
        #expect((Self.json(send[0])?["payload"] as? [String: Any])?["activities"] as? [String] == ["playback"])
        let player = (Self.json(send[1])?["payload"] as? [String: Any])?["player"] as? [String: Any]
        #expect(player?["codec"] as? String == "pcm" && player?["sample_rate"] as? Int == 48_000 && player?["bit_depth"] as? Int == 24)
        guard case let .binary(bytes) = send[2], let chunk = SendspinAudioChunk(bytes: bytes) else { Issue.record("no chunk"); return }
        #expect(chunk.timestamp == 120_000 && chunk.sendAhead == 10_000)
        #expect(chunk.payload == SendspinPCM.encode(frame, bitDepth: 24))
        #expect(events == [.state(SendspinPlayerState(available: true, volume: 40, muted: false, outputDelayMilliseconds: 0,
                                                      requiredLeadMilliseconds: 250))])
        // Streaming: each frame goes as it comes; a clear, then the end.
        #expect(Self.types(session.audio(frame, channels: 2, heard: 140_000, now: 120_000)) == ["binary 4"])
        #expect(Self.types(session.clear(at: 130_000)) == ["stream/clear"])
        #expect(Self.types(session.end()) == ["stream/end", "server/activate"])
        #expect(session.end().isEmpty && session.clear(at: 0).isEmpty)
        // The next audio opens a new stream.
        #expect(Self.types(session.audio(frame, channels: 2, heard: 900_000, now: 200_000)) == ["server/activate", "stream/start", "binary 4"])
    }

    @Test func aMonoPlayerGetsTheMeanOfTheChannels() throws {
        var session = SendspinServerSession(serverName: "t")
        let mono = #"{"codec":"pcm","channels":1,"sample_rate":48000,"bit_depth":16}"#
        _ = try session.receive(Self.hello(mono), received: 0) { 0 }
        _ = try session.receive(Self.state(available: true), received: 0) { 0 }
        let sent = session.audio([0.5, 0.25, -0.5, -1], channels: 2, heard: 10, now: 0)
        guard case let .binary(bytes)? = sent.last, let chunk = SendspinAudioChunk(bytes: bytes) else { Issue.record("no chunk"); return }
        #expect(chunk.payload == SendspinPCM.encode([0.375, -0.75], bitDepth: 16))
    }

    @Test func theHousesVolumeGoesAsCommandsOnlyWhenItChanges() throws {
        var session = try opened()
        let first = session.set(volume: 0.5, muted: false)
        #expect(Self.types(first) == ["server/command", "server/command"])
        let volume = (Self.json(first[0])?["payload"] as? [String: Any])?["player"] as? [String: Any]
        #expect(volume?["command"] as? String == "volume" && volume?["volume"] as? Int == 50)
        #expect(session.set(volume: 0.5, muted: false).isEmpty)
        let mute = session.set(volume: 0.5, muted: true)
        #expect(((Self.json(mute[0])?["payload"] as? [String: Any])?["player"] as? [String: Any])?["mute"] as? Bool == true)
        #expect(Self.types(session.join(group: "default", name: "Default", playing: true)) == ["group/update"])
        #expect(session.join(group: "default", name: "Default", playing: true).isEmpty)
        #expect(Self.types(session.join(group: "default", name: "Default", playing: false)) == ["group/update"])
    }

    /// A stand-in codec: its header and its chunks' lengths say what it was made for.
    final class Marker: SendspinEncoder {
        let frames: Int
        init(frames: Int) { self.frames = frames }
        var codecHeader: [UInt8]? { Array("fLaC".utf8) + [UInt8(frames & 0xFF)] }
        func encode(_ samples: [Float]) -> [UInt8] { [UInt8](repeating: 7, count: samples.count / 2) }
    }

    @Test func aPlayersFirstFormatIsTakenWhenTheServerHasItsCodecAndItsHeaderGoesAtTheStart() throws {
        var session = SendspinServerSession(serverName: "t", encoders: ["flac": { _, frames in Marker(frames: frames) }])
        _ = try session.receive(Self.hello(Self.referenceFormats), received: 0) { 0 }
        #expect(session.format == SendspinFormat(codec: "flac", channels: 2, sampleRate: 48_000, bitDepth: 24))
        _ = try session.receive(Self.state(available: true), received: 0) { 0 }
        let sent = session.audio([Float](repeating: 0, count: 1_920), channels: 2, heard: 50_000, now: 0)
        #expect(Self.types(sent) == ["server/activate", "stream/start", "binary 4"])
        let player = (Self.json(sent[1])?["payload"] as? [String: Any])?["player"] as? [String: Any]
        // 960 frames: "fLaC" and 0xC0, in base64.
        #expect(player?["codec_header"] as? String == "ZkxhQ8A=")
        guard case let .binary(bytes) = sent[2] else { return }
        #expect(SendspinAudioChunk(bytes: bytes)?.payload.count == 960)
        // Chunks of another length: a stream of their own, with an encoder made for them.
        let other = session.audio([Float](repeating: 0, count: 960), channels: 2, heard: 70_000, now: 0)
        #expect(Self.types(other) == ["stream/end", "server/activate", "server/activate", "stream/start", "binary 4"])
        // PCM carries no header.
        var pcm = try opened()
        _ = try pcm.receive(Self.state(available: true), received: 0) { 0 }
        let plain = pcm.audio([0, 0], channels: 2, heard: 5, now: 0)
        #expect(((Self.json(plain[1])?["payload"] as? [String: Any])?["player"] as? [String: Any])?["codec_header"] == nil)
    }

    /// An encoder whose output lags its input (Opus's lookahead): each chunk is stamped that
    /// much earlier, and no header goes; a player that offers Opus first gets it where the
    /// server has it, and its next format where it does not.
    @Test func aCodecWithALookaheadHasItsChunksStampedEarlier() throws {
        final class Lagging: SendspinEncoder {
            var codecHeader: [UInt8]? { nil }
            var delayFrames: Int { 312 }
            func encode(_ samples: [Float]) -> [UInt8] { [1, 2, 3] }
        }
        let opusFirst = #"{"codec":"opus","channels":2,"sample_rate":48000,"bit_depth":16},"# + Self.referenceFormats
        var session = SendspinServerSession(serverName: "t", encoders: ["opus": { _, _ in Lagging() }])
        _ = try session.receive(Self.hello(opusFirst), received: 0) { 0 }
        #expect(session.format?.codec == "opus")
        _ = try session.receive(Self.state(available: true), received: 0) { 0 }
        let sent = session.audio([Float](repeating: 0, count: 1_920), channels: 2, heard: 50_000, now: 0)
        #expect(Self.types(sent) == ["server/activate", "stream/start", "binary 4"])
        #expect(((Self.json(sent[1])?["payload"] as? [String: Any])?["player"] as? [String: Any])?["codec_header"] == nil)
        guard case let .binary(bytes) = sent[2], let chunk = SendspinAudioChunk(bytes: bytes) else { Issue.record("no chunk"); return }
        #expect(chunk.timestamp == 50_000 - 6_500 && chunk.payload == [1, 2, 3])
        // Without Opus the server takes what the player offers next that it has.
        var plain = SendspinServerSession(serverName: "t")
        _ = try plain.receive(Self.hello(opusFirst), received: 0) { 0 }
        #expect(plain.format == SendspinFormat(codec: "pcm", channels: 2, sampleRate: 48_000, bitDepth: 24))
    }

    /// A player the house does not let play yet (not paired): activated with no role, no
    /// audio, no state, no commands taken; its hello says how it can be paired. Admitted (once
    /// paired), its roles are activated and the stream starts.
    @Test func aPlayerNotYetPairedGetsNoRoleUntilAdmitted() throws {
        var session = SendspinServerSession(serverName: "t", playable: false)
        let hello = #"{"type":"client/hello","payload":{"name":"Porch","supported_roles":["player@v1","controller@v1"],"player@v1_support":{"supported_formats":[\#(Self.referenceFormats)],"buffer_capacity":1},"supported_pair_methods":{"pairing_psk":{},"static_pairing_code":{"locations":["label"]},"dynamic_pairing_code":{"formats":["digits","qr_code"],"out_channels":["log"]}}}}"#
        let (send, events) = try session.receive(hello, received: 0) { 0 }
        let payload = Self.json(send[0])?["payload"] as? [String: Any]
        #expect(payload?["active_roles"] as? [String] == [])
        guard case let .hello(said, _) = events.first else { Issue.record("no hello"); return }
        #expect(said.pairMethods == ["dynamic_pairing_code", "static_pairing_code"])
        _ = try session.receive(Self.state(available: true), received: 0) { 0 }
        #expect(session.audio([Float](repeating: 0, count: 1_920), channels: 2, heard: 50_000, now: 0).isEmpty)
        #expect(!session.hearsState)
        let (_, commanded) = try session.receive(#"{"type":"client/command","payload":{"controller":{"command":"next"}}}"#, received: 0) { 0 }
        #expect(commanded == [.ignored("client/command outside the controller role")])
        let admitted = session.admit()
        #expect((Self.json(admitted[0])?["payload"] as? [String: Any])?["active_roles"] as? [String] == ["player@v1", "controller@v1"])
        #expect(session.admit().isEmpty)
        #expect(Self.types(session.audio([Float](repeating: 0, count: 1_920), channels: 2, heard: 50_000, now: 0)) == ["server/activate", "stream/start", "binary 4"])
    }

    /// A display (the artwork role) asks for its channels in `client/state`: the artwork
    /// stream starts with them (up to the last one streamed), and a picture goes as the
    /// reference frames it: an announce (type 8 + channel, flags 0x02, the instant, the size),
    /// then parts of at most 65,517 bytes; an empty one clears the channel. Channels it cannot
    /// have are refused; a channel it did not ask for gets nothing.
    @Test func aDisplayGetsItsChannelsPicturesInParts() throws {
        var session = SendspinServerSession(serverName: "t")
        _ = try session.receive(Self.hello("", roles: #"["artwork@v1"]"#), received: 0) { 0 }
        let state = #"{"type":"client/state","payload":{"artwork":{"channels":[{"source":"album","format":"jpeg","width":120,"height":80},{"source":"none"}]}}}"#
        let (send, _) = try session.receive(state, received: 0) { 0 }
        #expect(Self.types(send) == ["stream/start"])
        let channels = ((Self.json(send[0])?["payload"] as? [String: Any])?["artwork"] as? [String: Any])?["channels"] as? [[String: Any]]
        #expect(channels?.count == 1 && channels?.first?["width"] as? Int == 120)
        #expect(try session.receive(state, received: 0) { 0 }.send.isEmpty)  // the same channels: no new start
        let picture = [UInt8](repeating: 7, count: 70_000)
        let sent = session.artwork(channel: 0, image: picture, timestamp: 0x0102_0304_0506)
        guard sent.count == 3, case let .binary(announce) = sent[0], case let .binary(first) = sent[1], case let .binary(second) = sent[2] else {
            Issue.record("\(sent)")
            return
        }
        #expect(announce == [8, 0x02, 0, 0, 1, 2, 3, 4, 5, 6, 0, 1, 0x11, 0x70])
        #expect(first.count == 65_519 && first.prefix(2) == [8, 0] && second.count == 2 + 70_000 - 65_517)
        #expect(session.artwork(channel: 0, image: [], timestamp: 1).count == 1)
        #expect(session.artwork(channel: 1, image: picture, timestamp: 1).isEmpty)
        #expect(throws: SendspinServerSession.Failure.self) {
            try session.receive(#"{"type":"client/state","payload":{"artwork":{"channels":[{"source":"album","format":"bmp","width":1,"height":1}]}}}"#,
                                received: 0) { 0 }
        }
    }

    @Test func aRemoteIsToldWhatPlaysWhenItChangesAndItsCommandsAreTaken() throws {
        var session = SendspinServerSession(serverName: "t")
        let (send, events) = try session.receive(Self.hello("", roles: #"["controller@v1","metadata@v1","visualizer@v1"]"#), received: 0) { 0 }
        #expect((Self.json(send[0])?["payload"] as? [String: Any])?["active_roles"] as? [String] == ["controller@v1", "metadata@v1"])
        guard case let .hello(hello, format) = events.first else { Issue.record("no hello"); return }
        #expect(format == nil && hello.roles == ["controller@v1", "metadata@v1"])
        // Playing: 3 s in at 1 s; read again at 2 s it is the same timeline: no news.
        let playing = SendspinMetadata(timestamp: 1_000_000, title: "Élan", artist: "A", albumArtist: nil, album: "B", year: 2001, track: 3,
                                       elapsedMilliseconds: 3_000, durationMilliseconds: 200_000, playing: true)
        let control = SendspinControllerState(volume: 0.4, muted: false, repeat: "off", shuffle: false, durationMilliseconds: 200_000)
        let first = session.state(metadata: playing, controller: control)
        let payload = Self.json(first[0])?["payload"] as? [String: Any]
        #expect(Self.types(first) == ["server/state"])
        #expect((payload?["metadata"] as? [String: Any])?["title"] as? String == "Élan")
        #expect(((payload?["metadata"] as? [String: Any])?["progress"] as? [String: Any])?["playback_speed"] as? Int == 1_000)
        #expect((payload?["controller"] as? [String: Any])?["volume"] as? Int == 40)
        var later = playing
        later.timestamp = 2_000_000
        later.progress?.track_progress = 4_000
        #expect(session.state(metadata: later, controller: control).isEmpty)
        // A seek is news; so is a paused one; the controller's volume alone.
        later.progress?.track_progress = 90_000
        #expect(Self.types(session.state(metadata: later, controller: control)) == ["server/state"])
        var louder = control
        louder.volume = 70
        let only = session.state(metadata: later, controller: louder)
        #expect((Self.json(only[0])?["payload"] as? [String: Any])?["metadata"] == nil)
        // Commands, each checked; one it does not know is counted.
        for (json, command) in [(#"{"command":"next"}"#, SendspinControllerCommand.next), (#"{"command":"volume","volume":130}"#, .volume(100)),
                                (#"{"command":"repeat_all"}"#, .repeatMode("all")), (#"{"command":"seek","position_ms":5000}"#, .seek(milliseconds: 5_000)),
                                (#"{"command":"unshuffle"}"#, .shuffle(false)), (#"{"command":"seek_relative","offset_ms":-2000}"#, .seekRelative(milliseconds: -2_000))] {
            let (_, events) = try session.receive(#"{"type":"client/command","payload":{"controller":\#(json)}}"#, received: 0) { 0 }
            #expect(events == [.command(command)], "\(json)")
        }
        for bad in [#"{"command":"dance"}"#, #"{"command":"volume"}"#, #"{"command":"seek","position_ms":-1}"#] {
            let (_, events) = try session.receive(#"{"type":"client/command","payload":{"controller":\#(bad)}}"#, received: 0) { 0 }
            #expect(events.first.map { if case .ignored = $0 { true } else { false } } == true, "\(bad)")
        }
        // A player without the controller role may not steer; nor anyone with no role of tutti's.
        var player = try opened()
        let (_, refused) = try player.receive(#"{"type":"client/command","payload":{"controller":{"command":"next"}}}"#, received: 0) { 0 }
        #expect(refused == [.ignored("client/command outside the controller role")])
        #expect(player.state(metadata: playing, controller: control).isEmpty)
        var stranger = SendspinServerSession(serverName: "t")
        #expect(throws: SendspinServerSession.Failure.noRole) { try stranger.receive(Self.hello("", roles: #"["visualizer@v1"]"#), received: 0) { 0 } }
    }

    @Test func goodbyeSaysWhy() throws {
        var session = try opened()
        let (_, events) = try session.receive(#"{"type":"client/goodbye","payload":{"reason":"shutdown"}}"#, received: 0) { 0 }
        #expect(events == [.goodbye(reason: "shutdown")])
    }
}
