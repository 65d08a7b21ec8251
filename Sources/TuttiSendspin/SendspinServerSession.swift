import FoundationEssentials
import TuttiCore

/// An audio format as Sendspin names it: a codec, its channels, rate and bit depth.
public struct SendspinFormat: Codable, Hashable, Sendable, CustomStringConvertible {
    public var codec: String
    public var channels: Int
    public var sample_rate: Int
    public var bit_depth: Int

    public init(codec: String, channels: Int, sampleRate: Int, bitDepth: Int) {
        self.codec = codec
        self.channels = channels
        sample_rate = sampleRate
        bit_depth = bitDepth
    }

    public var description: String { "\(codec) \(sample_rate) Hz, \(bit_depth)-bit, \(channels) ch" }
}

/// Makes a stream's audio in one of the formats a server sends, a chunk at a time (each
/// chunk decodable on its own: a player may join at any of them).
public protocol SendspinEncoder: AnyObject, Sendable {
    /// What `stream/start` carries as the codec's header (FLAC's STREAMINFO), if anything.
    var codecHeader: [UInt8]? { get }
    /// One chunk of interleaved samples of the format's channels.
    func encode(_ samples: [Float]) throws -> [UInt8]
}

/// Sendspin's PCM (`SendspinPCM`).
public final class SendspinPCMEncoder: SendspinEncoder {
    public let bitDepth: Int
    public init(bitDepth: Int) { self.bitDepth = bitDepth }
    public var codecHeader: [UInt8]? { nil }
    public func encode(_ samples: [Float]) -> [UInt8] { SendspinPCM.encode(samples, bitDepth: bitDepth) }
}

/// Makes an encoder for a format, for chunks of `frames` frames.
public typealias SendspinEncoderMaker = @Sendable (_ format: SendspinFormat, _ frames: Int) throws -> any SendspinEncoder

/// What a player said about itself in `client/hello` (the parts a server acts on).
public struct SendspinPlayerHello: Equatable, Sendable {
    public var name: String
    public var roles: [String]
    /// The formats it decodes, in its order of preference.
    public var formats: [SendspinFormat]
    /// Bytes of encoded audio it can hold.
    public var bufferCapacity: Int
}

/// What a player says of its state in `client/state` (each part absent when it did not say).
public struct SendspinPlayerState: Equatable, Sendable {
    public var available: Bool?
    public var volume: Int?
    public var muted: Bool?
    public var outputDelayMilliseconds: Double?
    /// How long before a chunk is heard it must arrive (ms).
    public var requiredLeadMilliseconds: Double?
}

/// The server's side of a Sendspin session once its transport is sealed: which messages to
/// send when (`server/hello`, `server/activate`, `group/update`, `stream/start`, chunks,
/// `stream/clear`, `stream/end`, `server/command`, `server/time`), and what the player said.
/// Pure: the shell hands it the player's texts and the audio, with the time, and sends
/// what it returns through the session's transport. The order is the reference server's
/// (aiosendspin 10): hello, then the player's hello, then activation with its role; the
/// stream starts once the player says it is available and there is audio.
public struct SendspinServerSession: Sendable {
    /// The rate of tutti's zones.
    public static let rate = 48_000
    public static let playerRole = "player@v1"
    /// Chunks held for a player not yet available (its first seconds), at most.
    public static let heldChunks = 200

    /// Why a player's message was refused (the session ends).
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case outOfTurn(String)
        case noFormat([SendspinFormat])

        public var description: String {
            switch self {
            case let .malformed(why): "a malformed message: \(why)"
            case let .outOfTurn(type): "\(type) before client/hello"
            case let .noFormat(offered): "it decodes none of tutti's formats (PCM or FLAC at 48 kHz, 1 or 2 channels, 16 or 24 bits); it offered "
                + (offered.isEmpty ? "none" : offered.prefix(8).map(\.description).joined(separator: "; "))
            }
        }
    }

    /// What the player said that the house hears of.
    public enum Event: Equatable, Sendable {
        case hello(SendspinPlayerHello, format: SendspinFormat)
        case state(SendspinPlayerState)
        case goodbye(reason: String)
        /// A message the session does not act on (its type), counted.
        case ignored(String)
    }

    public let serverName: String
    /// The encoders by codec, in the order tutti prefers them where a player has no order.
    let encoders: [String: SendspinEncoderMaker]
    /// The stream's encoder, made at its start for chunks of `frames` frames.
    private var encoder: (coder: any SendspinEncoder, frames: Int)?
    public private(set) var hello: SendspinPlayerHello?
    /// The format the stream is sent in (chosen at the player's hello).
    public private(set) var format: SendspinFormat?
    public private(set) var state = SendspinPlayerState()
    /// The group the player is in (the tutti zone it plays): its id and name, and whether it
    /// plays, as last told.
    public private(set) var group: (id: String, name: String, playing: Bool)?
    /// Whether a stream is open (started and not ended), and whether it has audio since the
    /// last clear.
    public private(set) var streaming = false
    /// Audio that came while the player was not yet available (newest last).
    private var held: [(samples: [Float], channels: Int, heard: Int64)] = []
    /// The last volume and mute sent to the player.
    private var commanded: (volume: Int?, muted: Bool?) = (nil, nil)
    public private(set) var ignored = 0

    /// PCM alone unless `encoders` say more (FLAC, which needs FFmpeg: the coordinator's).
    public init(serverName: String, encoders: [String: SendspinEncoderMaker] = [:]) {
        self.serverName = serverName
        self.encoders = encoders.merging(["pcm": { format, _ in SendspinPCMEncoder(bitDepth: format.bit_depth) }]) { given, _ in given }
    }

    /// The first message: the server's hello.
    public func start() -> [SendspinMessage] {
        [.text(Self.json(Envelope(type: "server/hello", payload: ServerHello(name: serverName))))]
    }

    /// A text from the player, received at `received` (server µs); `now` reads the clock
    /// just before an answer goes (a `server/time`'s send instant).
    public mutating func receive(_ text: String, received: Int64, now: () -> Int64) throws(Failure) -> (send: [SendspinMessage], events: [Event]) {
        guard JSONNesting.isShallow(text), let kind = try? JSONDecoder().decode(Kind.self, from: Data(text.utf8)) else {
            throw .malformed("not a JSON message with a type")
        }
        switch kind.type {
        case "client/time":
            guard let sent = SendspinTime.clientTransmitted(in: text) else { throw .malformed("client/time without client_transmitted") }
            return ([.text(SendspinTime.reply(clientTransmitted: sent, received: received, transmitted: now()))], [])
        case "client/hello":
            guard hello == nil else { throw .malformed("a second client/hello") }
            guard let message = try? JSONDecoder().decode(Envelope<ClientHello>.self, from: Data(text.utf8)) else {
                throw .malformed("client/hello")
            }
            let payload = message.payload
            let offered = payload.player_support?.supported_formats ?? []
            guard payload.supported_roles.contains(Self.playerRole),
                  let format = offered.first(where: sends) else { throw .noFormat(offered) }
            let name = String(payload.name.trimmingWhitespace().prefix(64))
            let said = SendspinPlayerHello(name: name.isEmpty ? "Sendspin player" : name, roles: payload.supported_roles,
                                           formats: offered, bufferCapacity: payload.player_support?.buffer_capacity ?? 0)
            hello = said
            self.format = format
            let activate = Activate(activities: [], active_roles: [Self.playerRole])
            return ([.text(Self.json(Envelope(type: "server/activate", payload: activate)))], [.hello(said, format: format)])
        case "client/state":
            guard hello != nil else { throw .outOfTurn(kind.type) }
            guard let message = try? JSONDecoder().decode(Envelope<ClientState>.self, from: Data(text.utf8)) else {
                throw .malformed("client/state")
            }
            let said = message.payload
            if let available = said.available { state.available = available }
            if let player = said.player {
                if let volume = player.volume { state.volume = min(max(volume, 0), 100) }
                if let muted = player.muted { state.muted = muted }
                if let delay = player.output_delay_ms, delay.isFinite { state.outputDelayMilliseconds = min(max(delay, 0), 10_000) }
                if let lead = player.required_lead_time_ms, lead.isFinite { state.requiredLeadMilliseconds = min(max(lead, 0), 10_000) }
            }
            var send: [SendspinMessage] = []
            if state.available == true, !held.isEmpty {
                // Available now: what was held goes, but what is already past goes no more.
                let t = now()
                let due = held.filter { $0.heard > t }
                held = []
                for chunk in due { send += audio(chunk.samples, channels: chunk.channels, heard: chunk.heard, now: t) }
            }
            return (send, [.state(state)])
        case "client/goodbye":
            struct Goodbye: Codable { let reason: String? }
            let reason = (try? JSONDecoder().decode(Envelope<Goodbye>.self, from: Data(text.utf8)))?.payload.reason ?? "none given"
            return ([], [.goodbye(reason: String(reason.prefix(64)))])
        default:
            ignored += 1
            return ([], [.ignored(String(kind.type.prefix(64)))])
        }
    }

    /// The group (zone) the player plays in, and whether it plays: `group/update` when that
    /// changed, and the activation for playback.
    public mutating func join(group id: String, name: String, playing: Bool) -> [SendspinMessage] {
        guard hello != nil, group?.id != id || group?.name != name || group?.playing != playing else { return [] }
        group = (id, name, playing)
        return [.text(Self.json(Envelope(type: "group/update", payload: GroupUpdate(
            playback_state: playing ? "playing" : "stopped", group_id: id, group_name: name))))]
    }

    /// One chunk of the zone's audio (interleaved floats at 48 kHz, the zone's channels),
    /// heard at `heard` (server µs), at `now`.
    public mutating func audio(_ samples: [Float], channels: Int, heard: Int64, now: Int64) -> [SendspinMessage] {
        guard let format, hello != nil, channels > 0 else { return [] }
        guard state.available == true else {
            held.append((samples, channels, heard))
            if held.count > Self.heldChunks { held.removeFirst(held.count - Self.heldChunks) }
            return []
        }
        let fitted = channels == format.channels ? samples : Self.mix(samples, from: channels, to: format.channels)
        let frames = fitted.count / format.channels
        var send: [SendspinMessage] = []
        if streaming, encoder?.frames != frames {
            // Chunks of another length (the house's frame size changed): a stream of its own.
            send += end()
        }
        send += openStream(frames: frames, at: now)
        guard let encoder else { return send }
        do {
            let payload = try encoder.coder.encode(fitted)
            return send + [.binary(SendspinAudioChunk(timestamp: heard, sentAt: now, payload: payload).bytes)]
        } catch {
            failedChunks += 1
            return send
        }
    }

    /// Chunks the encoder could not make (each a hole in the player's sound).
    public private(set) var failedChunks = 0

    /// What was sent and not yet heard is void (a pause, a seek, another track): the player
    /// drops its buffer, the stream stays open.
    public mutating func clear(at now: Int64) -> [SendspinMessage] {
        held = []
        guard streaming else { return [] }
        return [.text(Self.json(Envelope(type: "stream/clear", payload: StreamClear(server_transmitted: now, roles: ["player"]))))]
    }

    /// The zone stopped: the stream ends.
    public mutating func end() -> [SendspinMessage] {
        held = []
        guard streaming else { return [] }
        streaming = false
        return [.text(Self.json(Envelope(type: "stream/end", payload: StreamEnd(roles: ["player"])))),
                .text(Self.json(Envelope(type: "server/activate", payload: Activate(activities: [], active_roles: nil))))]
    }

    /// The room's volume (0 to 1, the house's perceptual scale) and mute, as commands when
    /// they differ from what the player was last told.
    public mutating func set(volume: Double, muted: Bool) -> [SendspinMessage] {
        guard hello != nil else { return [] }
        let level = Int((min(max(volume, 0), 1) * 100).rounded())
        var send: [SendspinMessage] = []
        if commanded.volume != level {
            commanded.volume = level
            send.append(.text(Self.json(Envelope(type: "server/command", payload: Command(player: .init(command: "volume", volume: level, mute: nil))))))
        }
        if commanded.muted != muted {
            commanded.muted = muted
            send.append(.text(Self.json(Envelope(type: "server/command", payload: Command(player: .init(command: "mute", volume: nil, mute: muted))))))
        }
        return send
    }

    /// Whether this session sends `format`.
    public func sends(_ format: SendspinFormat) -> Bool {
        encoders[format.codec] != nil && format.sample_rate == Self.rate && (1...2).contains(format.channels) && [16, 24].contains(format.bit_depth)
    }

    private mutating func openStream(frames: Int, at now: Int64) -> [SendspinMessage] {
        guard !streaming, let format, let make = encoders[format.codec] else { return [] }
        do {
            encoder = (try make(format, frames), frames)
        } catch {
            encoder = nil
            failedChunks += 1
            return []
        }
        streaming = true
        let header = encoder?.coder.codecHeader.map { Data($0).base64EncodedString() }
        let start = StreamStart(server_transmitted: now, player: .init(codec: format.codec, sample_rate: format.sample_rate,
                                                                       channels: format.channels, bit_depth: format.bit_depth,
                                                                       codec_header: header))
        return [.text(Self.json(Envelope(type: "server/activate", payload: Activate(activities: ["playback"], active_roles: nil)))),
                .text(Self.json(Envelope(type: "stream/start", payload: start)))]
    }

    /// Interleaved samples from one channel count to another (mono: the mean; more: the
    /// first channel repeated).
    static func mix(_ samples: [Float], from: Int, to: Int) -> [Float] {
        guard from > 0, to > 0 else { return [] }
        let frames = samples.count / from
        var out = [Float](repeating: 0, count: frames * to)
        for f in 0..<frames {
            if to == 1 {
                var sum: Float = 0
                for c in 0..<from { sum += samples[f * from + c] }
                out[f] = sum / Float(from)
            } else {
                for c in 0..<to { out[f * to + c] = samples[f * from + min(c, from - 1)] }
            }
        }
        return out
    }

    static func json<T: Encodable>(_ value: T) -> String { SendspinServerHandshake.json(value) }

    // MARK: - The messages' shapes

    struct Envelope<Payload: Codable>: Codable {
        let type: String
        let payload: Payload
    }
    struct Kind: Decodable { let type: String }
    struct ServerHello: Codable { let name: String }
    struct ClientHello: Codable {
        struct PlayerSupport: Codable {
            let supported_formats: [SendspinFormat]
            let buffer_capacity: Int?
        }
        let name: String
        let supported_roles: [String]
        let player_support: PlayerSupport?
        enum CodingKeys: String, CodingKey {
            case name, supported_roles
            case player_support = "player@v1_support"
        }
    }
    struct ClientState: Codable {
        struct Player: Codable {
            let volume: Int?
            let muted: Bool?
            let output_delay_ms: Double?
            let required_lead_time_ms: Double?
        }
        let available: Bool?
        let player: Player?
    }
    struct Activate: Codable {
        let activities: [String]
        let active_roles: [String]?
    }
    struct GroupUpdate: Codable {
        let playback_state: String
        let group_id: String
        let group_name: String
    }
    struct StreamStart: Codable {
        struct Player: Codable {
            let codec: String
            let sample_rate: Int
            let channels: Int
            let bit_depth: Int
            let codec_header: String?
        }
        let server_transmitted: Int64
        let player: Player
    }
    struct StreamClear: Codable {
        let server_transmitted: Int64
        let roles: [String]
    }
    struct StreamEnd: Codable { let roles: [String] }
    struct Command: Codable {
        struct Player: Codable {
            let command: String
            let volume: Int?
            let mute: Bool?
        }
        let player: Player
    }
}
