/// An RTP packet (RFC 3550 §5.1) carrying one Opus packet (RFC 7587), with tutti's
/// one-byte header extensions (RFC 8285): the presentation time of the first sample, the
/// stream epoch and the instant the packet was sent. See docs/protocol.md for the byte layout.
public struct RTPPacket: Equatable, Sendable {
    /// RFC 8285 one-byte-header extension IDs used by tutti.
    public enum ExtensionID {
        /// 8 bytes: NTP-format coordinator time at which the packet's first sample is heard.
        public static let presentationTime: UInt8 = 1
        /// 4 bytes: increments whenever the stream's timeline is cut (flush, seek, restart).
        public static let epoch: UInt8 = 2
        /// 8 bytes: NTP-format coordinator time at which the packet left (stamped just before
        /// each `sendto`): every packet is a reading of the clock offset for its receiver.
        public static let sendTime: UInt8 = 3
        /// 4 bytes: the SRTP rollover counter (RFC 3711 §3.3.1) of the packet's SSRC, so that
        /// a follower joining after the sequence number has wrapped knows the packet's index
        /// (authenticated with the packet; a wrong one fails its tag).
        public static let rollover: UInt8 = 4
        /// 10 bytes, one element per member the packet is for: the member's id (2 bytes) and
        /// its 8-byte tag over the packet (docs/security.md, "The audio stream"), which no other
        /// member can make. The sender writes the tags after encoding (`memberTagSlots`).
        public static let memberTag: UInt8 = 5
    }

    /// The bytes of a member's tag in its `memberTag` element.
    public static let memberTagSize = 8

    public static let version: UInt8 = 2
    public static let defaultPayloadType: UInt8 = 96
    static let oneByteProfile: UInt16 = 0xBEDE

    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: SequenceNumber
    public var timestamp: StreamTimestamp
    public var ssrc: UInt32
    public var presentationTime: CoordinatorTime?
    public var epoch: UInt32?
    public var sendTime: CoordinatorTime?
    public var rollover: UInt32?
    /// The payload; a decoded packet's is a view of the datagram it came in, not a copy.
    public var payload: ArraySlice<UInt8>

    public init(
        marker: Bool = false, payloadType: UInt8 = RTPPacket.defaultPayloadType,
        sequenceNumber: SequenceNumber, timestamp: StreamTimestamp, ssrc: UInt32,
        presentationTime: CoordinatorTime?, epoch: UInt32? = nil, sendTime: CoordinatorTime? = nil, rollover: UInt32? = nil,
        payload: ArraySlice<UInt8>
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.presentationTime = presentationTime
        self.epoch = epoch
        self.sendTime = sendTime
        self.rollover = rollover
        self.payload = payload
    }

    public init(
        marker: Bool = false, payloadType: UInt8 = RTPPacket.defaultPayloadType,
        sequenceNumber: SequenceNumber, timestamp: StreamTimestamp, ssrc: UInt32,
        presentationTime: CoordinatorTime?, epoch: UInt32? = nil, sendTime: CoordinatorTime? = nil, rollover: UInt32? = nil,
        payload: [UInt8]
    ) {
        self.init(marker: marker, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc,
                  presentationTime: presentationTime, epoch: epoch, sendTime: sendTime, rollover: rollover, payload: payload[...])
    }

    /// Serializes the packet: 12-byte header, extension block when any extension is set, payload.
    /// `taggedFor`: the members whose tags it is to carry, each an element whose tag is zero
    /// until the sender writes it.
    public func encode(taggedFor members: [UInt16] = []) -> [UInt8] {
        var ext: [UInt8] = []
        if let presentationTime {
            ext.append(ExtensionID.presentationTime << 4 | 7)
            ext.appendBigEndian(NTPTimestamp(presentationTime).rawValue)
        }
        if let epoch {
            ext.append(ExtensionID.epoch << 4 | 3)
            ext.appendBigEndian(epoch)
        }
        if let sendTime {
            ext.append(ExtensionID.sendTime << 4 | 7)
            ext.appendBigEndian(NTPTimestamp(sendTime).rawValue)
        }
        if let rollover {
            ext.append(ExtensionID.rollover << 4 | 3)
            ext.appendBigEndian(rollover)
        }
        for member in members {
            ext.append(ExtensionID.memberTag << 4 | UInt8(1 + RTPPacket.memberTagSize))
            ext.appendBigEndian(member)
            ext += repeatElement(0, count: RTPPacket.memberTagSize)
        }
        while ext.count % 4 != 0 { ext.append(0) }

        var out: [UInt8] = []
        out.reserveCapacity(12 + 4 + ext.count + payload.count)
        out.append(RTPPacket.version << 6 | (ext.isEmpty ? 0 : 0x10))
        out.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        out.appendBigEndian(sequenceNumber.rawValue)
        out.appendBigEndian(timestamp.rawValue)
        out.appendBigEndian(ssrc)
        if !ext.isEmpty {
            out.appendBigEndian(RTPPacket.oneByteProfile)
            out.appendBigEndian(UInt16(ext.count / 4))
            out += ext
        }
        out += payload
        return out
    }

    /// Parses an RTP packet. Unknown extensions and profiles are skipped; CSRCs are skipped.
    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> RTPPacket {
        var r = ByteReader(bytes)
        let b0 = try r.u8()
        let version = b0 >> 6
        guard version == RTPPacket.version else { throw .badVersion(version) }
        let hasPadding = b0 & 0x20 != 0
        let hasExtension = b0 & 0x10 != 0
        let csrcCount = Int(b0 & 0x0F)
        let b1 = try r.u8()
        let seq = try r.u16()
        let ts = try r.u32()
        let ssrc = try r.u32()
        try r.skip(csrcCount * 4)

        var presentation: CoordinatorTime?
        var epoch: UInt32?
        var sent: CoordinatorTime?
        var rollover: UInt32?
        if hasExtension {
            let profile = try r.u16()
            let words = Int(try r.u16())
            try r.need(words * 4)
            let end = r.offset + words * 4
            if profile == oneByteProfile {
                while r.offset < end {
                    let h = try r.u8()
                    if h == 0 { continue }  // padding byte
                    let id = h >> 4
                    if id == 15 { break }  // reserved: stop parsing (RFC 8285 §4.2)
                    let length = Int(h & 0x0F) + 1
                    guard r.offset + length <= end else { throw .badExtension("element overruns block") }
                    switch (id, length) {
                    case (ExtensionID.presentationTime, 8):
                        presentation = NTPTimestamp(rawValue: try r.u64()).coordinatorTime
                    case (ExtensionID.epoch, 4):
                        epoch = try r.u32()
                    case (ExtensionID.sendTime, 8):
                        sent = NTPTimestamp(rawValue: try r.u64()).coordinatorTime
                    case (ExtensionID.rollover, 4):
                        rollover = try r.u32()
                    default:
                        try r.skip(length)
                    }
                }
            }
            r.offset = end
        }
        var payloadEnd = bytes.count
        if hasPadding {
            guard let last = bytes.last, last > 0, Int(last) <= payloadEnd - r.offset else { throw .badPadding }
            payloadEnd -= Int(last)
        }
        return RTPPacket(
            marker: b1 & 0x80 != 0, payloadType: b1 & 0x7F,
            sequenceNumber: SequenceNumber(seq), timestamp: StreamTimestamp(ts), ssrc: ssrc,
            presentationTime: presentation, epoch: epoch, sendTime: sent, rollover: rollover,
            payload: bytes[r.offset..<payloadEnd])
    }

    /// The SSRC of an RTP (or SRTP: it is in the clear) packet, without reading the rest;
    /// nil for what is too short to be one.
    public static func ssrc(in bytes: [UInt8]) -> UInt32? {
        guard bytes.count >= 12, bytes[0] >> 6 == 2 else { return nil }
        return UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
    }

    /// Where the send-time element's 8 bytes sit in an encoded packet, if it has one: the
    /// sender rewrites them just before each `sendto`.
    public static func sendTimeOffset(in bytes: [UInt8]) -> Int? {
        extensionOffset(id: ExtensionID.sendTime, length: 8, in: bytes)
    }

    /// The rollover counter an encoded packet carries, if any (read before its tag is checked:
    /// the tag then tells whether it was the sender's).
    public static func rollover(in bytes: [UInt8]) -> UInt32? {
        guard let at = extensionOffset(id: ExtensionID.rollover, length: 4, in: bytes) else { return nil }
        return (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[at + $1]) }
    }

    /// Where the value of one-byte extension element `id` of `length` bytes sits in an encoded
    /// packet, if it has one.
    static func extensionOffset(id: UInt8, length: Int, in bytes: [UInt8]) -> Int? {
        var found: Int?
        forEachElement(in: bytes) { elementID, elementLength, at in
            guard elementID == id, elementLength == length else { return true }
            found = at
            return false
        }
        return found
    }

    /// The members an encoded packet carries tags for, and where each one's tag sits (its
    /// `memberTagSize` bytes), in the order of the packet's elements.
    public static func memberTagSlots(in bytes: [UInt8]) -> [(member: UInt16, at: Int)] {
        var slots: [(member: UInt16, at: Int)] = []
        forEachElement(in: bytes) { id, length, at in
            if id == ExtensionID.memberTag, length == 2 + memberTagSize {
                slots.append((UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]), at + 2))
            }
            return true
        }
        return slots
    }

    /// What a packet's member tags are made without, in the order the ranges sit: the send
    /// time's value (stamped after the tags) and every member's tag. Calls `body` with each
    /// range's start and length (at most 8 bytes), and the member for a tag. No allocation:
    /// the follower checks its tag on every packet.
    public static func forEachUntaggedRange(in bytes: [UInt8], _ body: (_ start: Int, _ count: Int, _ member: UInt16?) -> Void) {
        forEachElement(in: bytes) { id, length, at in
            if id == ExtensionID.sendTime, length == 8 {
                body(at, 8, nil)
            } else if id == ExtensionID.memberTag, length == 2 + memberTagSize {
                body(at + 2, memberTagSize, UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]))
            }
            return true
        }
    }

    /// Where `member`'s tag sits in an encoded packet (its first slot), if it carries one.
    public static func memberTagOffset(for member: UInt16, in bytes: [UInt8]) -> Int? {
        var found: Int?
        forEachElement(in: bytes) { id, length, at in
            guard id == ExtensionID.memberTag, length == 2 + memberTagSize, UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) == member else {
                return true
            }
            found = at + 2
            return false
        }
        return found
    }

    /// Calls `body` with each one-byte extension element's ID, length and value's offset
    /// (only elements that end within the block), until it returns false.
    private static func forEachElement(in bytes: [UInt8], _ body: (UInt8, Int, Int) -> Bool) {
        guard bytes.count >= 16, bytes[0] & 0x10 != 0 else { return }
        let start = 12 + Int(bytes[0] & 0x0F) * 4
        guard bytes.count >= start + 4, bytes[start] == 0xBE, bytes[start + 1] == 0xDE else { return }
        let end = min(bytes.count, start + 4 + (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])) * 4)
        var i = start + 4
        while i < end {
            let h = bytes[i]
            if h == 0 { i += 1; continue }
            let elementID = h >> 4, elementLength = Int(h & 0x0F) + 1
            if elementID == 15 || i + 1 + elementLength > end { return }
            if !body(elementID, elementLength, i + 1) { return }
            i += 1 + elementLength
        }
    }

    /// The length of an encoded packet's header (fixed part, CSRCs, extension block): what
    /// SRTP authenticates but does not encrypt. Nil when the packet is too short for it.
    public static func headerLength(of bytes: [UInt8]) -> Int? {
        guard bytes.count >= 12, bytes[0] >> 6 == version else { return nil }
        var length = 12 + Int(bytes[0] & 0x0F) * 4
        if bytes[0] & 0x10 != 0 {
            guard bytes.count >= length + 4 else { return nil }
            length += 4 + (Int(bytes[length + 2]) << 8 | Int(bytes[length + 3])) * 4
        }
        return length <= bytes.count ? length : nil
    }

    /// Rewrites an encoded packet's send time in place (see `sendTimeOffset`).
    public static func stamp(_ bytes: inout [UInt8], at offset: Int, sendTime: CoordinatorTime) {
        let raw = NTPTimestamp(sendTime).rawValue
        for k in 0..<8 { bytes[offset + k] = UInt8(truncatingIfNeeded: raw >> (56 - 8 * UInt64(k))) }
    }
}
