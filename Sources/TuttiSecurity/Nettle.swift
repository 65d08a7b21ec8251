import CNettle
import Synchronization

/// The primitives the house key's uses need, through Nettle: one AES block, HMAC-SHA256 and
/// HKDF-SHA256 (RFC 5869: two loops of HMAC); random bytes come from the kernel (the
/// standard library's generator reads `getrandom`).
///
/// Nettle keeps every key in a plain structure the caller owns: no library state to set up,
/// no handles, no allocation per message. libgcrypt, which these went through before, cost a
/// follower some 670 kB of resident memory beyond the pages of it libsystemd maps anyway
/// (under Avahi's D-Bus library); swift-crypto, with BoringSSL, swift-asn1 and swift-certificates
/// behind it, about a megabyte of code for these few functions, so it is left to the parts
/// only the coordinator and `tutti` run (pairing, the control API's certificate: TuttiTrust).
/// Tests pin each function to its specification's vectors, and HKDF to swift-crypto's.
enum Nettle {
    /// `count` random bytes from the kernel's generator.
    static func random(count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count { withUnsafeBytes(of: generator.next() as UInt64) { bytes += $0 } }
        return Array(bytes.prefix(count))
    }

    /// One 16-byte block encrypted with AES (a 16- or 32-byte key): SRTP's key derivation.
    static func aesBlock(_ block: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(block.count == 16 && (key.count == 16 || key.count == 32))
        var out = [UInt8](repeating: 0, count: 16)
        if key.count == 16 {
            var ctx = aes128_ctx()
            nettle_aes128_set_encrypt_key(&ctx, key)
            nettle_aes128_encrypt(&ctx, 16, &out, block)
        } else {
            var ctx = aes256_ctx()
            nettle_aes256_set_encrypt_key(&ctx, key)
            nettle_aes256_encrypt(&ctx, 16, &out, block)
        }
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

/// An HMAC-SHA256 key (RFC 2104), keyed once: Nettle's context keeps the hash states after
/// the key's inner and outer pads, and each message starts again from them (a digest puts
/// the context back to its keyed state). Nothing is allocated per message: a follower checks
/// one on every packet. Every call takes a lock of its own (uncontended: a key has one user
/// at a time), so a key may be shared between threads.
final class HMACKey: Sendable {
    static let size = 32
    /// Nettle's context, used only under `lock`.
    private nonisolated(unsafe) let context: UnsafeMutablePointer<hmac_sha256_ctx>
    private let lock = Mutex(())

    init(_ key: [UInt8]) {
        context = .allocate(capacity: 1)
        context.initialize(to: hmac_sha256_ctx())
        nettle_hmac_sha256_set_key(context, key.count, key)
    }

    deinit {
        context.deinitialize(count: 1)
        context.deallocate()
    }

    /// The 32-byte HMAC of a message given in parts, into `out` (32 bytes or more): `parts`
    /// calls the function it is given with each part, in order. No allocation.
    func authenticate(into out: UnsafeMutableRawBufferPointer,
                      _ parts: (_ write: (UnsafeRawBufferPointer) -> Void) -> Void) {
        precondition(out.count >= Self.size)
        let c = context
        lock.withLock { _ in
            parts { part in
                if part.count > 0 { nettle_hmac_sha256_update(c, part.count, part.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
            }
            nettle_hmac_sha256_digest(c, Self.size, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
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
