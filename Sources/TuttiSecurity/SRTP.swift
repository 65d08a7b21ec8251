import FoundationEssentials
import TuttiCore

/// The stream's SRTP master key and salt (RFC 3711 §8; AEAD_AES_128_GCM, RFC 7714): 16 bytes
/// of key and 12 of salt, derived from the house key. Stock receivers take it from the SDP.
public struct SRTPMasterKey: Sendable, Equatable {
    public static let keySize = 16
    public static let saltSize = 12
    public let key: [UInt8]
    public let salt: [UInt8]

    public init?(key: [UInt8], salt: [UInt8]) {
        guard key.count == Self.keySize, salt.count == Self.saltSize else { return nil }
        self.key = key
        self.salt = salt
    }

    /// Key then salt in base64: an SDP security description's key (RFC 4568 §6.1,
    /// `a=crypto:1 AEAD_AES_128_GCM inline:...`).
    public var inline: String { Data(key + salt).base64EncodedString() }

    /// Key then salt in hexadecimal (GStreamer's `srtp-key` caps field).
    public var hex: String { (key + salt).map { $0.hex(digits: 2) }.joined() }

    /// Reads an SDP `inline:` key (base64 of 28 bytes, an optional `|lifetime|MKI` after it ignored).
    public init?(inline: String) {
        let text = inline.split(separator: "|").first.map(String.init) ?? ""
        guard let data = Data(base64Encoded: text), data.count == Self.keySize + Self.saltSize else { return nil }
        self.init(key: Array(data.prefix(Self.keySize)), salt: Array(data.suffix(Self.saltSize)))
    }
}

extension HouseKey {
    /// The audio stream's SRTP master key and salt.
    public var stream: SRTPMasterKey {
        let bytes = derived(.stream, size: SRTPMasterKey.keySize + SRTPMasterKey.saltSize)
        return SRTPMasterKey(key: Array(bytes.prefix(SRTPMasterKey.keySize)), salt: Array(bytes.suffix(SRTPMasterKey.saltSize)))!
    }
}

/// Why a packet was refused.
public enum SRTPError: Error, Equatable, Sendable {
    /// Too short, not version 2, or a header that overruns the packet.
    case malformed(String)
    /// Its tag does not check out: not sent with this key, or changed on the way.
    case unauthenticated
    /// Its index was taken already, or is too old to tell (a replay).
    case replayed
    /// It opens with the stream's key but carries no tag for this member: the coordinator
    /// did not send it to this member (yet), or a member made it.
    case notForThisMember
    /// It opens with the stream's key but this member's tag on it is false: another member
    /// made it.
    case forged
}

/// The session keys and salts of one master key (RFC 3711 §4.3, with RFC 7714's 96-bit salt
/// multiplied by 2^16 as its errata 4938 says), for SRTP and SRTCP.
public struct SRTPSessionKeys: Sendable {
    /// KDF labels (RFC 3711 §4.3.2).
    enum Label: UInt8 {
        case rtpEncryption = 0x00, rtpSalt = 0x02, rtcpEncryption = 0x03, rtcpSalt = 0x05
    }

    let rtpKey: GCMKey
    let rtpSalt: [UInt8]
    let rtcpKey: GCMKey
    let rtcpSalt: [UInt8]

    /// Session keys as they are (RFC 7714's test vectors give them so).
    init(rtpKey: [UInt8], rtpSalt: [UInt8], rtcpKey: [UInt8], rtcpSalt: [UInt8]) {
        self.rtpKey = GCMKey(rtpKey)!
        self.rtpSalt = rtpSalt
        self.rtcpKey = GCMKey(rtcpKey)!
        self.rtcpSalt = rtcpSalt
    }

    public init(_ master: SRTPMasterKey) {
        // 16 bytes: a key size AES-GCM takes.
        rtpKey = GCMKey(Self.derive(master.key, master.salt, .rtpEncryption, SRTPMasterKey.keySize))!
        rtpSalt = Self.derive(master.key, master.salt, .rtpSalt, SRTPMasterKey.saltSize)
        rtcpKey = GCMKey(Self.derive(master.key, master.salt, .rtcpEncryption, SRTPMasterKey.keySize))!
        rtcpSalt = Self.derive(master.key, master.salt, .rtcpSalt, SRTPMasterKey.saltSize)
    }

    /// The AES-CM pseudo-random function with key derivation rate 0: AES in counter mode over
    /// (salt XOR label at byte 7), counter in the last two bytes. A salt shorter than 14 bytes
    /// is padded with zeros on the right.
    static func derive(_ key: [UInt8], _ salt: [UInt8], _ label: Label, _ length: Int) -> [UInt8] {
        derive(key: key, salt: salt, label: label.rawValue, length: length)
    }

    /// The same, for any label (RFC 3711's test vectors use the authentication label too).
    static func derive(key: [UInt8], salt: [UInt8], label: UInt8, length: Int) -> [UInt8] {
        var x = salt + [UInt8](repeating: 0, count: max(0, 14 - salt.count))
        x[7] ^= label
        var out: [UInt8] = []
        var counter: UInt16 = 0
        while out.count < length {
            out += Nettle.aesBlock(x + [UInt8(counter >> 8), UInt8(counter & 0xFF)], key: key)
            counter += 1
        }
        return Array(out.prefix(length))
    }
}

/// SRTP and SRTCP with AEAD_AES_128_GCM (RFC 7714): each RTP payload encrypted, header and
/// payload authenticated by a 16-byte tag; each RTCP packet after its first 8 bytes encrypted,
/// with an explicit 31-bit index. One thread's: the receiving side keeps a replay window
/// per SSRC (at most `capacity` of them, the longest unheard forgotten first).
public struct SRTPContext: Sendable {
    public static let tagSize = 16
    /// The SRTCP trailer: the E flag and the 31-bit index.
    public static let rtcpTrailerSize = 4
    public let capacity: Int
    private let keys: SRTPSessionKeys
    private var rtcpSent: [UInt32: UInt32] = [:]
    private var rtpWindows: Windows
    private var rtcpWindows: Windows

    public init(_ master: SRTPMasterKey, capacity: Int = 16) {
        self.init(keys: SRTPSessionKeys(master), capacity: capacity)
    }

    init(keys: SRTPSessionKeys, capacity: Int = 16) {
        self.keys = keys
        self.capacity = max(1, capacity)
        rtpWindows = Windows(capacity: self.capacity)
        rtcpWindows = Windows(capacity: self.capacity)
    }

    /// The replay windows of the SSRCs heard lately.
    struct Windows: Sendable {
        let capacity: Int
        private var table: [UInt32: (window: ReplayWindow, used: UInt64)] = [:]
        private var uses: UInt64 = 0

        init(capacity: Int) { self.capacity = capacity }

        subscript(ssrc: UInt32) -> ReplayWindow { table[ssrc]?.window ?? ReplayWindow() }
        var count: Int { table.count }

        mutating func update(_ ssrc: UInt32, _ window: ReplayWindow) {
            uses += 1
            table[ssrc] = (window, uses)
            if table.count > capacity, let oldest = table.min(by: { $0.value.used < $1.value.used })?.key {
                table.removeValue(forKey: oldest)
            }
        }
    }

    /// How many SSRCs' replay windows are kept, for SRTP and SRTCP.
    public var trackedSources: (rtp: Int, rtcp: Int) { (rtpWindows.count, rtcpWindows.count) }

    // MARK: SRTP

    /// Encrypts and tags an encoded RTP packet whose index is `rollover` × 2^16 + its sequence number.
    public func protectRTP(_ packet: [UInt8], rollover: UInt32) throws(SRTPError) -> [UInt8] {
        guard let header = RTPPacket.headerLength(of: packet) else { throw .malformed("not an RTP packet") }
        let ssrc = Self.u32(packet, 8)
        let index = UInt64(rollover) << 16 | UInt64(Self.u16(packet, 2))
        return Array(packet[..<header]) + Self.seal(packet[header...], authenticating: packet[..<header], key: keys.rtpKey,
                                                    nonce: Self.rtpNonce(keys.rtpSalt, ssrc: ssrc, index: index))
    }

    /// Checks and decrypts an SRTP packet; returns the RTP packet without its tag. Its index
    /// comes from the rollover counter it carries (`RTPPacket.ExtensionID.rollover`), else is
    /// estimated from the SSRC's newest (RFC 3711 Appendix A). With `member`, the packet must
    /// also carry that member's true tag, checked before its index is taken (a packet another
    /// member made cannot push the replay window past the coordinator's).
    public mutating func unprotectRTP(_ packet: [UInt8], member: StreamTagKey? = nil) throws(SRTPError) -> [UInt8] {
        var opened = packet
        try unprotectRTP(inPlace: &opened, member: member)
        return opened
    }

    /// Opens an SRTP packet where it lies, as `unprotectRTP(_:member:)` does: on success
    /// `packet` is the RTP packet (its header as it came, its body decrypted, the tag cut);
    /// when it throws, `packet` is no longer the packet that came. A datagram of its own
    /// (uniquely held) is opened without an allocation.
    public mutating func unprotectRTP(inPlace packet: inout [UInt8], member: StreamTagKey? = nil) throws(SRTPError) {
        // The header (and with it any rollover element) must end before the tag.
        guard packet.count >= 12 + Self.tagSize, let header = RTPPacket.headerLength(of: packet),
              header <= packet.count - Self.tagSize else {
            throw .malformed("too short for an SRTP packet")
        }
        let ssrc = Self.u32(packet, 8), sequence = Self.u16(packet, 2)
        var window = rtpWindows[ssrc]
        let index = RTPPacket.rollover(in: packet).map { UInt64($0) << 16 | UInt64(sequence) } ?? window.index(of: sequence)
        guard window.isFresh(index) else { throw .replayed }
        // The nonce is made on the stack and the body decrypted where it lies.
        let key = keys.rtpKey, salt = keys.rtpSalt
        let authentic = withUnsafeTemporaryAllocation(byteCount: GCMKey.nonceSize, alignment: 1) { nonce in
            Self.rtpNonce(salt, ssrc: ssrc, index: index, into: nonce)
            return packet.withUnsafeMutableBytes { sealed in
                key.openInPlace(UnsafeMutableRawBufferPointer(rebasing: sealed[header...]),
                                authenticating: UnsafeRawBufferPointer(rebasing: sealed[..<header]), nonce: UnsafeRawBufferPointer(nonce))
            }
        }
        guard authentic else { throw .unauthenticated }
        packet.removeLast(Self.tagSize)
        if let member, let problem = member.check(packet) { throw problem }
        window.accept(index)
        rtpWindows.update(ssrc, window)
    }

    // MARK: SRTCP

    /// Encrypts and tags an encoded RTCP packet (or compound packet), giving it the next
    /// SRTCP index of its sender's SSRC.
    public mutating func protectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        guard packet.count >= 8, packet[0] >> 6 == 2 else { throw .malformed("not an RTCP packet") }
        let ssrc = Self.u32(packet, 4)
        let index = rtcpSent[ssrc, default: 0]
        rtcpSent[ssrc] = (index + 1) & 0x7FFF_FFFF
        let trailer = Self.bytes(0x8000_0000 | index)
        let sealed = Self.seal(packet[8...], authenticating: packet[..<8] + trailer, key: keys.rtcpKey,
                               nonce: Self.rtcpNonce(keys.rtcpSalt, ssrc: ssrc, index: index))
        return Array(packet[..<8]) + sealed + trailer
    }

    /// Checks and decrypts an SRTCP packet; returns the RTCP packet.
    public mutating func unprotectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        guard packet.count >= 8 + Self.tagSize + Self.rtcpTrailerSize, packet[0] >> 6 == 2 else {
            throw .malformed("too short for an SRTCP packet")
        }
        let ssrc = Self.u32(packet, 4)
        let word = Self.u32(packet, packet.count - Self.rtcpTrailerSize)
        // Encryption is always on in tutti's SRTCP: a packet claiming otherwise is not its.
        guard word & 0x8000_0000 != 0 else { throw .unauthenticated }
        let index = word & 0x7FFF_FFFF
        var window = rtcpWindows[ssrc]
        guard window.isFresh(UInt64(index)) else { throw .replayed }
        let body = packet[8..<(packet.count - Self.rtcpTrailerSize)]
        let plain = try Self.open(body, authenticating: packet[..<8] + Self.bytes(word), key: keys.rtcpKey,
                                  nonce: Self.rtcpNonce(keys.rtcpSalt, ssrc: ssrc, index: index))
        window.accept(UInt64(index))
        rtcpWindows.update(ssrc, window)
        return Array(packet[..<8]) + plain
    }

    // MARK: Pieces

    /// RFC 7714 §8.1: 00 00 ‖ SSRC ‖ ROC ‖ SEQ (the 48-bit index), XOR the session salt.
    static func rtpNonce(_ salt: [UInt8], ssrc: UInt32, index: UInt64) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: GCMKey.nonceSize)
        iv.withUnsafeMutableBytes { rtpNonce(salt, ssrc: ssrc, index: index, into: $0) }
        return iv
    }

    /// The same, written into `iv` (12 bytes): nothing allocated.
    static func rtpNonce(_ salt: [UInt8], ssrc: UInt32, index: UInt64, into iv: UnsafeMutableRawBufferPointer) {
        let rollover = UInt32(truncatingIfNeeded: index >> 16)
        iv[0] = 0
        iv[1] = 0
        for k in 0..<4 {
            iv[2 + k] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * UInt32(k)))
            iv[6 + k] = UInt8(truncatingIfNeeded: rollover >> (24 - 8 * UInt32(k)))
        }
        iv[10] = UInt8(truncatingIfNeeded: index >> 8)
        iv[11] = UInt8(truncatingIfNeeded: index)
        for i in 0..<GCMKey.nonceSize { iv[i] ^= salt[i] }
    }

    /// RFC 7714 §9.1: 00 00 ‖ SSRC ‖ 00 00 ‖ 0 ‖ 31-bit index, XOR the session salt.
    static func rtcpNonce(_ salt: [UInt8], ssrc: UInt32, index: UInt32) -> [UInt8] {
        var iv = [0, 0] + bytes(ssrc) + [0, 0] + bytes(index & 0x7FFF_FFFF)
        for i in 0..<12 { iv[i] ^= salt[i] }
        return iv
    }

    /// The encrypted body ‖ its tag over `authenticating` (sent as it is) and the body.
    static func seal(_ body: ArraySlice<UInt8>, authenticating: ArraySlice<UInt8>, key: GCMKey, nonce: [UInt8]) -> [UInt8] {
        key.seal(body, authenticating: authenticating, nonce: nonce)
    }

    /// Checks the tag over `authenticating` and the body, then returns the decrypted body.
    static func open(_ sealed: ArraySlice<UInt8>, authenticating header: ArraySlice<UInt8>, key: GCMKey,
                     nonce: [UInt8]) throws(SRTPError) -> [UInt8] {
        guard sealed.count >= tagSize else { throw .malformed("no room for the tag") }
        guard let plain = key.open(sealed, authenticating: header, nonce: nonce) else { throw .unauthenticated }
        return plain
    }

    static func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) << 8 | UInt16(b[at + 1]) }
    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(b[at + $1]) } }
    static func bytes(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
}
