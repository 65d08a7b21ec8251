/// An RTCP generic NACK (RFC 4585 §6.2.1): a receiver names the RTP packets it is missing,
/// and the sender resends them (RFC 4588). Followers send these to the coordinator's clock
/// port, by unicast even when they receive the stream by multicast.
///
/// | offset | size | field |
/// | --- | --- | --- |
/// | 0 | 1 | `0x81`: V=2, P=0, FMT=1 (generic NACK) |
/// | 1 | 1 | packet type 205 (RTPFB) |
/// | 2 | 2 | length in 32-bit words − 1 (2 + the number of FCI entries) |
/// | 4 | 4 | SSRC of the packet's sender (the follower's own) |
/// | 8 | 4 | SSRC of the media source (the stream's) |
/// | 12 | 4n | FCI entries: PID (16 bits, a missing sequence number), BLP (16 bits: bit i set when PID + i + 1 is missing too) |
public struct GenericNACK: Equatable, Sendable {
    public static let packetType: UInt8 = 205
    public static let format: UInt8 = 1
    /// The most entries a NACK carries (each names up to 17 packets): 1,200 bytes at most.
    public static let maximumEntries = 297

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    /// The missing sequence numbers, in the order they were given (duplicates allowed).
    public var sequences: [SequenceNumber]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, sequences: [SequenceNumber]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.sequences = sequences
    }

    /// Whether a datagram looks like RTCP transport feedback (rather than RTP, or a tutti
    /// clock-port message).
    public static func isFeedback(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] >> 6 == 2 && bytes[1] == packetType
    }

    /// Encodes the sequences as few PID + BLP entries as they fit in (in order, each entry
    /// taking the following 16 numbers it can), at most `maximumEntries`.
    public func encode() -> [UInt8] {
        var entries: [(pid: UInt16, blp: UInt16)] = []
        for s in sequences {
            if let last = entries.last {
                let d = SequenceNumber(last.pid).distance(to: s)
                if d == 0 { continue }
                if d >= 1 && d <= 16 {
                    entries[entries.count - 1].blp |= UInt16(1) << UInt16(d - 1)
                    continue
                }
            }
            if entries.count == Self.maximumEntries { break }
            entries.append((s.rawValue, 0))
        }
        var out: [UInt8] = [0x80 | Self.format, Self.packetType]
        out.appendBigEndian(UInt16(2 + entries.count))
        out.appendBigEndian(senderSSRC)
        out.appendBigEndian(mediaSSRC)
        for e in entries {
            out.appendBigEndian(e.pid)
            out.appendBigEndian(e.blp)
        }
        return out
    }

    /// Decodes one generic NACK (the first packet of a compound one).
    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> GenericNACK {
        guard bytes.count <= ControlMessage.maximumSize else { throw .oversized(bytes.count) }
        var r = ByteReader(bytes)
        let b0 = try r.u8()
        guard b0 >> 6 == 2 else { throw .badVersion(b0 >> 6) }
        guard b0 & 0x1F == format else { throw .badPayload("RTCP feedback of format \(b0 & 0x1F), not a generic NACK") }
        let pt = try r.u8()
        guard pt == packetType else { throw .unknownType(pt) }
        let words = Int(try r.u16())
        guard words >= 2 else { throw .badPayload("RTCP feedback too short for its SSRCs") }
        try r.need(words * 4)
        let sender = try r.u32()
        let media = try r.u32()
        var sequences: [SequenceNumber] = []
        for _ in 0..<(words - 2) {
            let pid = SequenceNumber(try r.u16())
            let blp = try r.u16()
            sequences.append(pid)
            for bit in 0..<16 where blp & (1 << bit) != 0 {
                sequences.append(pid.advanced(by: Int64(bit + 1)))
            }
        }
        return GenericNACK(senderSSRC: sender, mediaSSRC: media, sequences: sequences)
    }
}
