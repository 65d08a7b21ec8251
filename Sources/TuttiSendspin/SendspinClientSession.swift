import FoundationEssentials
import TuttiCore

/// A player's side of a sealed Sendspin session (a tutti follower playing from a Sendspin
/// server): the texts it sends (`client/hello` with the player role and its formats,
/// `client/state`, `client/time`) and what it makes of the server's messages. Pure: the
/// shell seals and sends the texts, and hands it what it opened.
public struct SendspinClientSession: Sendable {
    /// What the server said that the player acts on.
    public enum Event: Equatable, Sendable {
        case hello(serverName: String)
        case activated(playback: Bool)
        /// The server asks to pair (its method: tutti's player runs `dynamic_pairing_code`).
        case pairing(method: String)
        /// A clock exchange's answer: the client's stamp (µs of its clock) and the server's
        /// receive and send instants (µs of the server's).
        case time(clientTransmitted: Int64, received: Int64, transmitted: Int64)
        case streamStart(SendspinFormat)
        case chunk(timestamp: Int64, payload: [UInt8])
        /// What was buffered and not yet heard is void, from the server's instant `at` (µs;
        /// nil when it did not say).
        case clear(at: Int64?)
        case end
        case volume(Int)
        case mute(Bool)
        case group(name: String, playing: Bool)
        case ignored(String)
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case unsupported(SendspinFormat)
        public var description: String {
            switch self {
            case let .malformed(why): "a malformed message from the server: \(why)"
            case let .unsupported(format): "the server streams \(format), which this player did not offer"
            }
        }
    }

    public let name: String
    public let formats: [SendspinFormat]
    public private(set) var format: SendspinFormat?

    /// - Parameter formats: what the player decodes, in its order of preference.
    public init(name: String, formats: [SendspinFormat]) {
        self.name = name
        self.formats = formats
    }

    public func hello(bufferCapacity: Int, product: String) -> String {
        let hello = Hello(name: name, supported_roles: [SendspinServerSession.playerRole],
                          device_info: .init(product_name: product, software_version: "tutti"),
                          player_support: .init(supported_formats: formats, buffer_capacity: bufferCapacity),
                          supported_pair_methods: ["dynamic_pairing_code": ["formats": ["digits"], "out_channels": ["display"]]],
                          unpaired_access: .init(enabled: true))
        return SendspinServerSession.json(SendspinServerSession.Envelope(type: "client/hello", payload: hello))
    }

    public func state(available: Bool, volume: Int, muted: Bool, requiredLeadMilliseconds: Int) -> String {
        let state = State(available: available, player: .init(volume: volume, muted: muted, output_delay_ms: 0,
                                                               required_lead_time_ms: requiredLeadMilliseconds,
                                                               min_buffer_ms: requiredLeadMilliseconds, supported_commands: ["volume", "mute"]))
        return SendspinServerSession.json(SendspinServerSession.Envelope(type: "client/state", payload: state))
    }

    public static func time(now: Int64) -> String {
        #"{"payload":{"client_transmitted":\#(now)},"type":"client/time"}"#
    }

    public static let goodbye = #"{"payload":{"reason":"shutdown"},"type":"client/goodbye"}"#

    /// A text from the server.
    public mutating func receive(_ text: String) throws(Failure) -> Event {
        guard JSONNesting.isShallow(Array(text.utf8)),
              let kind = try? JSONDecoder().decode(SendspinServerSession.Kind.self, from: Data(text.utf8)) else {
            throw .malformed("not a JSON message with a type")
        }
        let data = Data(text.utf8)
        func decode<T: Decodable>(_ type: T.Type) throws(Failure) -> T {
            guard let message = try? JSONDecoder().decode(Incoming<T>.self, from: data) else { throw .malformed(kind.type) }
            return message.payload
        }
        switch kind.type {
        case "server/hello":
            return .hello(serverName: String(try decode(ServerHelloIn.self).name.prefix(64)))
        case "server/activate":
            let activate = try decode(ActivateIn.self)
            if activate.activities.contains("pairing") { return .pairing(method: String((activate.pairing?.method ?? "").prefix(64))) }
            return .activated(playback: activate.activities.contains("playback"))
        case "server/time":
            let time = try decode(TimeIn.self)
            return .time(clientTransmitted: time.client_transmitted, received: time.server_received, transmitted: time.server_transmitted)
        case "stream/start":
            guard let player = try decode(StartIn.self).player else { return .ignored("stream/start without a player") }
            let chosen = SendspinFormat(codec: player.codec, channels: player.channels, sampleRate: player.sample_rate, bitDepth: player.bit_depth)
            guard formats.contains(chosen) else { throw .unsupported(chosen) }
            format = chosen
            return .streamStart(chosen)
        case "stream/clear":
            let clear = try? decode(RolesIn.self)
            return clear?.roles == nil || clear!.roles!.contains("player") ? .clear(at: clear?.server_transmitted) : .ignored("stream/clear of other roles")
        case "stream/end":
            let roles = (try? decode(RolesIn.self))?.roles
            if roles == nil || roles!.contains("player") {
                format = nil
                return .end
            }
            return .ignored("stream/end of other roles")
        case "server/command":
            guard let player = try decode(CommandIn.self).player else { return .ignored("server/command for other roles") }
            switch player.command {
            case "volume": return player.volume.map { .volume(min(max($0, 0), 100)) } ?? .ignored("volume without a level")
            case "mute": return player.mute.map { .mute($0) } ?? .ignored("mute without a value")
            default: return .ignored("server/command \(player.command.prefix(32))")
            }
        case "group/update":
            let group = try decode(GroupIn.self)
            return .group(name: String((group.group_name ?? "").prefix(64)), playing: group.playback_state == "playing")
        default:
            return .ignored(String(kind.type.prefix(64)))
        }
    }

    /// A binary message from the server: an audio chunk while a stream is open.
    public func receive(binary bytes: [UInt8]) -> Event {
        guard let chunk = SendspinAudioChunk(bytes: bytes) else { return .ignored("binary type \(bytes.first ?? 0)") }
        guard format != nil else { return .ignored("an audio chunk outside a stream") }
        return .chunk(timestamp: chunk.timestamp, payload: chunk.payload)
    }

    // MARK: - The messages' shapes

    struct Incoming<Payload: Decodable>: Decodable { let payload: Payload }
    struct Hello: Codable {
        struct Device: Codable { let product_name: String; let software_version: String }
        struct PlayerSupport: Codable { let supported_formats: [SendspinFormat]; let buffer_capacity: Int }
        struct Access: Codable { let enabled: Bool }
        let name: String
        let supported_roles: [String]
        let device_info: Device
        let player_support: PlayerSupport
        /// None yet (pairing is not built): the player is admitted unpaired or not at all.
        let supported_pair_methods: [String: [String: [String]]]
        let unpaired_access: Access
        enum CodingKeys: String, CodingKey {
            case name, supported_roles, device_info, supported_pair_methods, unpaired_access
            case player_support = "player@v1_support"
        }
    }
    struct State: Codable {
        struct Player: Codable {
            let volume: Int
            let muted: Bool
            let output_delay_ms: Int
            let required_lead_time_ms: Int
            let min_buffer_ms: Int
            let supported_commands: [String]
        }
        let available: Bool
        let player: Player
    }
    struct ServerHelloIn: Decodable { let name: String }
    struct ActivateIn: Decodable {
        struct Pairing: Decodable { let method: String }
        let activities: [String]
        let pairing: Pairing?
    }
    struct TimeIn: Decodable { let client_transmitted: Int64; let server_received: Int64; let server_transmitted: Int64 }
    struct StartIn: Decodable {
        struct Player: Decodable { let codec: String; let sample_rate: Int; let channels: Int; let bit_depth: Int }
        let player: Player?
    }
    struct RolesIn: Decodable { let roles: [String]?; let server_transmitted: Int64? }
    struct CommandIn: Decodable {
        struct Player: Decodable { let command: String; let volume: Int?; let mute: Bool? }
        let player: Player?
    }
    struct GroupIn: Decodable { let playback_state: String?; let group_name: String? }
}
