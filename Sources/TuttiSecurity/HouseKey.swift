import TuttiCore

/// The house's secret: 32 random bytes the coordinator makes on its first start and every
/// member (follower, lyric screen) holds a copy of, from pairing or a copied key file. Each
/// use has a key of its own, derived with HKDF-SHA256, so that no two uses share one.
public struct HouseKey: Sendable, Equatable {
    /// What a derived key is for (HKDF's info).
    public enum Purpose: String, Sendable {
        /// Tags on the clock port's messages.
        case clockPort = "tutti clock port v1"
        /// The audio stream's SRTP master key and salt.
        case stream = "tutti stream srtp v1"
        /// A short name of the key, to tell two keys apart without showing either.
        case fingerprint = "tutti fingerprint v1"
        /// The proof in the coordinator's announcement on the network (`DiscoveryProof`).
        case discovery = "tutti discovery v1"
        /// What seals a new member's secret for the holder of the house key that enrolled.
        case enrolment = "tutti enrolment v1"
    }

    public static let size = 32
    /// The secret itself (for sealing it to a new member when pairing).
    package let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size else { return nil }
        self.bytes = bytes
    }

    /// Compared in constant time (as swift-crypto's keys were): how long a comparison takes
    /// says nothing of where two keys differ.
    public static func == (a: HouseKey, b: HouseKey) -> Bool {
        constantTimeEqual(a.bytes[...], b.bytes[...])
    }

    public static func generate() -> HouseKey {
        HouseKey(bytes: Nettle.random(count: size))!
    }

    /// The key as 64 hexadecimal digits (the key file's one line).
    public var hex: String {
        bytes.map { $0.hex(digits: 2) }.joined()
    }

    /// Reads 64 hexadecimal digits (surrounding white space allowed).
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex.trimmingWhitespace(), count: Self.size) else { return nil }
        self.init(bytes: bytes)
    }

    /// The key for `purpose`: HKDF-SHA256 of the secret, salted "tutti house".
    public func derived(_ purpose: Purpose, size: Int = 32) -> [UInt8] {
        Nettle.hkdfSHA256(key: bytes, salt: Array("tutti house".utf8), info: Array(purpose.rawValue.utf8), count: size)
    }

    /// The clock port's signer and checker.
    public var clockPort: HMACAuthenticator { HMACAuthenticator(key: derived(.clockPort)) }

    /// Eight hexadecimal digits naming this key (from a key derived for the purpose: it
    /// reveals nothing of the others), shown in logs so that two machines' keys can be compared.
    public var fingerprint: String {
        derived(.fingerprint, size: 4).map { $0.hex(digits: 2) }.joined()
    }
}

/// HMAC-SHA256, cut to `ControlMessage.tagSize` bytes (RFC 2104 allows cutting to half).
public struct HMACAuthenticator: MessageAuthenticator {
    /// HMAC keyed once: its two pads made once and its two hash handles kept, so that a
    /// message costs its own blocks and the pads' (keying an HMAC again for every
    /// message, every clock exchange's request and answer, cost a follower some 9 M
    /// instructions a second).
    private let keyed: HMACKey

    public init(key: [UInt8]) {
        keyed = HMACKey(key)
    }

    /// A key of its own (the coordinator's return-routability cookies).
    public static func random() -> HMACAuthenticator { HMACAuthenticator(key: Nettle.random(count: HMACKey.size)) }

    public func tag(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: ControlMessage.tagSize) { out, count in
            full(bytes) { out.baseAddress!.initialize(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: ControlMessage.tagSize) }
            count = ControlMessage.tagSize
        }
    }

    /// Checked on the stack: a clock exchange's every message allocates nothing for it.
    public func verify(_ tag: ArraySlice<UInt8>, for bytes: ArraySlice<UInt8>) -> Bool {
        tag.count == ControlMessage.tagSize
            && full(bytes) { constantTimeEqual(UnsafeRawBufferPointer(rebasing: $0[..<ControlMessage.tagSize]), tag) }
    }

    /// Hands `use` the full 32-byte HMAC of `bytes`, made on the stack.
    private func full<R>(_ bytes: ArraySlice<UInt8>, _ use: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: HMACKey.size, alignment: 1) { out in
            bytes.withUnsafeBytes { message in keyed.authenticate(into: out) { write in write(message) } }
            return use(UnsafeRawBufferPointer(out))
        }
    }
}

/// Proof that an announcement on the network (mDNS, docs/security.md, "Discovery") is the
/// house's coordinator's: an HMAC-SHA256 tag, cut to 16 bytes and written in hex, over what
/// the announcement says (`Discovery.proofMessage`). Two keys make it, one for each kind of
/// client: the members' (followers, screens: they hold the house key) and the controllers'
/// (`tutti ctl` or `tutti mpris` on another machine: they hold the house token, and must
/// not send it to a stranger). Neither key can be worked back from a tag.
public struct DiscoveryProof: Sendable {
    private let authenticator: HMACAuthenticator

    /// The members' proof, keyed from the house key.
    public init(houseKey: HouseKey) {
        authenticator = HMACAuthenticator(key: houseKey.derived(.discovery))
    }

    /// The controllers' proof, keyed from the house token (HKDF-SHA256 of it).
    public init(token: String) {
        authenticator = HMACAuthenticator(key: Nettle.hkdfSHA256(key: Array(token.utf8), salt: Array("tutti house".utf8),
                                                                 info: Array("tutti discovery token v1".utf8), count: 32))
    }

    /// The tag of `message`, in hex (32 digits).
    public func tag(_ message: [UInt8]) -> String {
        authenticator.tag(message[...]).map { $0.hex(digits: 2) }.joined()
    }

    /// Whether `tag` (hex) is `message`'s, compared in constant time.
    public func verifies(_ tag: String, for message: [UInt8]) -> Bool {
        guard let bytes = Hex.decode(tag, count: ControlMessage.tagSize) else { return false }
        return authenticator.verify(bytes[...], for: message[...])
    }
}

/// Hexadecimal digits, strictly: exactly two per byte, nothing else (no sign, no spaces).
enum Hex {
    static func decode(_ text: String, count: Int) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 2 * count else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[i]), let low = nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
