import CNettle

/// The Noise Protocol Framework (revision 34, noiseprotocol.org) as Sendspin seals a session:
/// the KKpsk2 pattern, X25519, SHA-256, and ChaCha20-Poly1305 or AES-256-GCM. Both sides know
/// each other's static key before they start (a Sendspin client's id is its static public
/// key, the server's id its own), and the pre-shared key, mixed in at the second message,
/// is a pairing's secret (or the protocol's published sentinel, which authenticates nothing:
/// unpaired access, a house setting).
///
///     KKpsk2:
///       -> s
///       <- s
///       ...
///       -> e, es, ss          (message 1, the initiator: a Sendspin server)
///       <- e, ee, se, psk     (message 2, the responder: a Sendspin client)
///
/// Through Nettle, like the rest of this module, so that a follower playing from a Sendspin
/// server needs no other library. Tested against the reference `noiseprotocol` package's
/// handshakes (NoiseTests' vectors, made by `Tests/TuttiSecurityTests/noise_vectors.py`).
public enum NoiseSuite: String, Sendable, CaseIterable {
    case chaChaPoly = "25519_ChaChaPoly_SHA256"
    case aesGCM = "25519_AESGCM_SHA256"

    /// The protocol name the handshake's hash starts from.
    public var protocolName: String { "Noise_KKpsk2_" + rawValue }
}

/// Why a Noise message was refused: the peer's message is the wrong size, does not
/// authenticate (another key, another pre-shared key, tampering), or comes out of turn.
public enum NoiseError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case authentication
    case outOfTurn
    case badKey

    public var description: String {
        switch self {
        case let .malformed(why): "malformed Noise message: \(why)"
        case .authentication: "a Noise message did not authenticate (another key, another pre-shared key, or tampered)"
        case .outOfTurn: "a Noise message out of turn"
        case .badKey: "a Noise key is not a valid X25519 key"
        }
    }
}

/// X25519 (RFC 7748) through Nettle.
public enum X25519 {
    public static let keySize = 32

    /// A new private key from the kernel's generator (clamped where it is used).
    public static func newPrivateKey() -> [UInt8] { Nettle.random(count: keySize) }

    /// The public key of `privateKey`.
    public static func publicKey(of privateKey: [UInt8]) -> [UInt8] {
        precondition(privateKey.count == keySize)
        var out = [UInt8](repeating: 0, count: keySize)
        nettle_curve25519_mul_g(&out, privateKey)
        return out
    }

    /// The shared secret of `privateKey` and the peer's `publicKey`; nil when the peer's key
    /// is one of the low-order points (an all-zero secret: RFC 7748, section 6.1).
    public static func sharedSecret(_ privateKey: [UInt8], _ publicKey: [UInt8]) -> [UInt8]? {
        guard privateKey.count == keySize, publicKey.count == keySize else { return nil }
        var out = [UInt8](repeating: 0, count: keySize)
        nettle_curve25519_mul(&out, privateKey, publicKey)
        return out.allSatisfy({ $0 == 0 }) ? nil : out
    }
}

/// A Noise cipher state: a key and a counting nonce (ChaChaPoly's little-endian, AES-GCM's
/// big-endian, each after four zero bytes). Before it has a key it passes bytes through, as
/// the framework has it for a handshake's first tokens.
public struct NoiseCipher: Sendable {
    public static let tagSize = 16
    public let suite: NoiseSuite
    private(set) var key: [UInt8]?
    /// AES-GCM's key schedule, made once per key (a Sendspin player's stream seals 50 chunks a second).
    private let gcm: GCMKey?
    public private(set) var nonce: UInt64 = 0

    init(suite: NoiseSuite, key: [UInt8]? = nil) {
        precondition(key.map { $0.count == 32 } ?? true, "a Noise cipher key is 32 bytes")
        self.suite = suite
        self.key = key
        gcm = suite == .aesGCM ? key.flatMap { GCMKey($0) } : nil
    }

    var hasKey: Bool { key != nil }

    private func nonceBytes() -> [UInt8] {
        var n = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 {
            let byte = UInt8(truncatingIfNeeded: nonce >> (8 * UInt64(i)))
            switch suite {
            case .chaChaPoly: n[4 + i] = byte
            case .aesGCM: n[11 - i] = byte
            }
        }
        return n
    }

    /// `plaintext` sealed with `associated` data (the handshake hash during a handshake).
    public mutating func encrypt(_ plaintext: [UInt8], associated: [UInt8] = []) -> [UInt8] {
        guard let key else { return plaintext }
        precondition(nonce < .max, "a Noise cipher state has used every nonce")
        defer { nonce += 1 }
        switch suite {
        case .chaChaPoly: return Self.chaChaSeal(key: key, nonce: nonceBytes(), associated: associated, plaintext: plaintext)
        case .aesGCM: return gcm!.seal(plaintext[...], authenticating: associated[...], nonce: nonceBytes())
        }
    }

    /// `ciphertext` opened, or `.authentication` when it does not authenticate (the nonce
    /// then does not advance, as the framework has it).
    public mutating func decrypt(_ ciphertext: [UInt8], associated: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard ciphertext.count >= Self.tagSize else { throw .malformed("\(ciphertext.count) bytes, shorter than a tag") }
        precondition(nonce < .max, "a Noise cipher state has used every nonce")
        let opened: [UInt8]?
        switch suite {
        case .chaChaPoly: opened = Self.chaChaOpen(key: key, nonce: nonceBytes(), associated: associated, sealed: ciphertext)
        case .aesGCM: opened = gcm!.open(ciphertext[...], authenticating: associated[...], nonce: nonceBytes())
        }
        guard let opened else { throw .authentication }
        nonce += 1
        return opened
    }

    static func chaChaSeal(key: [UInt8], nonce: [UInt8], associated: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var ctx = chacha_poly1305_ctx()
        nettle_chacha_poly1305_set_key(&ctx, key)
        nettle_chacha_poly1305_set_nonce(&ctx, nonce)
        if !associated.isEmpty { nettle_chacha_poly1305_update(&ctx, associated.count, associated) }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        out.withUnsafeMutableBufferPointer { o in
            if !plaintext.isEmpty { nettle_chacha_poly1305_encrypt(&ctx, plaintext.count, o.baseAddress!, plaintext) }
            nettle_chacha_poly1305_digest(&ctx, tagSize, o.baseAddress! + plaintext.count)
        }
        return out
    }

    static func chaChaOpen(key: [UInt8], nonce: [UInt8], associated: [UInt8], sealed: [UInt8]) -> [UInt8]? {
        let length = sealed.count - tagSize
        var ctx = chacha_poly1305_ctx()
        nettle_chacha_poly1305_set_key(&ctx, key)
        nettle_chacha_poly1305_set_nonce(&ctx, nonce)
        if !associated.isEmpty { nettle_chacha_poly1305_update(&ctx, associated.count, associated) }
        var out = [UInt8](repeating: 0, count: length)
        var tag = [UInt8](repeating: 0, count: tagSize)
        sealed.withUnsafeBufferPointer { s in
            if length > 0 { nettle_chacha_poly1305_decrypt(&ctx, length, &out, s.baseAddress!) }
        }
        nettle_chacha_poly1305_digest(&ctx, tagSize, &tag)
        let ok = sealed.withUnsafeBufferPointer { s in nettle_memeql_sec(tag, s.baseAddress! + length, tagSize) != 0 }
        return ok ? out : nil
    }
}

/// A Noise symmetric state: the chaining key, the handshake hash and the cipher state.
struct NoiseSymmetric: Sendable {
    private(set) var chainingKey: [UInt8]
    private(set) var hash: [UInt8]
    private(set) var cipher: NoiseCipher

    init(protocolName: String, suite: NoiseSuite) {
        let name = Array(protocolName.utf8)
        hash = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : Nettle.sha256(name)
        chainingKey = hash
        cipher = NoiseCipher(suite: suite)
    }

    /// The framework's HKDF: two or three outputs from the chaining key and `material`
    /// (RFC 5869's, salted with the chaining key, with no info, cut in 32-byte outputs).
    static func hkdf(_ chainingKey: [UInt8], _ material: [UInt8], outputs: Int) -> [[UInt8]] {
        let out = Nettle.hkdfSHA256(key: material, salt: chainingKey, info: [], count: 32 * outputs)
        return (0..<outputs).map { Array(out[32 * $0..<32 * ($0 + 1)]) }
    }

    mutating func mixHash(_ data: [UInt8]) { hash = Nettle.sha256(hash + data) }

    mutating func mixKey(_ material: [UInt8]) {
        let out = Self.hkdf(chainingKey, material, outputs: 2)
        chainingKey = out[0]
        cipher = NoiseCipher(suite: cipher.suite, key: out[1])
    }

    mutating func mixKeyAndHash(_ material: [UInt8]) {
        let out = Self.hkdf(chainingKey, material, outputs: 3)
        chainingKey = out[0]
        mixHash(out[1])
        cipher = NoiseCipher(suite: cipher.suite, key: out[2])
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        let ciphertext = cipher.encrypt(plaintext, associated: hash)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ciphertext, associated: hash)
        mixHash(ciphertext)
        return plaintext
    }

    /// The two transport cipher states: the initiator's sending one first.
    func split() -> (NoiseCipher, NoiseCipher) {
        let out = Self.hkdf(chainingKey, [], outputs: 2)
        return (NoiseCipher(suite: cipher.suite, key: out[0]), NoiseCipher(suite: cipher.suite, key: out[1]))
    }
}

/// One side of a KKpsk2 handshake. The initiator writes message 1 and reads message 2; the
/// responder reads message 1 and writes message 2 (its pre-shared key may be chosen after
/// message 1, whose payload can name it). Then `transport` gives both sides' cipher states.
public struct NoiseHandshake: Sendable {
    public let suite: NoiseSuite
    public let isInitiator: Bool
    private var symmetric: NoiseSymmetric
    private let staticPrivate: [UInt8]
    private let remoteStatic: [UInt8]
    private var ephemeralPrivate: [UInt8]?
    private var remoteEphemeral: [UInt8]?
    private var psk: [UInt8]?
    private var step = 0

    /// `ephemeral`: a fixed ephemeral private key, for tests against known vectors only.
    public init(suite: NoiseSuite, initiator: Bool, staticPrivate: [UInt8], remoteStatic: [UInt8], prologue: [UInt8],
                psk: [UInt8]? = nil, ephemeral: [UInt8]? = nil) throws(NoiseError) {
        guard staticPrivate.count == X25519.keySize, remoteStatic.count == X25519.keySize else { throw .badKey }
        if let psk, psk.count != 32 { throw .malformed("a pre-shared key of \(psk.count) bytes, not 32") }
        self.suite = suite
        isInitiator = initiator
        self.staticPrivate = staticPrivate
        self.remoteStatic = remoteStatic
        self.psk = psk
        ephemeralPrivate = ephemeral
        var s = NoiseSymmetric(protocolName: suite.protocolName, suite: suite)
        s.mixHash(prologue)
        // The pre-messages: the initiator's static key, then the responder's.
        let mine = X25519.publicKey(of: staticPrivate)
        s.mixHash(initiator ? mine : remoteStatic)
        s.mixHash(initiator ? remoteStatic : mine)
        symmetric = s
    }

    /// Sets the pre-shared key (the responder's, once message 1 has told it which).
    public mutating func setPSK(_ key: [UInt8]) throws(NoiseError) {
        guard key.count == 32 else { throw .malformed("a pre-shared key of \(key.count) bytes, not 32") }
        psk = key
    }

    public var isComplete: Bool { step == 2 }

    /// The handshake hash: both sides' record of the whole exchange (after it completes).
    public var handshakeHash: [UInt8] { symmetric.hash }

    private func dh(_ mine: [UInt8]?, _ theirs: [UInt8]?) throws(NoiseError) -> [UInt8] {
        guard let mine, let theirs, let secret = X25519.sharedSecret(mine, theirs) else { throw .badKey }
        return secret
    }

    /// The next message this side sends, carrying `payload`.
    public mutating func writeMessage(_ payload: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard step == (isInitiator ? 0 : 1) else { throw .outOfTurn }
        var s = symmetric
        let e = ephemeralPrivate ?? X25519.newPrivateKey()
        ephemeralPrivate = e
        let ePublic = X25519.publicKey(of: e)
        var out = ePublic
        s.mixHash(ePublic)
        s.mixKey(ePublic)  // psk handshakes mix every "e" into the key too
        if isInitiator {
            s.mixKey(try dh(e, remoteStatic))  // es
            s.mixKey(try dh(staticPrivate, remoteStatic))  // ss
        } else {
            s.mixKey(try dh(e, remoteEphemeral))  // ee
            s.mixKey(try dh(e, remoteStatic))  // se (the initiator's static, our ephemeral)
            guard let psk else { throw .malformed("no pre-shared key set before message 2") }
            s.mixKeyAndHash(psk)
        }
        out += s.encryptAndHash(payload)
        symmetric = s
        step += 1
        return out
    }

    /// Reads the peer's next message; returns its payload.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard step == (isInitiator ? 1 : 0) else { throw .outOfTurn }
        guard message.count >= X25519.keySize + NoiseCipher.tagSize else {
            throw .malformed("\(message.count) bytes")
        }
        var s = symmetric
        let re = Array(message.prefix(X25519.keySize))
        remoteEphemeral = re
        s.mixHash(re)
        s.mixKey(re)
        if isInitiator {
            s.mixKey(try dh(ephemeralPrivate, re))  // ee
            s.mixKey(try dh(staticPrivate, re))  // se (our static, their ephemeral)
            guard let psk else { throw .malformed("no pre-shared key") }
            s.mixKeyAndHash(psk)
        } else {
            s.mixKey(try dh(staticPrivate, re))  // es (the initiator's ephemeral, our static)
            s.mixKey(try dh(staticPrivate, remoteStatic))  // ss
        }
        let payload = try s.decryptAndHash(Array(message.dropFirst(X25519.keySize)))
        symmetric = s
        step += 1
        return payload
    }

    /// The transport's cipher states once the handshake is complete: what this side sends
    /// with, and what it receives with.
    public func transport() throws(NoiseError) -> (send: NoiseCipher, receive: NoiseCipher) {
        guard isComplete else { throw .outOfTurn }
        let (first, second) = symmetric.split()
        return isInitiator ? (first, second) : (second, first)
    }
}

extension Nettle {
    /// SHA-256 of `data`.
    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var ctx = sha256_ctx()
        nettle_sha256_init(&ctx)
        if !data.isEmpty { nettle_sha256_update(&ctx, data.count, data) }
        var out = [UInt8](repeating: 0, count: 32)
        nettle_sha256_digest(&ctx, 32, &out)
        return out
    }
}

/// SHA-256, for the protocols built on this module (Sendspin's key ids).
public enum SHA256Digest {
    public static func of(_ bytes: [UInt8]) -> [UInt8] { Nettle.sha256(bytes) }
}

extension NoiseCipher {
    /// `plaintext` sealed once under `key` with the all-zero nonce (a cipher's first
    /// message): how a Sendspin pairing wraps a key or a nonce under a key made for it alone.
    public static func sealOnce(suite: NoiseSuite, key: [UInt8], _ plaintext: [UInt8]) -> [UInt8] {
        var cipher = NoiseCipher(suite: suite, key: key)
        return cipher.encrypt(plaintext)
    }

    /// What `sealOnce` sealed; throws when it was sealed under another key, or changed.
    public static func openOnce(suite: NoiseSuite, key: [UInt8], _ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        var cipher = NoiseCipher(suite: suite, key: key)
        return try cipher.decrypt(ciphertext)
    }
}
