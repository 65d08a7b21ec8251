import CNettle
import Synchronization

/// An AES-GCM key (128 or 256 bits: RFC 7714's two AEADs) with its key schedule and GHASH
/// table made once, through Nettle, for SRTP's seals and opens: one per packet, 50 a second
/// in every room.
///
/// swift-crypto's `AES.GCM` makes a new BoringSSL context from the key at every call and
/// goes through `Data` and generic layers on the way; a follower wakes every 20 ms with cold
/// caches, and that path cost it a fifth of its CPU (bench/NOTES.md). Nettle's context keeps
/// the key schedule and the GHASH key, and a packet is the nonce (which starts the message
/// again), the header, the body and the tag.
///
/// Every call takes a lock of its own (uncontended: a key has one user at a time), so a
/// key may be shared between threads.
final class GCMKey: Sendable {
    static let nonceSize = 12
    static let tagSize = 16

    /// Nettle's context for either key size, one per direction, used only under `lock`.
    private enum Context {
        case aes128(UnsafeMutablePointer<gcm_aes128_ctx>)
        case aes256(UnsafeMutablePointer<gcm_aes256_ctx>)

        init(key: [UInt8]) {
            if key.count == 16 {
                let c = UnsafeMutablePointer<gcm_aes128_ctx>.allocate(capacity: 1)
                c.initialize(to: gcm_aes128_ctx())
                nettle_gcm_aes128_set_key(c, key)
                self = .aes128(c)
            } else {
                let c = UnsafeMutablePointer<gcm_aes256_ctx>.allocate(capacity: 1)
                c.initialize(to: gcm_aes256_ctx())
                nettle_gcm_aes256_set_key(c, key)
                self = .aes256(c)
            }
        }

        func free() {
            switch self {
            case let .aes128(c): c.deinitialize(count: 1); c.deallocate()
            case let .aes256(c): c.deinitialize(count: 1); c.deallocate()
            }
        }

        /// Starts a message: the nonce (back to the key alone), then the authenticated header.
        func begin(nonce: UnsafeRawBufferPointer, authenticating header: UnsafeRawBufferPointer) {
            let n = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let h = header.baseAddress?.assumingMemoryBound(to: UInt8.self)
            switch self {
            case let .aes128(c):
                nettle_gcm_aes128_set_iv(c, nonce.count, n)
                if header.count > 0 { nettle_gcm_aes128_update(c, header.count, h) }
            case let .aes256(c):
                nettle_gcm_aes256_set_iv(c, nonce.count, n)
                if header.count > 0 { nettle_gcm_aes256_update(c, header.count, h) }
            }
        }

        /// `count` bytes from `source` to `target` (which may be the same memory).
        func encrypt(_ count: Int, _ target: UnsafeMutableRawPointer, _ source: UnsafeRawPointer) {
            let (t, s) = (target.assumingMemoryBound(to: UInt8.self), source.assumingMemoryBound(to: UInt8.self))
            switch self {
            case let .aes128(c): nettle_gcm_aes128_encrypt(c, count, t, s)
            case let .aes256(c): nettle_gcm_aes256_encrypt(c, count, t, s)
            }
        }

        func decrypt(_ count: Int, _ target: UnsafeMutableRawPointer, _ source: UnsafeRawPointer) {
            let (t, s) = (target.assumingMemoryBound(to: UInt8.self), source.assumingMemoryBound(to: UInt8.self))
            switch self {
            case let .aes128(c): nettle_gcm_aes128_decrypt(c, count, t, s)
            case let .aes256(c): nettle_gcm_aes256_decrypt(c, count, t, s)
            }
        }

        func tag(into out: UnsafeMutableRawPointer) {
            let o = out.assumingMemoryBound(to: UInt8.self)
            switch self {
            case let .aes128(c): nettle_gcm_aes128_digest(c, GCMKey.tagSize, o)
            case let .aes256(c): nettle_gcm_aes256_digest(c, GCMKey.tagSize, o)
            }
        }

        /// Whether the message's tag is `expected` (compared in constant time).
        func checkTag(_ expected: UnsafeRawPointer) -> Bool {
            withUnsafeTemporaryAllocation(byteCount: GCMKey.tagSize, alignment: 16) { computed in
                tag(into: computed.baseAddress!)
                return nettle_memeql_sec(computed.baseAddress, expected, GCMKey.tagSize) != 0
            }
        }
    }

    private nonisolated(unsafe) let sealContext: Context
    private nonisolated(unsafe) let openContext: Context
    private let lock = Mutex(())

    /// A 16- or 32-byte key; nil for any other size.
    init?(_ key: [UInt8]) {
        guard key.count == 16 || key.count == 32 else { return nil }
        sealContext = Context(key: key)
        openContext = Context(key: key)
    }

    deinit {
        sealContext.free()
        openContext.free()
    }

    /// `body` encrypted, then the tag over `authenticating` and the body.
    func seal(_ body: ArraySlice<UInt8>, authenticating: ArraySlice<UInt8>, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == Self.nonceSize)
        var out = [UInt8](repeating: 0, count: body.count + Self.tagSize)
        let c = sealContext
        lock.withLock { _ in
            nonce.withUnsafeBytes { nonce in
                authenticating.withUnsafeBytes { header in c.begin(nonce: nonce, authenticating: header) }
            }
            body.withUnsafeBytes { plain in
                out.withUnsafeMutableBytes { o in
                    if plain.count > 0 { c.encrypt(plain.count, o.baseAddress!, plain.baseAddress!) }
                    c.tag(into: o.baseAddress! + plain.count)
                }
            }
        }
        return out
    }

    /// Opens `sealed` (body then tag) into `out` (at least the body's length): true when the
    /// tag over `authenticating` and the body checks out, and `out` then holds the body.
    /// Nothing is allocated: the follower opens every packet so.
    func open(_ sealed: UnsafeRawBufferPointer, authenticating: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard sealed.count >= Self.tagSize, nonce.count == Self.nonceSize else { return false }
        let length = sealed.count - Self.tagSize
        guard out.count >= length, let body = sealed.baseAddress else { return false }
        let c = openContext
        return lock.withLock { _ in
            c.begin(nonce: nonce, authenticating: authenticating)
            if length > 0 { c.decrypt(length, out.baseAddress!, body) }
            return c.checkTag(body + length)
        }
    }

    /// Opens `sealed` (body then tag) where it lies: the body decrypted in place, true when the
    /// tag over `authenticating` and the body checks out (else the body is garbage).
    func openInPlace(_ sealed: UnsafeMutableRawBufferPointer, authenticating: UnsafeRawBufferPointer,
                     nonce: UnsafeRawBufferPointer) -> Bool {
        // Nettle decrypts in place when the output is the input.
        open(UnsafeRawBufferPointer(sealed), authenticating: authenticating, nonce: nonce, into: sealed)
    }

    /// The decrypted body of `sealed` (body then tag), or nil when the tag over
    /// `authenticating` and the body does not check out.
    func open(_ sealed: ArraySlice<UInt8>, authenticating: ArraySlice<UInt8>, nonce: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.tagSize, nonce.count == Self.nonceSize else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - Self.tagSize)
        let ok = sealed.withUnsafeBytes { s in
            authenticating.withUnsafeBytes { header in
                nonce.withUnsafeBytes { n in out.withUnsafeMutableBytes { o in open(s, authenticating: header, nonce: n, into: o) } }
            }
        }
        return ok ? out : nil
    }
}
