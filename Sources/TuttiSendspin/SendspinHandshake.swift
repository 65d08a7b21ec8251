import FoundationEssentials
import TuttiSecurity

/// A Sendspin peer's identity: its long-term X25519 key. Its id, on the wire, is the public
/// key in base64url without padding (43 characters): a client's `client_id`, a server's
/// `server_id`.
public struct SendspinIdentity: Sendable, Equatable {
    public let privateKey: [UInt8]
    public let publicKey: [UInt8]

    public init(privateKey: [UInt8]) {
        precondition(privateKey.count == X25519.keySize)
        self.privateKey = privateKey
        publicKey = X25519.publicKey(of: privateKey)
    }

    public static func generate() -> SendspinIdentity { SendspinIdentity(privateKey: X25519.newPrivateKey()) }

    public var id: String { Base64URL.encode(publicKey) }
}

/// Which kind of pre-shared key admitted a session, as Sendspin names them in Noise
/// message 1 (two letters each, so the sealed payload's length tells nothing).
public enum SendspinPSKCategory: String, Sendable, Codable {
    case longTerm = "lt"
    case pairing = "pr"
    case sentinel = "sn"
}

/// A pre-shared key and what it is.
public struct SendspinPSK: Sendable, Equatable {
    public let key: [UInt8]
    public let category: SendspinPSKCategory

    public init(key: [UInt8], category: SendspinPSKCategory) {
        precondition(key.count == 32)
        self.key = key
        self.category = category
    }

    /// The protocol's published key, which authenticates nothing: a session under it is
    /// sealed against eavesdroppers on the path but admits anyone (unpaired access).
    public static let sentinel = SendspinPSK(key: SHA256Digest.of(Array("sendspin-sentinel-psk-v1".utf8)), category: .sentinel)

    /// How a Noise message 1 names it: base64url of SHA-256 of a label and the key.
    public var id: String { Base64URL.encode(SHA256Digest.of(Array("sendspin-psk-id-v1".utf8) + key)) }
}

/// Why a session's opening was refused. `.rejected` carries the `server/error` reason the
/// client is told (then the connection closes); the others close it without a word, as the
/// reference implementation does.
public enum SendspinHandshakeError: Error, Equatable, CustomStringConvertible {
    case rejected(reason: String, detail: String)
    case notAdmitted(clientID: String)
    case malformed(String)
    case noise(NoiseError)

    public var description: String {
        switch self {
        case let .rejected(reason, detail): "client/init refused (\(reason)): \(detail)"
        case let .notAdmitted(id): "no key admits client \(id) (unpaired access is off)"
        case let .malformed(why): "malformed Sendspin handshake: \(why)"
        case let .noise(error): "\(error)"
        }
    }
}

/// The server's side of a Sendspin session's opening (the Noise initiator): the client's
/// cleartext `client/init` (its id, the protocol's version 1, a suite), answered with
/// `server/init` and Noise message 1 (which names the pre-shared key the server admits the
/// client with); then the client's message 2, after which every message is sealed
/// (`SendspinTransport`). Pure: it is handed texts and hands back the texts to send.
public struct SendspinServerHandshake: Sendable {
    public static let version = 1
    let identity: SendspinIdentity
    private var noise: NoiseHandshake?
    public private(set) var clientID: String?
    public private(set) var psk: SendspinPSK?

    public init(identity: SendspinIdentity) {
        self.identity = identity
    }

    /// Reads `client/init`; `admit` gives the pre-shared key the client is admitted with
    /// (its pairing's, or the sentinel where the house allows unpaired access), or nil.
    /// Returns the texts to send, in order: `server/init`, then Noise message 1.
    public mutating func receiveClientInit(_ text: String, admit: (String) -> SendspinPSK?) throws(SendspinHandshakeError) -> [String] {
        guard noise == nil else { throw .malformed("a second client/init") }
        let envelope: Envelope<ClientInit>
        do {
            envelope = try JSONDecoder().decode(Envelope<ClientInit>.self, from: Data(text.utf8))
        } catch {
            throw .rejected(reason: "malformed", detail: "not a client/init: \(error)")
        }
        guard envelope.type == "client/init" else { throw .rejected(reason: "malformed", detail: "not a client/init envelope") }
        let payload = envelope.payload
        guard payload.version == Self.version else {
            throw .rejected(reason: "unsupported_version", detail: "protocol version \(payload.version)")
        }
        guard let suite = NoiseSuite(rawValue: payload.suite) else {
            throw .rejected(reason: "unsupported_suite", detail: "suite \(payload.suite)")
        }
        guard let clientKey = Base64URL.decode(payload.client_id), clientKey.count == X25519.keySize,
              Base64URL.encode(clientKey) == payload.client_id else {
            throw .rejected(reason: "malformed", detail: "client_id is not a base64url X25519 key")
        }
        guard let psk = admit(payload.client_id) else { throw .notAdmitted(clientID: payload.client_id) }
        let serverInit = Self.json(Envelope(type: "server/init", payload: ServerInit(server_id: identity.id, version: Self.version)))
        do {
            var handshake = try NoiseHandshake(suite: suite, initiator: true, staticPrivate: identity.privateKey, remoteStatic: clientKey,
                                               prologue: Array(text.utf8) + Array(serverInit.utf8), psk: psk.key)
            let first = try handshake.writeMessage(Array(Self.json(Message1(psk_id: psk.id, psk_category: psk.category.rawValue)).utf8))
            noise = handshake
            clientID = payload.client_id
            self.psk = psk
            return [serverInit, Self.json(Envelope(type: "noise/handshake", payload: HandshakeData(data: Base64URL.encode(first))))]
        } catch {
            throw .noise(error)
        }
    }

    /// An in-band re-handshake of a running session onto `psk` (after a pairing, its new
    /// long-term key): Noise message 1, to send sealed in the session as it is, with the
    /// session's handshake hash for prologue; the client's message 2 (`receiveHandshake`)
    /// gives the transport that replaces the session's.
    public mutating func rekey(clientID: String, suite: NoiseSuite, previousHash: [UInt8], psk: SendspinPSK) throws(SendspinHandshakeError) -> String {
        guard noise == nil else { throw .malformed("a re-handshake of a handshake under way") }
        guard let clientKey = Base64URL.decode(clientID), clientKey.count == X25519.keySize else { throw .malformed("client_id") }
        do {
            var handshake = try NoiseHandshake(suite: suite, initiator: true, staticPrivate: identity.privateKey, remoteStatic: clientKey,
                                               prologue: previousHash, psk: psk.key)
            let first = try handshake.writeMessage(Array(Self.json(Message1(psk_id: psk.id, psk_category: psk.category.rawValue)).utf8))
            noise = handshake
            self.clientID = clientID
            self.psk = psk
            return Self.json(Envelope(type: "noise/handshake", payload: HandshakeData(data: Base64URL.encode(first))))
        } catch {
            throw .noise(error)
        }
    }

    /// Reads the client's Noise message 2; returns the session's transport.
    public mutating func receiveHandshake(_ text: String) throws(SendspinHandshakeError) -> SendspinTransport {
        guard var handshake = noise, !handshake.isComplete else { throw .malformed("a handshake message out of turn") }
        guard let envelope = try? JSONDecoder().decode(Envelope<HandshakeData>.self, from: Data(text.utf8)),
              envelope.type == "noise/handshake", let message = Base64URL.decode(envelope.payload.data) else {
            throw .malformed("not a noise/handshake message")
        }
        do {
            _ = try handshake.readMessage(message)
            noise = handshake
            let (send, receive) = try handshake.transport()
            return SendspinTransport(sending: send, receiving: receive, handshakeHash: handshake.handshakeHash)
        } catch {
            throw .noise(error)
        }
    }

    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}

/// The client's side (the Noise responder): a tutti follower playing from a Sendspin server.
public struct SendspinClientHandshake: Sendable {
    let identity: SendspinIdentity
    let suite: NoiseSuite
    public let clientInit: String
    private var noise: NoiseHandshake?
    public private(set) var serverID: String?

    public init(identity: SendspinIdentity, suite: NoiseSuite = .chaChaPoly) {
        self.identity = identity
        self.suite = suite
        clientInit = SendspinServerHandshake.json(Envelope(type: "client/init", payload: ClientInit(client_id: identity.id,
                                                                                                 version: SendspinServerHandshake.version,
                                                                                                 suite: suite.rawValue)))
    }

    /// Reads `server/init` (the server's id: its key, which `expected`, when given, must be).
    public mutating func receiveServerInit(_ text: String, expected: String? = nil) throws(SendspinHandshakeError) {
        guard noise == nil else { throw .malformed("a second server/init") }
        guard let envelope = try? JSONDecoder().decode(Envelope<ServerInit>.self, from: Data(text.utf8)), envelope.type == "server/init" else {
            if let error = try? JSONDecoder().decode(Envelope<ServerError>.self, from: Data(text.utf8)), error.type == "server/error" {
                throw .rejected(reason: error.payload.reason, detail: "the server refused this client")
            }
            throw .malformed("not a server/init")
        }
        guard envelope.payload.version == SendspinServerHandshake.version else { throw .malformed("server version \(envelope.payload.version)") }
        guard let serverKey = Base64URL.decode(envelope.payload.server_id), serverKey.count == X25519.keySize else {
            throw .malformed("server_id is not a base64url X25519 key")
        }
        if let expected, expected != envelope.payload.server_id { throw .malformed("server_id \(envelope.payload.server_id), not \(expected)") }
        do {
            noise = try NoiseHandshake(suite: suite, initiator: false, staticPrivate: identity.privateKey, remoteStatic: serverKey,
                                       prologue: Array(clientInit.utf8) + Array(text.utf8))
        } catch {
            throw .noise(error)
        }
        serverID = envelope.payload.server_id
    }

    /// An in-band re-handshake of the session with `serverID` (after pairing): the server's
    /// message 1 comes next, with the session's handshake hash for prologue.
    public mutating func expectRekey(serverID: String, suite: NoiseSuite, previousHash: [UInt8]) throws(SendspinHandshakeError) {
        guard let serverKey = Base64URL.decode(serverID), serverKey.count == X25519.keySize else { throw .malformed("server_id") }
        do {
            noise = try NoiseHandshake(suite: suite, initiator: false, staticPrivate: identity.privateKey, remoteStatic: serverKey,
                                       prologue: previousHash)
        } catch {
            throw .noise(error)
        }
        self.serverID = serverID
    }

    /// Reads Noise message 1; `resolve` gives the key it names (by its id and category), or
    /// nil to answer under the sentinel. Returns Noise message 2 to send, and the transport.
    public mutating func receiveHandshake(_ text: String, resolve: (String, SendspinPSKCategory) -> SendspinPSK?)
        throws(SendspinHandshakeError) -> (reply: String, transport: SendspinTransport) {
        guard var handshake = noise, !handshake.isComplete else { throw .malformed("a handshake message out of turn") }
        guard let envelope = try? JSONDecoder().decode(Envelope<HandshakeData>.self, from: Data(text.utf8)),
              envelope.type == "noise/handshake", let message = Base64URL.decode(envelope.payload.data) else {
            throw .malformed("not a noise/handshake message")
        }
        do {
            let payload = try handshake.readMessage(message)
            guard let named = try? JSONDecoder().decode(Message1.self, from: Data(payload)),
                  let category = SendspinPSKCategory(rawValue: named.psk_category) else {
                throw SendspinHandshakeError.malformed("Noise message 1's payload")
            }
            let psk = category == .sentinel ? .sentinel : (resolve(named.psk_id, category) ?? .sentinel)
            try handshake.setPSK(psk.key)
            let second = try handshake.writeMessage(Array("{}".utf8))
            noise = handshake
            let (send, receive) = try handshake.transport()
            return (SendspinServerHandshake.json(Envelope(type: "noise/handshake", payload: HandshakeData(data: Base64URL.encode(second)))),
                    SendspinTransport(sending: send, receiving: receive, handshakeHash: handshake.handshakeHash))
        } catch let error as SendspinHandshakeError {
            throw error
        } catch let error as NoiseError {
            throw .noise(error)
        } catch {
            throw .malformed("\(error)")
        }
    }
}

// The cleartext messages of a session's opening, as the wire has them.
struct Envelope<Payload: Codable>: Codable {
    let type: String
    let payload: Payload
}

struct ClientInit: Codable {
    let client_id: String
    let version: Int
    let suite: String
}

struct ServerInit: Codable {
    let server_id: String
    let version: Int
}

struct ServerError: Codable {
    let reason: String
}

struct HandshakeData: Codable {
    let data: String
}

struct Message1: Codable {
    let psk_id: String
    let psk_category: String
}

/// Base64url without padding (RFC 4648, section 5), as Sendspin writes keys and messages.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().compactMap { c -> Character? in
            c == "+" ? "-" : c == "/" ? "_" : c == "=" ? nil : c
        })
    }

    /// Nil for anything but base64url (padding tolerated).
    public static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "=") })
        else { return nil }
        var standard = String(text.compactMap { c -> Character? in c == "-" ? "+" : c == "_" ? "/" : c == "=" ? nil : c })
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
