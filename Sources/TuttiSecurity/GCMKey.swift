import CGcrypt
import Synchronization

/// An AES-GCM key (128 or 256 bits: RFC 7714's two AEADs) with its key schedule made once,
/// through libgcrypt, for SRTP's seals and opens: one per packet, 50 a second in every room.
///
/// swift-crypto's `AES.GCM` makes a new BoringSSL context from the key at every call and
/// goes through `Data` and generic layers on the way; a follower wakes every 20 ms with cold
/// caches, and that path cost it a fifth of its CPU (bench/NOTES.md). libgcrypt's cipher
/// handle keeps the key schedule and the GHASH key, and a packet is one reset, the nonce,
/// the header, the body and the tag. libpulse brings libgcrypt into every follower already
/// (through libsystemd), so it adds no library to map.
///
/// Every call takes a lock of its own (uncontended: a key has one user at a time), so a
/// key may be shared between threads.
final class GCMKey: Sendable {
    static let nonceSize = 12
    static let tagSize = 16

    /// libgcrypt's handles, one per direction, used only under `lock`.
    private nonisolated(unsafe) let sealHandle: OpaquePointer
    private nonisolated(unsafe) let openHandle: OpaquePointer
    private let lock = Mutex(())

    /// A 16- or 32-byte key; nil for any other size, or when libgcrypt cannot make a handle.
    init?(_ key: [UInt8]) {
        guard Gcrypt.ready, key.count == 16 || key.count == 32 else { return nil }
        let algorithm = Int32(key.count == 16 ? GCRY_CIPHER_AES.rawValue : GCRY_CIPHER_AES256.rawValue)
        func handle() -> OpaquePointer? {
            var h: gcry_cipher_hd_t?
            guard gcry_cipher_open(&h, algorithm, Int32(GCRY_CIPHER_MODE_GCM.rawValue), 0) == 0, let h else { return nil }
            guard gcry_cipher_setkey(h, key, key.count) == 0 else {
                gcry_cipher_close(h)
                return nil
            }
            return h
        }
        guard let seal = handle() else { return nil }
        guard let open = handle() else {
            gcry_cipher_close(seal)
            return nil
        }
        sealHandle = seal
        openHandle = open
    }

    deinit {
        gcry_cipher_close(sealHandle)
        gcry_cipher_close(openHandle)
    }

    /// Starts a message on `handle`: back to the key alone (the handle keeps its key
    /// schedule), the nonce, then the authenticated header. False when libgcrypt refused.
    private static func begin(_ handle: OpaquePointer, nonce: [UInt8], authenticating: ArraySlice<UInt8>) -> Bool {
        nonce.withUnsafeBytes { nonce in
            authenticating.withUnsafeBytes { header in begin(handle, nonce: nonce, authenticating: header) }
        }
    }

    private static func begin(_ handle: OpaquePointer, nonce: UnsafeRawBufferPointer, authenticating: UnsafeRawBufferPointer) -> Bool {
        gcry_cipher_ctl(handle, Int32(bitPattern: GCRYCTL_RESET.rawValue), nil, 0) == 0
            && gcry_cipher_setiv(handle, nonce.baseAddress, nonce.count) == 0
            && gcry_cipher_authenticate(handle, authenticating.baseAddress, authenticating.count) == 0
    }

    /// `body` encrypted, then the tag over `authenticating` and the body.
    func seal(_ body: ArraySlice<UInt8>, authenticating: ArraySlice<UInt8>, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == Self.nonceSize)
        var out = [UInt8](repeating: 0, count: body.count + Self.tagSize)
        let h = sealHandle
        let ok = lock.withLock { _ in
            Self.begin(h, nonce: nonce, authenticating: authenticating) && body.withUnsafeBytes { plain in
                out.withUnsafeMutableBytes { o in
                    gcry_cipher_encrypt(h, o.baseAddress, plain.count, plain.baseAddress, plain.count) == 0
                        && gcry_cipher_gettag(h, o.baseAddress! + plain.count, Self.tagSize) == 0
                }
            }
        }
        // A 12-byte nonce with a key that made its handle cannot fail.
        precondition(ok, "AES-GCM seal failed")
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
        let h = openHandle
        return lock.withLock { _ in
            Self.begin(h, nonce: nonce, authenticating: authenticating)
                && (length == 0 || gcry_cipher_decrypt(h, out.baseAddress, length, body, length) == 0)
                && gcry_cipher_checktag(h, body + length, Self.tagSize) == 0
        }
    }

    /// Opens `sealed` (body then tag) where it lies: the body decrypted in place, true when the
    /// tag over `authenticating` and the body checks out (else the body is garbage).
    func openInPlace(_ sealed: UnsafeMutableRawBufferPointer, authenticating: UnsafeRawBufferPointer,
                     nonce: UnsafeRawBufferPointer) -> Bool {
        guard sealed.count >= Self.tagSize, nonce.count == Self.nonceSize, let body = sealed.baseAddress else { return false }
        let length = sealed.count - Self.tagSize
        let h = openHandle
        return lock.withLock { _ in
            // No input buffer: libgcrypt decrypts the output buffer in place.
            Self.begin(h, nonce: nonce, authenticating: authenticating)
                && (length == 0 || gcry_cipher_decrypt(h, body, length, nil, 0) == 0)
                && gcry_cipher_checktag(h, body + length, Self.tagSize) == 0
        }
    }

    /// The decrypted body of `sealed` (body then tag), or nil when the tag over
    /// `authenticating` and the body does not check out.
    func open(_ sealed: ArraySlice<UInt8>, authenticating: ArraySlice<UInt8>, nonce: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.tagSize, nonce.count == Self.nonceSize else { return nil }
        let length = sealed.count - Self.tagSize
        var out = [UInt8](repeating: 0, count: length)
        let h = openHandle
        let ok = lock.withLock { _ in
            Self.begin(h, nonce: nonce, authenticating: authenticating) && sealed.withUnsafeBytes { s in
                out.withUnsafeMutableBytes { o in
                    gcry_cipher_decrypt(h, o.baseAddress, length, s.baseAddress, length) == 0
                        && gcry_cipher_checktag(h, s.baseAddress! + length, Self.tagSize) == 0
                }
            }
        }
        return ok ? out : nil
    }
}
