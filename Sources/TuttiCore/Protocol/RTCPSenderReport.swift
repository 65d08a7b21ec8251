/// An RTCP sender report (RFC 3550 §6.4.1) without report blocks, followed by an SDES
/// CNAME chunk (§6.5) to make a valid compound packet.
///
/// tutti's SR maps a stream timestamp to the coordinator time at which that sample is
/// presented (the RFC 7273 reading of the SR's NTP field with `a=mediaclk:direct=0`).
public struct RTCPSenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var ntpTime: NTPTimestamp
    public var rtpTimestamp: StreamTimestamp
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var cname: String

    public init(ssrc: UInt32, ntpTime: NTPTimestamp, rtpTimestamp: StreamTimestamp,
                packetCount: UInt32, octetCount: UInt32, cname: String) {
        self.ssrc = ssrc
        self.ntpTime = ntpTime
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.cname = cname
    }

    static let typeSR: UInt8 = 200
    static let typeSDES: UInt8 = 202

    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        out.append(0x80)  // V=2, P=0, RC=0
        out.append(Self.typeSR)
        out.appendBigEndian(UInt16(6))  // length in words minus one: 28 bytes
        out.appendBigEndian(ssrc)
        out.appendBigEndian(ntpTime.rawValue)
        out.appendBigEndian(rtpTimestamp.rawValue)
        out.appendBigEndian(packetCount)
        out.appendBigEndian(octetCount)

        let name = Array(cname.utf8.prefix(255))
        var chunk: [UInt8] = []
        chunk.appendBigEndian(ssrc)
        chunk.append(1)  // CNAME
        chunk.append(UInt8(name.count))
        chunk += name
        chunk.append(0)  // end of items
        while chunk.count % 4 != 0 { chunk.append(0) }
        out.append(0x81)  // V=2, SC=1
        out.append(Self.typeSDES)
        out.appendBigEndian(UInt16(chunk.count / 4))
        out += chunk
        return out
    }

    /// Parses the first SR in a compound packet; reads the CNAME when an SDES follows.
    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> RTCPSenderReport {
        var r = ByteReader(bytes)
        var report: RTCPSenderReport?
        while r.remaining >= 4 {
            let start = r.offset
            let b0 = try r.u8()
            guard b0 >> 6 == 2 else { throw .badVersion(b0 >> 6) }
            let type = try r.u8()
            let words = Int(try r.u16())
            let end = start + (words + 1) * 4
            try r.need(end - r.offset)
            if type == typeSR, report == nil, words >= 6 {
                let ssrc = try r.u32()
                let ntp = try r.u64()
                let rtp = try r.u32()
                let packets = try r.u32()
                let octets = try r.u32()
                report = RTCPSenderReport(ssrc: ssrc, ntpTime: NTPTimestamp(rawValue: ntp),
                                          rtpTimestamp: StreamTimestamp(rtp), packetCount: packets,
                                          octetCount: octets, cname: "")
            } else if type == typeSDES, report != nil, b0 & 0x1F >= 1 {
                _ = try r.u32()
                while r.offset < end {
                    let item = try r.u8()
                    if item == 0 { break }
                    let len = Int(try r.u8())
                    try r.need(len)
                    if item == 1 {
                        report?.cname = String(decoding: bytes[r.offset..<r.offset + len], as: UTF8.self)
                    }
                    r.offset += len
                }
            }
            r.offset = end
        }
        guard let report else { throw .unknownType(bytes.count > 1 ? bytes[1] : 0) }
        return report
    }
}
