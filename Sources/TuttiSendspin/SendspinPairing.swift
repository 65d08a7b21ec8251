import FoundationEssentials
import TuttiSecurity

/// The pieces of Sendspin's pairing that are pure computation, as the protocol fixes them
/// (matched against aiosendspin in SendspinPairingTests): the codes a person reads off a
/// player or types into a server, the tokens that carry a pairing key or code as text, and
/// the derivations that bind a code-pairing run (CPace) to its sealed session.
///
/// - **Static pairing code**: 8 digits the player keeps (printed on it, or set by its
///   owner); the server's operator types them in.
/// - **Dynamic pairing code**: 6 digits both sides derive from the session's handshake hash
///   and a nonce from each (the player commits to its nonce first, so neither side can
///   steer the code); the player shows them, the operator types them in.
/// - **Pairing PSK**: a one-time key the player made, carried with its id in a token
///   (`SP:0…`); the session opens under it, and the player then hands over its long-term key.
public enum SendspinPairing {
    public static let nonceSize = 32
    public static let dynamicDigits = 6
    public static let staticDigits = 8
    public static let qrCodeSize = 24

    // MARK: - Codes

    /// A code as typed: without the spaces and hyphens between its groups.
    public static func stripSeparators(_ code: String) -> String {
        code.filter { $0 != " " && $0 != "-" }
    }

    /// Whether `code` is a static pairing code: exactly 8 ASCII digits.
    public static func isStaticCode(_ code: String) -> Bool {
        code.utf8.count == staticDigits && code.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// A 6- or 8-digit code as shown: `123-456`, `1234-5678`; nil for anything else.
    public static func grouped(_ code: String) -> String? {
        guard [dynamicDigits, staticDigits].contains(code.utf8.count), code.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let half = code.index(code.startIndex, offsetBy: code.count / 2)
        return "\(code[..<half])-\(code[half...])"
    }

    /// The player's commitment to its nonce (`commit_B`).
    public static func commitment(to nonce: [UInt8]) -> [UInt8] {
        SHA256Digest.of(Array("sendspin-pair-commit-v1".utf8) + nonce)
    }

    /// The dynamic code's digest, from the session's handshake hash and both nonces.
    public static func codeDigest(handshakeHash: [UInt8], serverNonce: [UInt8], clientNonce: [UInt8]) -> [UInt8] {
        SHA256Digest.of(Array("sendspin-pairing-code-derive-v1".utf8) + handshakeHash + serverNonce + clientNonce)
    }

    /// The six digits of a dynamic pairing code: the digest, big-endian, modulo a million.
    public static func dynamicCode(handshakeHash: [UInt8], serverNonce: [UInt8], clientNonce: [UInt8]) -> String {
        let digest = codeDigest(handshakeHash: handshakeHash, serverNonce: serverNonce, clientNonce: clientNonce)
        let value = digest.reduce(0) { ($0 * 256 + Int($1)) % 1_000_000 }
        let digits = String(value)
        return String(repeating: "0", count: dynamicDigits - digits.count) + digits
    }

    // MARK: - Binding a run to its session

    /// CPace's session id for pairing attempt `index`, round `round`, of the session whose
    /// handshake hash is `handshakeHash`.
    public static func pakeSessionID(handshakeHash: [UInt8], index: UInt32, round: UInt32) -> [UInt8] {
        Array("sendspin-pair-pake-v1".utf8) + handshakeHash + bigEndian(index) + bigEndian(round)
    }

    /// What wraps a key, or the player's nonce, under a run's session key.
    public enum Wrapped: String, Sendable {
        case psk = "sendspin-pair-psk-wrap-v1"
        case nonce = "sendspin-pair-nonce-wrap-v1"
    }

    /// The key that wraps `what` in the run with session id `sid` and CPace key `isk`.
    public static func wrapKey(_ what: Wrapped, sid: [UInt8], isk: [UInt8]) -> [UInt8] {
        SHA256Digest.of(Array(what.rawValue.utf8) + sid + isk)
    }

    // MARK: - Messages

    /// A session text's type (nil for what is not a typed JSON message).
    public static func type(of text: String) -> String? {
        struct Kind: Decodable { let type: String }
        return try? JSONDecoder().decode(Kind.self, from: Data(text.utf8)).type
    }

    /// A string field of a message's payload (nil when absent, or the payload holds other than strings).
    static func field(_ text: String, _ name: String) -> String? {
        struct Payload: Decodable { let payload: [String: String?] }
        return (try? JSONDecoder().decode(Payload.self, from: Data(text.utf8)))?.payload[name] ?? nil
    }

    // MARK: - Tokens

    /// A Pairing PSK token: the player's id (its X25519 key) and the key, `SP:0` and base32.
    public struct PSKToken: Sendable, Equatable {
        public let clientID: String
        public let psk: [UInt8]

        public init(clientID: String, psk: [UInt8]) {
            self.clientID = clientID
            self.psk = psk
        }
    }

    public static func encode(_ token: PSKToken) -> String? {
        guard let id = Base64URL.decode(token.clientID), id.count == X25519.keySize, token.psk.count == 32 else { return nil }
        return "SP:0" + tokenBase32(id + token.psk)
    }

    /// A Pairing PSK token as typed or pasted (any case, with or without `SP:`); nil when it
    /// is not one.
    public static func decodePSKToken(_ text: String) -> PSKToken? {
        guard let payload = decodeToken(text, version: "0"), payload.count >= 64 else { return nil }
        return PSKToken(clientID: Base64URL.encode(Array(payload[0..<32])), psk: Array(payload[32..<64]))
    }

    /// A dynamic pairing code in its binary form (24 bytes, for a QR code) as a token, `SP:1`.
    public static func encodeCodeToken(_ code: [UInt8]) -> String? {
        code.count == qrCodeSize ? "SP:1" + tokenBase32(code) : nil
    }

    public static func decodeCodeToken(_ text: String) -> [UInt8]? {
        guard let payload = decodeToken(text, version: "1"), payload.count >= qrCodeSize else { return nil }
        return Array(payload.prefix(qrCodeSize))
    }

    /// Base32 (RFC 4648) without padding, its digit 2 written 9 (so that it is not read as Z).
    static func tokenBase32(_ bytes: [UInt8]) -> String {
        String(Base32.encode(bytes).map { $0 == "2" ? "9" : $0 })
    }

    private static func decodeToken(_ text: String, version: Character) -> [UInt8]? {
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard trimmed.allSatisfy(\.isASCII) else { return nil }
        var body = Substring(trimmed.uppercased())
        if body.hasPrefix("SP:") { body = body.dropFirst(3) }
        guard body.first == version else { return nil }
        return Base32.decode(String(body.dropFirst().map { $0 == "9" ? "2" : $0 }))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32($0))) }
    }
}

/// RFC 4648 base32, unpadded on the way out, padding optional on the way in.
enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    static func encode(_ bytes: [UInt8]) -> String {
        var out = "", buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 31])
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return out
    }

    /// Nil for a character outside the alphabet, or a length no encoding has.
    static func decode(_ text: String) -> [UInt8]? {
        let symbols = Array(text.reversed().drop { $0 == "=" }.reversed())
        guard ![1, 3, 6].contains(symbols.count % 8) else { return nil }
        var out: [UInt8] = [], buffer = 0, bits = 0
        for c in symbols {
            guard let value = alphabet.firstIndex(of: c) else { return nil }
            buffer = (buffer << 5) | value
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> bits) & 0xFF))
            }
            buffer &= (1 << bits) - 1
        }
        return out
    }
}
