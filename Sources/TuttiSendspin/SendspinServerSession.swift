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
    /// Frames by which what the player decodes lags what went in (Opus's lookahead): each
    /// chunk is stamped that much earlier, so that the music is heard when the house says.
    var delayFrames: Int { get }
}

extension SendspinEncoder {
    public var delayFrames: Int { 0 }
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
    /// The pairing methods by code it offers, of those tutti's server runs
    /// (`static_pairing_code`, `dynamic_pairing_code` with digits).
    public var pairMethods: [String] = []
}

/// What a player says of its state in `client/state` (each part absent when it did not say).
/// One of a display's artwork channels, as it asked in `client/state`: what picture (the
/// album's or the artist's), in which format and at what size.
public struct SendspinArtworkChannel: Codable, Equatable, Sendable {
    /// `album`, `artist` or `none`.
    public var source: String
    /// `jpeg` or `png`; its size in pixels (1 to 4,096). Absent for `none`.
    public var format: String?
    public var width: Int?
    public var height: Int?

    public init(source: String, format: String? = nil, width: Int? = nil, height: Int? = nil) {
        self.source = source
        self.format = format
        self.width = width
        self.height = height
    }

    /// Whether it can be streamed as asked.
    var isValid: Bool {
        if source == "none" { return true }
        guard ["album", "artist"].contains(source), let format, ["jpeg", "png"].contains(format),
              let width, let height, (1...4_096).contains(width), (1...4_096).contains(height) else { return false }
        return true
    }
}

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
    public static let controllerRole = "controller@v1"
    public static let metadataRole = "metadata@v1"
    public static let artworkRole = "artwork@v1"
    /// The roles tutti's server activates, in this order.
    public static let roles = [playerRole, controllerRole, metadataRole, artworkRole]
    /// An artwork message's largest part of a picture (the reference's bound: a part's two
    /// bytes of prefix within 65,519).
    public static let artworkPart = 65_517
    /// Chunks held for a player not yet available (its first seconds), at most.
    public static let heldChunks = 200

    /// Why a player's message was refused (the session ends).
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case outOfTurn(String)
        case noFormat([SendspinFormat])
        case noRole

        public var description: String {
            switch self {
            case let .malformed(why): "a malformed message: \(why)"
            case let .outOfTurn(type): "\(type) before client/hello"
            case .noRole: "it takes none of the roles tutti serves (player@v1, controller@v1, metadata@v1, artwork@v1)"
            case let .noFormat(offered): "it decodes none of tutti's formats (PCM, FLAC or Opus at 48 kHz, 1 or 2 channels, 16 or 24 bits); it offered "
                + (offered.isEmpty ? "none" : offered.prefix(8).map(\.description).joined(separator: "; "))
            }
        }
    }

    /// What the player said that the house hears of.
    public enum Event: Equatable, Sendable {
        /// Its hello: its roles, and the format it is streamed in (nil: not a player).
        case hello(SendspinPlayerHello, format: SendspinFormat?)
        /// A command of its controller role, for its group (zone).
        case command(SendspinControllerCommand)
        case state(SendspinPlayerState)
        case goodbye(reason: String)
        /// A message the session does not act on (its type), counted.
        case ignored(String)
    }

    public let serverName: String
    /// Whether the player may play (paired, or admitted unpaired by the house); one that
    /// may not gets no role and no audio until it is paired (`admit`).
    public private(set) var playable: Bool
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

    /// PCM alone unless `encoders` say more (FLAC, which needs FFmpeg, and Opus: the
    /// coordinator's).
    public init(serverName: String, encoders: [String: SendspinEncoderMaker] = [:], playable: Bool = true) {
        self.serverName = serverName
        self.playable = playable
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
            let roles = Self.roles.filter(payload.supported_roles.contains)
            guard !roles.isEmpty else { throw .noRole }
            var format: SendspinFormat?
            if roles.contains(Self.playerRole) {
                guard let chosen = offered.first(where: sends) else { throw .noFormat(offered) }
                format = chosen
            }
            let name = String(payload.name.trimmingWhitespace().prefix(64))
            let methods = payload.supported_pair_methods ?? [:]
            let pairMethods = ["dynamic_pairing_code", "static_pairing_code"].filter { method in
                methods[method].map { method == "static_pairing_code" || ($0.formats ?? []).contains("digits") } ?? false
            }
            let said = SendspinPlayerHello(name: name.isEmpty ? "Sendspin player" : name, roles: roles,
                                           formats: offered, bufferCapacity: payload.player_support?.buffer_capacity ?? 0, pairMethods: pairMethods)
            hello = said
            self.format = format
            // A session the house does not let play yet (a player not paired) is activated
            // with no role: it can be paired, nothing more.
            let activate = Activate(activities: [], active_roles: playable ? roles : [])
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
            if let artwork = said.artwork, hello?.roles.contains(Self.artworkRole) == true {
                // Its artwork channels (1 to 4): the stream (re)starts with them (once it may
                // play: a display not yet paired gets it when it is).
                guard (1...4).contains(artwork.channels.count), artwork.channels.allSatisfy(\.isValid) else {
                    throw .malformed("client/state's artwork channels (1 to 4: album, artist or none; jpeg or png; 1 to 4096 pixels)")
                }
                if artwork.channels != artworkChannels {
                    artworkChannels = artwork.channels
                    if playable { send += startArtwork() }
                }
            }
            if state.available == true, !held.isEmpty {
                // Available now: what was held goes, but what is already past goes no more.
                let t = now()
                let due = held.filter { $0.heard > t }
                held = []
                for chunk in due { send += audio(chunk.samples, channels: chunk.channels, heard: chunk.heard, now: t) }
            }
            return (send, [.state(state)])
        case "client/command":
            guard let hello else { throw .outOfTurn(kind.type) }
            guard playable, hello.roles.contains(Self.controllerRole),
                  let message = try? JSONDecoder().decode(Envelope<ClientCommand>.self, from: Data(text.utf8)),
                  let controller = message.payload.controller else {
                ignored += 1
                return ([], [.ignored("client/command outside the controller role")])
            }
            guard let command = SendspinControllerCommand(controller) else {
                ignored += 1
                return ([], [.ignored("controller command \(controller.command.prefix(32))")])
            }
            return ([], [.command(command)])
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
        guard let format, hello != nil, playable, channels > 0 else { return [] }
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
            let stamp = heard - Int64(encoder.coder.delayFrames) * 1_000_000 / Int64(format.sample_rate)
            return send + [.binary(SendspinAudioChunk(timestamp: stamp, sentAt: now, payload: payload).bytes)]
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

    /// The display's artwork channels, as it last asked (index: the channel).
    public private(set) var artworkChannels: [SendspinArtworkChannel] = []

    private func startArtwork() -> [SendspinMessage] {
        let streamed = artworkChannels.lastIndex { $0.source != "none" }.map { Array(artworkChannels[...$0]) } ?? []
        return [.text(Self.json(Envelope(type: "stream/start", payload: ArtworkStart(artwork: .init(channels: streamed)))))]
    }

    /// A picture for artwork channel `channel` (empty: the channel is cleared), shown from
    /// `timestamp` (server µs): an announce (the channel's type, flags 0x02, the instant, the
    /// size), then the picture in parts.
    public func artwork(channel: Int, image: [UInt8], timestamp: Int64) -> [SendspinMessage] {
        guard playable, artworkChannels.indices.contains(channel), artworkChannels[channel].source != "none" else { return [] }
        let type = UInt8(8 + channel)
        var announce: [UInt8] = [type, 0x02]
        for i in (0..<8).reversed() { announce.append(UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64(i)))) }
        for i in (0..<4).reversed() { announce.append(UInt8(truncatingIfNeeded: UInt32(image.count) >> (8 * UInt32(i)))) }
        var messages: [SendspinMessage] = [.binary(announce)]
        var at = 0
        while at < image.count {
            let end = min(image.count, at + Self.artworkPart)
            messages.append(.binary([type, 0x00] + image[at..<end]))
            at = end
        }
        return messages
    }

    /// The player may play now (it was paired): its roles are activated.
    public mutating func admit() -> [SendspinMessage] {
        guard !playable, let hello else { return [] }
        playable = true
        return [.text(Self.json(Envelope(type: "server/activate", payload: Activate(activities: [], active_roles: hello.roles))))]
            + (artworkChannels.isEmpty ? [] : startArtwork())
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

    /// What its metadata and controller roles are told, as `server/state` when it changed
    /// (only the roles it has; the metadata's progress moves on by itself, from its instant
    /// and speed: a new one goes when the track, the timeline or the text changes).
    public mutating func state(metadata: SendspinMetadata?, controller: SendspinControllerState?) -> [SendspinMessage] {
        guard let hello else { return [] }
        var payload = StatePayload(metadata: nil, controller: nil)
        if hello.roles.contains(Self.metadataRole), let metadata, metadata.key != toldMetadata?.key {
            toldMetadata = metadata
            payload.metadata = metadata
        }
        if hello.roles.contains(Self.controllerRole), let controller, controller != toldController {
            toldController = controller
            payload.controller = controller
        }
        guard payload.metadata != nil || payload.controller != nil else { return [] }
        return [.text(Self.json(Envelope(type: "server/state", payload: payload)))]
    }
    /// Whether it has a role `state` tells (metadata, controller).
    public var hearsState: Bool {
        playable && (!artworkChannels.isEmpty || (hello.map { $0.roles.contains(Self.metadataRole) || $0.roles.contains(Self.controllerRole) } ?? false))
    }
    private var toldMetadata: SendspinMetadata?
    private var toldController: SendspinControllerState?

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
        struct PairMethod: Codable { let formats: [String]? }
        let name: String
        let supported_roles: [String]
        let player_support: PlayerSupport?
        let supported_pair_methods: [String: PairMethod]?
        enum CodingKeys: String, CodingKey {
            case name, supported_roles, supported_pair_methods
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
        struct Artwork: Codable { let channels: [SendspinArtworkChannel] }
        let available: Bool?
        let player: Player?
        let artwork: Artwork?
    }
    struct Activate: Codable {
        let activities: [String]
        let active_roles: [String]?
    }
    struct ArtworkStart: Codable {
        struct Channels: Codable { let channels: [SendspinArtworkChannel] }
        let artwork: Channels
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
    struct StatePayload: Codable {
        var metadata: SendspinMetadata?
        var controller: SendspinControllerState?
    }
    struct ClientCommand: Codable {
        struct Controller: Codable {
            let command: String
            let volume: Int?
            let mute: Bool?
            let position_ms: Int64?
            let offset_ms: Int64?
        }
        let controller: Controller?
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

/// What a metadata role is told of what plays (`server/state`'s `metadata`): the text, and
/// the progress at the server's instant `timestamp` (µs) with its speed (× 1000; 0 paused).
public struct SendspinMetadata: Codable, Equatable, Sendable {
    public struct Progress: Codable, Equatable, Sendable {
        public var track_progress: Int64
        public var track_duration: Int64
        public var playback_speed: Int
    }
    public var timestamp: Int64
    public var title: String?
    public var artist: String?
    public var album_artist: String?
    public var album: String?
    public var year: Int?
    public var track: Int?
    public var progress: Progress?

    public init(timestamp: Int64, title: String?, artist: String?, albumArtist: String?, album: String?, year: Int?, track: Int?,
                elapsedMilliseconds: Int64?, durationMilliseconds: Int64?, playing: Bool) {
        self.timestamp = timestamp
        self.title = title
        self.artist = artist
        album_artist = albumArtist
        self.album = album
        self.year = year
        self.track = track
        progress = elapsedMilliseconds.map {
            Progress(track_progress: max(0, $0), track_duration: max(0, durationMilliseconds ?? 0), playback_speed: playing ? 1_000 : 0)
        }
    }

    /// What it says but the instant: where the progress would be at the instant 0 (a
    /// timeline that moves on as expected is no news).
    var key: [String] {
        let speed = progress?.playback_speed ?? 0
        let origin = progress.map { $0.track_progress - timestamp * Int64(speed) / 1_000_000 } ?? 0
        // Within 50 ms: the same timeline read at another instant.
        return [title ?? "", artist ?? "", album_artist ?? "", album ?? "", "\(year ?? 0)", "\(track ?? 0)",
                "\(progress?.track_duration ?? -1)", "\(speed)", "\(origin / 50)"]
    }
}

/// What a controller role is told of its group (`server/state`'s `controller`).
public struct SendspinControllerState: Codable, Equatable, Sendable {
    public var supported_commands: [String]
    public var volume: Int
    public var muted: Bool
    public var `repeat`: String
    public var shuffle: Bool
    public var seek_max_ms: Int64?

    public static let commands = ["play", "pause", "stop", "next", "previous", "volume", "mute", "repeat_off", "repeat_one",
                                  "repeat_all", "shuffle", "unshuffle", "seek", "seek_relative"]

    public init(volume: Double, muted: Bool, `repeat`: String, shuffle: Bool, durationMilliseconds: Int64?) {
        supported_commands = Self.commands.filter { durationMilliseconds != nil || !$0.hasPrefix("seek") }
        self.volume = Int((min(max(volume, 0), 1) * 100).rounded())
        self.muted = muted
        self.`repeat` = `repeat`
        self.shuffle = shuffle
        seek_max_ms = durationMilliseconds
    }
}

/// A controller's command for its group.
public enum SendspinControllerCommand: Equatable, Sendable, CustomStringConvertible {
    public var description: String {
        switch self {
        case .play: "play"
        case .pause: "pause"
        case .stop: "stop"
        case .next: "next"
        case .previous: "previous"
        case let .volume(level): "volume \(level)%"
        case let .mute(on): on ? "mute" : "unmute"
        case let .repeatMode(mode): "repeat \(mode)"
        case let .shuffle(on): on ? "shuffle" : "unshuffle"
        case let .seek(ms): "seek to \(Double(ms) / 1_000) s"
        case let .seekRelative(ms): "seek by \(Double(ms) / 1_000) s"
        }
    }

    case play, pause, stop, next, previous
    case volume(Int)
    case mute(Bool)
    case repeatMode(String)
    case shuffle(Bool)
    case seek(milliseconds: Int64)
    case seekRelative(milliseconds: Int64)

    init?(_ c: SendspinServerSession.ClientCommand.Controller) {
        switch c.command {
        case "play": self = .play
        case "pause": self = .pause
        case "stop": self = .stop
        case "next": self = .next
        case "previous": self = .previous
        case "volume": guard let v = c.volume else { return nil }; self = .volume(min(max(v, 0), 100))
        case "mute": guard let m = c.mute else { return nil }; self = .mute(m)
        case "repeat_off": self = .repeatMode("off")
        case "repeat_one": self = .repeatMode("one")
        case "repeat_all": self = .repeatMode("all")
        case "shuffle": self = .shuffle(true)
        case "unshuffle": self = .shuffle(false)
        case "seek": guard let p = c.position_ms, p >= 0 else { return nil }; self = .seek(milliseconds: min(p, 1 << 40))
        case "seek_relative": guard let o = c.offset_ms else { return nil }; self = .seekRelative(milliseconds: min(max(o, -(1 << 40)), 1 << 40))
        default: return nil
        }
    }
}
