import TuttiSecurity

/// A Sendspin message as the protocol's roles see it: JSON text, or binary whose first byte
/// says what it is (4 a player's audio chunk, 8 to 11 artwork, 16 visualizer data...).
public enum SendspinMessage: Equatable, Sendable {
    case text(String)
    case binary([UInt8])
}

/// Why a sealed Sendspin frame was refused. Each one ends the session (the peer is broken or
/// hostile); none is ever a crash.
public enum SendspinTransportError: Error, Equatable, CustomStringConvertible {
    case authentication
    case empty
    case fragment(String)
    case tooLarge(Int)
    case reservedType(UInt8)

    public var description: String {
        switch self {
        case .authentication: "a sealed frame did not authenticate"
        case .empty: "a sealed frame held nothing"
        case let .fragment(why): "fragments out of order: \(why)"
        case let .tooLarge(bytes): "a fragmented message grew past \(bytes) bytes"
        case let .reservedType(type): "binary type \(type) belongs to the transport"
        }
    }
}

/// A Sendspin session's transport once its Noise handshake is done: every message sealed in
/// one binary WebSocket frame, its first plaintext byte its type (0: JSON, else the role's
/// binary type), and a message larger than a Noise frame (65,535 bytes with its tag) sent as
/// fragments (type 1: a flags byte, FIRST then LAST, the first carrying the message's own
/// type), reassembled on the way in. The same framing as the reference implementation
/// (aiosendspin's `EncryptedWebSocket`); its deprecated fragment types 2 and 3 are refused.
public struct SendspinTransport: Sendable {
    /// The plaintext a Noise frame carries: its 65,535 bytes less the tag.
    public static let maximumPlaintext = 65_535 - NoiseCipher.tagSize
    /// How large a fragmented message may grow before the session is ended (artwork is the
    /// largest a server sends; a peer streaming fragments without end is refused here).
    public static let maximumMessage = 16 << 20

    static let jsonType: UInt8 = 0
    static let fragmentType: UInt8 = 1
    static let lastFlag: UInt8 = 0x01
    static let firstFlag: UInt8 = 0x02

    private var sending: NoiseCipher
    private var receiving: NoiseCipher
    /// A fragmented message on its way in: its type and what has come of it.
    private var assembling: (type: UInt8, bytes: [UInt8])?

    /// The handshake's hash (what binds a pairing to this session, and the prologue of a
    /// re-handshake), and the suite.
    public let handshakeHash: [UInt8]
    public var suite: NoiseSuite { sending.suite }

    public init(sending: NoiseCipher, receiving: NoiseCipher, handshakeHash: [UInt8] = []) {
        self.sending = sending
        self.receiving = receiving
        self.handshakeHash = handshakeHash
    }

    /// The frames (each one binary WebSocket message) that carry `message`. A binary message
    /// must start with its role's type, not one of the transport's (1 to 3).
    public mutating func seal(_ message: SendspinMessage) throws(SendspinTransportError) -> [[UInt8]] {
        let plaintext: [UInt8]
        switch message {
        case let .text(text):
            plaintext = [Self.jsonType] + Array(text.utf8)
        case let .binary(bytes):
            guard let type = bytes.first else { throw .empty }
            guard !(1...3).contains(type) else { throw .reservedType(type) }
            plaintext = bytes
        }
        if plaintext.count <= Self.maximumPlaintext { return [sending.encrypt(plaintext)] }
        var frames: [[UInt8]] = []
        var at = 1
        var first = true
        while at < plaintext.count {
            let room = Self.maximumPlaintext - (first ? 3 : 2)
            let end = min(plaintext.count, at + room)
            let flags = (first ? Self.firstFlag : 0) | (end == plaintext.count ? Self.lastFlag : 0)
            let header: [UInt8] = first ? [Self.fragmentType, flags, plaintext[0]] : [Self.fragmentType, flags]
            frames.append(sending.encrypt(header + plaintext[at..<end]))
            at = end
            first = false
        }
        return frames
    }

    /// Opens one frame: the message it completes, or nil when it is a fragment of one still
    /// on its way. A frame out of place ends the message in flight (and the session).
    public mutating func open(_ frame: [UInt8]) throws(SendspinTransportError) -> SendspinMessage? {
        let plaintext: [UInt8]
        do { plaintext = try receiving.decrypt(frame) } catch { assembling = nil; throw .authentication }
        guard let type = plaintext.first else { assembling = nil; throw .empty }
        if type == Self.fragmentType { return try fragment(plaintext) }
        guard assembling == nil else { assembling = nil; throw .fragment("a whole message while a fragmented one is in flight") }
        guard !(2...3).contains(type) else { throw .reservedType(type) }
        return Self.message(plaintext)
    }

    private mutating func fragment(_ plaintext: [UInt8]) throws(SendspinTransportError) -> SendspinMessage? {
        guard plaintext.count >= 2 else { assembling = nil; throw .fragment("no flags byte") }
        let flags = plaintext[1]
        guard flags & ~(Self.firstFlag | Self.lastFlag) == 0 else { assembling = nil; throw .fragment("reserved flags \(flags)") }
        let data: ArraySlice<UInt8>
        if flags & Self.firstFlag != 0 {
            guard assembling == nil else { assembling = nil; throw .fragment("a first fragment while another message is in flight") }
            guard plaintext.count >= 3, plaintext[2] != Self.fragmentType else { throw .fragment("a first fragment without its message's type") }
            assembling = (plaintext[2], [])
            data = plaintext[3...]
        } else {
            guard assembling != nil else { throw .fragment("a continuation with no message in flight") }
            data = plaintext[2...]
        }
        // Taken out while it grows, so that its buffer has one owner and grows in place.
        guard var pending = assembling.take() else { return nil }
        guard pending.bytes.count + data.count <= Self.maximumMessage else { throw .tooLarge(Self.maximumMessage) }
        pending.bytes += data
        guard flags & Self.lastFlag != 0 else {
            assembling = pending
            return nil
        }
        return Self.message([pending.type] + pending.bytes)
    }

    private static func message(_ plaintext: [UInt8]) -> SendspinMessage {
        plaintext[0] == jsonType ? .text(String(decoding: plaintext[1...], as: UTF8.self)) : .binary(plaintext)
    }
}
