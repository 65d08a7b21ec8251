import TuttiCore

/// A member's own credential (docs/security.md, "Members"): its id in the house and 32
/// random bytes the coordinator made for it, at pairing or when a holder of the house key
/// enrolled. The member signs its clock-port messages with a key derived from it, and the
/// coordinator signs its messages to that member with the same key: no other member holds
/// it, so no other member can speak to this one in the coordinator's name. The stream's key
/// comes to the member sealed with another key derived from it.
public struct MemberKey: Sendable, Equatable {
    public static let size = 32
    public let id: UInt16
    package let secret: [UInt8]

    public init?(id: UInt16, secret: [UInt8]) {
        guard id != 0, secret.count == Self.size else { return nil }
        self.id = id
        self.secret = secret
    }

    public static func generate(id: UInt16) -> MemberKey {
        MemberKey(id: id, secret: Nettle.random(count: size))!
    }

    public static func == (a: MemberKey, b: MemberKey) -> Bool {
        a.id == b.id && constantTimeEqual(a.secret[...], b.secret[...])
    }

    private func derived(_ info: String, size: Int = 32) -> [UInt8] {
        Nettle.hkdfSHA256(key: secret, salt: Array("tutti member".utf8), info: Array(info.utf8), count: size)
    }

    /// The clock port's signer and checker for this member's messages, both ways.
    public var clockPort: HMACAuthenticator { HMACAuthenticator(key: derived("tutti member clock v1")) }

    /// What tags the stream's packets for this member (`StreamTagKey`).
    public var streamTag: StreamTagKey { StreamTagKey(member: id, key: derived("tutti member stream tag v1")) }

    /// What seals the stream's key for this member.
    var wrapping: KeyWrap { KeyWrap(key: derived("tutti member stream key v1"), label: "member \(id)") }

    /// The key file's one line: `tutti member ID HEX`.
    public var text: String { "tutti member \(id) \(secret.map { $0.hex(digits: 2) }.joined())\n" }

    /// Reads the key file's line.
    public init?(text: String) {
        let words = text.trimmingWhitespace().split(separator: " ")
        guard words.count == 4, words[0] == "tutti", words[1] == "member", let id = UInt16(words[2]),
              let secret = Hex.decode(String(words[3]), count: Self.size) else { return nil }
        self.init(id: id, secret: secret)
    }

    /// Eight hexadecimal digits naming this credential (shown in logs).
    public var fingerprint: String {
        derived("tutti member fingerprint v1", size: 4).map { $0.hex(digits: 2) }.joined()
    }

    /// The stream's key of `generation`, sealed for this member.
    public func sealStreamKey(_ key: SRTPMasterKey, generation: UInt32) -> [UInt8] {
        wrapping.seal(key.key + key.salt, context: generation)
    }

    /// The stream's key of `generation`, opened; nil when it was not sealed for this member.
    public func openStreamKey(_ sealed: [UInt8], generation: UInt32) -> SRTPMasterKey? {
        wrapping.open(sealed, context: generation).flatMap(SRTPMasterKey.init(bytes:))
    }
}

extension HouseKey {
    /// What seals a new member's secret for the holder of the house key that enrolled, and
    /// the stream's key for member 0.
    var wrapping: KeyWrap { KeyWrap(key: derived(.enrolment), label: "house") }

    /// A new member's secret, sealed for the holder of the house key that asked.
    public func sealEnrolment(_ member: MemberKey) -> [UInt8] {
        wrapping.seal(member.secret, context: UInt32(member.id))
    }

    /// The credential the coordinator made for this holder of the house key; nil when it was
    /// not sealed with this house key.
    public func openEnrolment(member id: UInt16, sealed: [UInt8]) -> MemberKey? {
        wrapping.open(sealed, context: UInt32(id)).flatMap { MemberKey(id: id, secret: $0) }
    }

    /// The stream's key of `generation`, sealed for member 0 (a holder of the house key
    /// not yet enrolled), and opened.
    public func sealStreamKey(_ key: SRTPMasterKey, generation: UInt32) -> [UInt8] {
        wrapping.seal(key.key + key.salt, context: 0x8000_0000 ^ generation)
    }

    public func openStreamKey(_ sealed: [UInt8], generation: UInt32) -> SRTPMasterKey? {
        wrapping.open(sealed, context: 0x8000_0000 ^ generation).flatMap(SRTPMasterKey.init(bytes:))
    }
}

extension SRTPMasterKey {
    /// Key then salt (28 bytes).
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.keySize + Self.saltSize else { return nil }
        self.init(key: Array(bytes.prefix(Self.keySize)), salt: Array(bytes.suffix(Self.saltSize)))
    }

    /// A new random key and salt (a new generation of the stream's key).
    public static func generate() -> SRTPMasterKey {
        SRTPMasterKey(bytes: Nettle.random(count: keySize + saltSize))!
    }
}

/// AES-256-GCM sealing of a short secret: a random 12-byte nonce, the secret encrypted, and
/// a tag over it and what it is for (`label` and a context number: a sealed key cannot be
/// passed off as another's, or as another generation's).
struct KeyWrap {
    let key: [UInt8]
    let label: String

    func seal(_ secret: [UInt8], context: UInt32) -> [UInt8] {
        let nonce = Nettle.random(count: GCMKey.nonceSize)
        return nonce + GCMKey(key)!.seal(secret[...], authenticating: associated(context)[...], nonce: nonce)
    }

    func open(_ sealed: [UInt8], context: UInt32) -> [UInt8]? {
        guard sealed.count > GCMKey.nonceSize + GCMKey.tagSize, let gcm = GCMKey(key) else { return nil }
        return gcm.open(sealed[GCMKey.nonceSize...], authenticating: associated(context)[...], nonce: Array(sealed.prefix(GCMKey.nonceSize)))
    }

    private func associated(_ context: UInt32) -> [UInt8] {
        Array("tutti key wrap v1 \(label)".utf8) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: context >> $0) }
    }
}

/// A member's tag on the stream's packets (docs/security.md, "The audio stream"): the group key
/// (SRTP) that every member holds proves a packet is the house's, not that the coordinator
/// sent it; the coordinator also tags every packet for each member it is for, with a key
/// only that member shares with it: HMAC-SHA256 cut to 8 bytes, over the packet with its
/// send time and every member's tag zeroed (the send time is stamped after the tags, just
/// before the packet leaves, and SRTP authenticates it). A member can then make packets the
/// others open, but none they play.
public struct StreamTagKey: Sendable {
    public let member: UInt16
    private let mac: HMACKey

    init(member: UInt16, key: [UInt8]) {
        self.member = member
        mac = HMACKey(key)
    }

    /// Eight zero bytes: what the send time and the tags count as in a tag.
    private static let zeros = [UInt8](repeating: 0, count: 8)

    /// Writes this member's tag of an encoded packet into `out` (`memberTagSize` bytes): the
    /// first bytes of the HMAC of the packet with its send time and every tag taken as zeros,
    /// fed to the MAC in parts, so that nothing is copied or allocated.
    private func tag(of bytes: [UInt8], into out: UnsafeMutableRawBufferPointer) {
        withUnsafeTemporaryAllocation(byteCount: HMACKey.size, alignment: 1) { full in
            bytes.withUnsafeBytes { raw in
                Self.zeros.withUnsafeBytes { zeros in
                    mac.authenticate(into: full) { write in
                        var cursor = 0
                        RTPPacket.forEachUntaggedRange(in: bytes) { start, count, _ in
                            write(UnsafeRawBufferPointer(rebasing: raw[cursor..<start]))
                            write(UnsafeRawBufferPointer(rebasing: zeros[0..<count]))
                            cursor = start + count
                        }
                        write(UnsafeRawBufferPointer(rebasing: raw[cursor...]))
                    }
                }
            }
            out.copyMemory(from: UnsafeRawBufferPointer(rebasing: full[0..<RTPPacket.memberTagSize]))
        }
    }

    /// Writes each member's tag into its slot of an encoded packet (`RTPPacket.encode(taggedFor:)`);
    /// `keys` in the order of the slots, one per slot. (A tag counts every slot as zeros, so
    /// the tags written first change none of the others.)
    public static func sign(_ bytes: inout [UInt8], with keys: [StreamTagKey]) {
        let slots = RTPPacket.memberTagSlots(in: bytes)
        var tag = [UInt8](repeating: 0, count: RTPPacket.memberTagSize)
        for (slot, key) in zip(slots, keys) where slot.member == key.member {
            tag.withUnsafeMutableBytes { key.tag(of: bytes, into: $0) }
            bytes.replaceSubrange(slot.at..<(slot.at + RTPPacket.memberTagSize), with: tag)
        }
    }

    /// Whether an RTP packet (opened) carries this member's tag, and a true one: nil when it
    /// does, else why not. Compared in constant time; nothing allocated (every packet).
    public func check(_ bytes: [UInt8]) -> SRTPError? {
        guard let mine = RTPPacket.memberTagOffset(for: member, in: bytes) else { return .notForThisMember }
        return withUnsafeTemporaryAllocation(byteCount: RTPPacket.memberTagSize, alignment: 1) { expected in
            tag(of: bytes, into: expected)
            var difference: UInt8 = 0
            for k in 0..<RTPPacket.memberTagSize { difference |= expected[k] ^ bytes[mine + k] }
            return difference == 0 ? nil : SRTPError.forged
        }
    }
}

/// A member's keys for the stream (SRTP): the generation in use, and a newer one the
/// coordinator handed out ahead of moving the stream to it. A packet the key in use does not
/// open is tried with the newer one; the first it opens makes it the key in use. One thread's.
public struct StreamKeys: Sendable {
    private var current: SRTPContext
    private var newer: (generation: UInt32, context: SRTPContext)?
    public private(set) var generation: UInt32
    private let capacity: Int

    /// The member's tag every packet must carry (nil: a holder of the house key alone, not
    /// yet enrolled, takes what the group key opens).
    public private(set) var memberTag: StreamTagKey?
    /// The tag of a member that has just enrolled, required from the first packet that carries
    /// a tag for it: the coordinator tags the stream for a member only once it knows the
    /// member's room plays it, and until then the member takes what the group key opens, as it
    /// did before it enrolled (requiring it at once silenced a room for up to 0.7 s).
    private var enrolling: StreamTagKey?

    public init(_ key: SRTPMasterKey, generation: UInt32 = 0, member: MemberKey? = nil, capacity: Int = 16) {
        current = SRTPContext(key, capacity: capacity)
        self.generation = generation
        self.capacity = capacity
        memberTag = member?.streamTag
    }

    /// The member enrolled: its packets must carry its tag from the first that does on.
    public mutating func enrolled(_ member: MemberKey) {
        guard memberTag?.member != member.id else { return }
        enrolling = member.streamTag
    }

    /// Requires the enrolling member's tag once a packet carries one for it (in the clear, in
    /// the header); a false one is then refused like any other.
    private mutating func requireTagOnceCarried(_ packet: [UInt8]) {
        guard let tag = enrolling, RTPPacket.memberTagOffset(for: tag.member, in: packet) != nil else { return }
        memberTag = tag
        enrolling = nil
    }

    /// The key of `generation`, to use once a packet comes sealed with it.
    public mutating func take(_ key: SRTPMasterKey, generation: UInt32) {
        guard generation != self.generation else { return }
        newer = (generation, SRTPContext(key, capacity: capacity))
    }

    /// Opens a packet where it lies (`SRTPContext.unprotectRTP(inPlace:member:)`), while no
    /// newer key waits: a packet the current key does not open is then refused, and nothing
    /// needs it as it came. While one waits, the packet is opened from a copy, to try it
    /// with the newer key after the current one.
    public mutating func unprotectRTP(inPlace packet: inout [UInt8]) throws(SRTPError) {
        requireTagOnceCarried(packet)
        if newer == nil {
            try current.unprotectRTP(inPlace: &packet, member: memberTag)
        } else {
            packet = try unprotectRTP(packet)
        }
    }

    public mutating func unprotectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        requireTagOnceCarried(packet)
        do {
            return try current.unprotectRTP(packet, member: memberTag)
        } catch {
            guard error == .unauthenticated, var next = newer else { throw error }
            let opened = try next.context.unprotectRTP(packet, member: memberTag)
            current = next.context
            generation = next.generation
            newer = nil
            return opened
        }
    }

    public mutating func protectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try current.protectRTCP(packet)
    }
}
