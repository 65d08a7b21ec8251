import CNettle

/// CPace, the balanced password-authenticated key exchange of draft-irtf-cfrg-cpace, in its
/// CPACE-X25519-SHA512 suite, as Sendspin pairs a player with a server by a code: both sides
/// know a short code (the password-related string, `prs`); each sends one public share, and
/// both end with the same intermediate session key (`isk`) only if their codes matched. An
/// eavesdropper learns nothing of the code, and an active attacker tests one guess per run.
///
/// The generator is the code's hash mapped onto Curve25519 (Elligator 2, RFC 9380); each
/// share is the generator times a fresh scalar (X25519, through Nettle), and the key is
/// SHA-512 of the shared point and both shares with their associated data. Each side
/// confirms with an HMAC-SHA-512 tag over its own share (`tag`, `verify`). The field
/// arithmetic of the map runs on GMP (Nettle's own big-number library), exponentiations
/// in constant time.
///
/// Matches the reference `cpace` package (Sendspin's) byte for byte: CPaceTests, with
/// vectors from `cpace_vectors.py`.
public struct CPace: Sendable {
    public enum Role: Sendable { case initiator, responder }

    public static let shareSize = 32
    public static let tagSize = 64

    public let role: Role
    /// This side's public share (`Ya` for the initiator, `Yb` for the responder).
    public let publicShare: [UInt8]
    private let sid: [UInt8]
    private let ad: [UInt8]
    private var scalar: [UInt8]?
    private var derived: (isk: [UInt8], macKey: [UInt8], initiator: [UInt8], responder: [UInt8])?

    /// Starts a run: `prs` the code, `sid` the session id (unique per run), `ci` the channel
    /// identifier, `ad` this side's associated data; `scalar` only for test vectors (a fresh
    /// one from the kernel's generator otherwise).
    public init(role: Role, prs: [UInt8], sid: [UInt8], ci: [UInt8] = [], ad: [UInt8] = [], scalar: [UInt8]? = nil) throws(CPaceError) {
        let scalar = scalar ?? Nettle.random(count: Self.shareSize)
        guard scalar.count == Self.shareSize else { throw .badShare }
        // A generator of low order makes every share the identity (it cannot come of a hash
        // in practice, but the draft checks).
        guard let share = X25519.sharedSecret(scalar, Self.generator(prs: prs, ci: ci, sid: sid)) else { throw .lowOrder }
        self.role = role
        self.sid = sid
        self.ad = ad
        self.scalar = scalar
        publicShare = share
    }

    /// Takes the peer's share and associated data: derives the session key and the tags'
    /// key. Once only.
    public mutating func derive(peerShare: [UInt8], peerAD: [UInt8]) throws(CPaceError) {
        guard let scalar else { throw .outOfTurn }
        self.scalar = nil
        guard peerShare.count == Self.shareSize else { throw .badShare }
        guard let shared = X25519.sharedSecret(scalar, peerShare) else { throw .lowOrder }
        let mine = Self.lengthValue(publicShare, ad), theirs = Self.lengthValue(peerShare, peerAD)
        let (initiator, responder) = role == .initiator ? (mine, theirs) : (theirs, mine)
        let isk = SHA512.digest(Self.lengthValue(Array("CPace255_ISK".utf8), sid, shared) + initiator + responder)
        let macKey = SHA512.digest(Array("CPaceMac".utf8) + sid + isk)
        derived = (isk, macKey, initiator, responder)
    }

    /// The intermediate session key (64 bytes), for a key derivation; nil before `derive`.
    public var isk: [UInt8]? { derived?.isk }

    /// This side's confirmation tag (`Ta` or `Tb`).
    public func tag() throws(CPaceError) -> [UInt8] {
        guard let d = derived else { throw .outOfTurn }
        return SHA512.hmac(key: d.macKey, role == .initiator ? d.initiator : d.responder)
    }

    /// Whether `peerTag` proves the peer knew the code. A peer that reflected this side's own
    /// share and data back fails.
    public func verify(_ peerTag: [UInt8]) throws(CPaceError) -> Bool {
        guard let d = derived else { throw .outOfTurn }
        guard d.initiator != d.responder else { return false }
        let expected = SHA512.hmac(key: d.macKey, role == .initiator ? d.responder : d.initiator)
        return constantTimeEqual(expected, peerTag)
    }

    // MARK: - The generator

    /// The run's generator: the first 32 bytes of SHA-512 of the code, zero padding (to a
    /// SHA-512 block), the channel id and the session id, each length-prefixed, mapped onto
    /// the curve.
    static func generator(prs: [UInt8], ci: [UInt8], sid: [UInt8]) -> [UInt8] {
        let dsi = Array("CPace255".utf8)
        let pad = max(0, 128 - 1 - lengthPrefix(prs.count).count - prs.count - lengthPrefix(dsi.count).count - dsi.count)
        let hash = SHA512.digest(lengthValue(dsi, prs, [UInt8](repeating: 0, count: pad), ci, sid))
        var u = Array(hash.prefix(32))
        u[31] &= 0x7F  // a field element has 255 bits (RFC 7748)
        return Field.elligator2(u)
    }

    /// The draft's `prepend_len`: a LEB128 length, then the bytes.
    static func lengthValue(_ parts: [UInt8]...) -> [UInt8] {
        parts.flatMap { lengthPrefix($0.count) + $0 }
    }

    static func lengthPrefix(_ count: Int) -> [UInt8] {
        var n = count, out: [UInt8] = []
        repeat {
            out.append(UInt8(n & 0x7F) | (n > 0x7F ? 0x80 : 0))
            n >>= 7
        } while n > 0
        return out
    }

    /// Arithmetic modulo 2^255 − 19 for Elligator 2 (GMP integers, freed with the scope).
    private enum Field {
        /// Elligator 2 onto Curve25519 (A = 486662, Z = 2): the u-coordinate, 32 bytes
        /// little-endian, of the point that `r` (little-endian, below 2^255) maps to.
        static func elligator2(_ r: [UInt8]) -> [UInt8] {
            withGMP { p, a, t, v, e, x in
                __gmpz_ui_pow_ui(p, 2, 255)
                __gmpz_sub_ui(p, p, 19)
                __gmpz_set_ui(a, 486_662)
                load(r, into: t)
                __gmpz_mod(t, t, p)
                // v = −A / (1 + Z r²)   (inv0: x^(p−2), which maps 0 to 0)
                __gmpz_mul(t, t, t)
                __gmpz_mul_ui(t, t, 2)
                __gmpz_add_ui(t, t, 1)
                __gmpz_mod(t, t, p)
                __gmpz_sub_ui(e, p, 2)
                __gmpz_powm_sec(t, t, e, p)
                __gmpz_neg(v, a)
                __gmpz_mul(v, v, t)
                __gmpz_mod(v, v, p)
                // ε = (v³ + A v² + v)^((p−1)/2): 1 on a square, p − 1 on a non-square, 0 at 0
                __gmpz_add(t, v, a)
                __gmpz_mul(t, t, v)
                __gmpz_add_ui(t, t, 1)
                __gmpz_mul(t, t, v)
                __gmpz_mod(t, t, p)
                __gmpz_sub_ui(x, p, 1)
                __gmpz_tdiv_q_2exp(x, x, 1)
                __gmpz_powm_sec(e, t, x, p)
                // x = ε v − (1 − ε) A / 2
                __gmpz_mul(x, e, v)
                __gmpz_ui_sub(t, 1, e)
                __gmpz_mul(t, t, a)
                __gmpz_set_ui(v, 2)
                __gmpz_sub_ui(e, p, 2)
                __gmpz_powm_sec(v, v, e, p)
                __gmpz_mul(t, t, v)
                __gmpz_sub(x, x, t)
                __gmpz_mod(x, x, p)
                return store(x)
            }
        }

        private static func load(_ bytes: [UInt8], into z: UnsafeMutablePointer<__mpz_struct>) {
            __gmpz_import(z, bytes.count, -1, 1, 0, 0, bytes)
        }

        private static func store(_ z: UnsafeMutablePointer<__mpz_struct>) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            var written = 0
            out.withUnsafeMutableBytes { _ = __gmpz_export($0.baseAddress, &written, -1, 1, 0, 0, z) }
            return out
        }

        private typealias Z = UnsafeMutablePointer<__mpz_struct>

        /// Six integers, made and freed around `body`.
        private static func withGMP<R>(_ body: (Z, Z, Z, Z, Z, Z) -> R) -> R {
            let z = Z.allocate(capacity: 6)
            for i in 0..<6 { __gmpz_init(z + i) }
            defer {
                for i in 0..<6 { __gmpz_clear(z + i) }
                z.deallocate()
            }
            return body(z, z + 1, z + 2, z + 3, z + 4, z + 5)
        }
    }
}

public enum CPaceError: Error, Equatable, CustomStringConvertible {
    case badShare
    case lowOrder
    case outOfTurn

    public var description: String {
        switch self {
        case .badShare: "a CPace share or scalar is not 32 bytes"
        case .lowOrder: "a CPace share is a point of low order"
        case .outOfTurn: "a CPace step out of turn"
        }
    }
}

/// SHA-512 and HMAC-SHA-512 through Nettle, for CPace.
enum SHA512 {
    static let size = 64

    static func digest(_ message: [UInt8]) -> [UInt8] {
        var ctx = sha512_ctx()
        nettle_sha512_init(&ctx)
        nettle_sha512_update(&ctx, message.count, message)
        var out = [UInt8](repeating: 0, count: size)
        nettle_sha512_digest(&ctx, size, &out)
        return out
    }

    static func hmac(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var ctx = hmac_sha512_ctx()
        nettle_hmac_sha512_set_key(&ctx, key.count, key)
        nettle_hmac_sha512_update(&ctx, message.count, message)
        var out = [UInt8](repeating: 0, count: size)
        nettle_hmac_sha512_digest(&ctx, size, &out)
        return out
    }
}
