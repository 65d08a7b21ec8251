import CGcrypt
import Synchronization

/// The primitives the house key's uses need, through libgcrypt: random bytes, one AES block,
/// HMAC-SHA256 and HKDF-SHA256 (RFC 5869, which libgcrypt 1.10 does not have; it is two
/// loops of HMAC).
///
/// A follower links libgcrypt anyway (libpulse maps it through libsystemd, and SRTP uses it,
/// `GCMKey`). swift-crypto, with BoringSSL, swift-asn1 and swift-certificates behind it, added
/// about a megabyte of code to a follower's resident memory for these few functions, so it is
/// left to the parts only the coordinator and `tutti` run (pairing, the control API's
/// certificate: TuttiTrust). Tests pin each function to its specification's vectors, and
/// HKDF to swift-crypto's.
enum Gcrypt {
    /// libgcrypt's one-time initialization, which must come before any other call.
    static let ready: Bool = gcry_check_version(nil) != nil

    /// `count` random bytes from libgcrypt's strong generator (seeded from the kernel).
    static func random(count: Int) -> [UInt8] {
        precondition(ready, "libgcrypt did not initialize")
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { gcry_randomize($0.baseAddress, $0.count, GCRY_STRONG_RANDOM) }
        return bytes
    }

    /// One 16-byte block encrypted with AES (a 16- or 32-byte key): SRTP's key derivation.
    static func aesBlock(_ block: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(block.count == 16 && (key.count == 16 || key.count == 32))
        precondition(ready, "libgcrypt did not initialize")
        let algorithm = Int32(key.count == 16 ? GCRY_CIPHER_AES.rawValue : GCRY_CIPHER_AES256.rawValue)
        var out = [UInt8](repeating: 0, count: 16)
        var h: gcry_cipher_hd_t?
        let ok = gcry_cipher_open(&h, algorithm, Int32(GCRY_CIPHER_MODE_ECB.rawValue), 0) == 0 && h != nil
            && gcry_cipher_setkey(h, key, key.count) == 0
            && gcry_cipher_encrypt(h, &out, 16, block, 16) == 0
        gcry_cipher_close(h)
        // A block under a key of a size AES takes fails only when memory does.
        precondition(ok, "AES failed")
        return out
    }

    /// HMAC-SHA256 of `message` under `key`, in one go.
    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        HMACKey(key).authenticate(message[...])
    }

    /// HKDF-SHA256 (RFC 5869): `count` bytes (at most 8,160) from `key` with `salt` and `info`.
    static func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= 255 * 32)
        let pseudorandom = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, key)
        let expander = HMACKey(pseudorandom)
        var out: [UInt8] = []
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while out.count < count {
            block = expander.authenticate((block + info + [counter])[...])
            out += block
            counter &+= 1
        }
        return Array(out.prefix(count))
    }
}

/// An HMAC-SHA256 key (RFC 2104), made of two SHA-256 hashes: the inner over the key's
/// inner pad and the message, the outer over its outer pad and the inner hash. The pads are
/// made once; each message then resets two SHA-256 handles of libgcrypt's and writes its
/// parts. libgcrypt's own HMAC handle allocates a hash handle at every result (its
/// finalization copies the outer one), and a follower checks one on every packet; a plain
/// hash's finalization allocates nothing. Every call takes a lock of its own (uncontended: a
/// key has one user at a time), so a key may be shared between threads.
final class HMACKey: Sendable {
    static let size = 32
    /// SHA-256's block: a key is padded (or first hashed) to it.
    private static let block = 64
    /// libgcrypt's SHA-256 handles for the inner and the outer hash, used only under `lock`.
    private nonisolated(unsafe) let inner: gcry_md_hd_t
    private nonisolated(unsafe) let outer: gcry_md_hd_t
    /// The key's inner and outer pads (the key, zero-filled to a block, XOR 0x36 and 0x5c).
    private let innerPad: [UInt8]
    private let outerPad: [UInt8]
    private let lock = Mutex(())

    init(_ key: [UInt8]) {
        precondition(Gcrypt.ready, "libgcrypt did not initialize")
        inner = Self.openSHA256()
        outer = Self.openSHA256()
        var padded = key.count > Self.block ? Self.sha256(key, with: inner) : key
        padded += [UInt8](repeating: 0, count: Self.block - padded.count)
        innerPad = padded.map { $0 ^ 0x36 }
        outerPad = padded.map { $0 ^ 0x5c }
    }

    deinit {
        gcry_md_close(inner)
        gcry_md_close(outer)
    }

    private static func openSHA256() -> gcry_md_hd_t {
        var h: gcry_md_hd_t?
        // Opening fails only when memory does.
        precondition(gcry_md_open(&h, Int32(GCRY_MD_SHA256.rawValue), 0) == 0 && h != nil, "SHA-256 failed to open")
        return h!
    }

    /// SHA-256 of `bytes` with `handle` (reset first).
    private static func sha256(_ bytes: [UInt8], with handle: gcry_md_hd_t) -> [UInt8] {
        gcry_md_reset(handle)
        gcry_md_write(handle, bytes, bytes.count)
        return Array(UnsafeBufferPointer(start: gcry_md_read(handle, 0), count: size))
    }

    /// The 32-byte HMAC of a message given in parts, into `out` (32 bytes or more): `parts`
    /// calls the function it is given with each part, in order. No allocation.
    func authenticate(into out: UnsafeMutableRawBufferPointer,
                      _ parts: (_ write: (UnsafeRawBufferPointer) -> Void) -> Void) {
        precondition(out.count >= Self.size)
        let (i, o) = (inner, outer)
        let ok = lock.withLock { _ -> Bool in
            gcry_md_reset(i)
            innerPad.withUnsafeBytes { gcry_md_write(i, $0.baseAddress, $0.count) }
            parts { part in
                if part.count > 0 { gcry_md_write(i, part.baseAddress, part.count) }
            }
            guard let innerHash = gcry_md_read(i, 0) else { return false }
            gcry_md_reset(o)
            outerPad.withUnsafeBytes { gcry_md_write(o, $0.baseAddress, $0.count) }
            gcry_md_write(o, innerHash, Self.size)
            guard let result = gcry_md_read(o, 0) else { return false }
            out.baseAddress!.copyMemory(from: result, byteCount: Self.size)
            return true
        }
        precondition(ok, "HMAC-SHA256 failed")
    }

    /// The 32-byte HMAC of `message`.
    func authenticate(_ message: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.size)
        out.withUnsafeMutableBytes { out in
            message.withUnsafeBytes { bytes in authenticate(into: out) { write in write(bytes) } }
        }
        return out
    }
}
