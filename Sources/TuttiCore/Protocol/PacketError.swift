/// Why a packet from the network was rejected. Each is counted and the packet dropped.
public enum PacketError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(needed: Int, got: Int)
    case badVersion(UInt8)
    case badMagic
    case unknownType(UInt8)
    case badExtension(String)
    case badPadding
    case unexpectedPayloadType(UInt8)
    case missingPresentationTime
    case badPayload(String)
    case oversized(Int)
    /// The message's tag does not check out with the house key: a stranger, or a follower
    /// paired with another house.
    case unauthenticated

    public var description: String {
        switch self {
        case let .truncated(needed, got): "truncated packet: needed \(needed) bytes, got \(got)"
        case let .badVersion(v): "unsupported protocol version \(v)"
        case .badMagic: "not a tutti packet (bad magic)"
        case let .unknownType(t): "unknown message type \(t)"
        case let .badExtension(why): "malformed RTP header extension: \(why)"
        case .badPadding: "RTP padding longer than the packet"
        case let .unexpectedPayloadType(pt): "unexpected RTP payload type \(pt)"
        case .missingPresentationTime: "RTP packet has no presentation-time extension"
        case let .badPayload(why): "malformed message: \(why)"
        case let .oversized(n): "message of \(n) bytes is longer than any tutti message"
        case .unauthenticated: "message not signed with this house's key"
        }
    }
}

/// Big-endian reads and writes over byte arrays, bounds-checked.
struct ByteReader {
    let bytes: [UInt8]
    var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func need(_ n: Int) throws(PacketError) {
        if remaining < n { throw .truncated(needed: offset + n, got: bytes.count) }
    }
    mutating func u8() throws(PacketError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() throws(PacketError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
    mutating func u32() throws(PacketError) -> UInt32 {
        try need(4)
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return v
    }
    mutating func u64() throws(PacketError) -> UInt64 {
        let hi = try u32()
        let lo = try u32()
        return UInt64(hi) << 32 | UInt64(lo)
    }
    mutating func bytes(_ n: Int) throws(PacketError) -> [UInt8] {
        try need(n)
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }
    mutating func skip(_ n: Int) throws(PacketError) {
        try need(n)
        offset += n
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ v: UInt16) {
        append(UInt8(v >> 8)); append(UInt8(v & 0xFF))
    }
    mutating func appendBigEndian(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8((v >> UInt32(shift)) & 0xFF)) }
    }
    mutating func appendBigEndian(_ v: UInt64) {
        appendBigEndian(UInt32(v >> 32)); appendBigEndian(UInt32(v & 0xFFFF_FFFF))
    }
}
