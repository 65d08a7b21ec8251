/// The room report on the clock port: fixed-size big-endian fields, then the name, then the
/// fields added since (the holes, the concealments, the headroom, then the recoveries'
/// headroom; docs/protocol.md has the table). Every
/// number is an integer of a set width, so whatever a sender puts there converts without a
/// trap; figures out of a field's range are clamped when encoded, and a report that does not
/// read whole is refused. A report without the added fields (an older follower's) reads
/// them as absent; bytes after them (a newer follower's) are left unread.
extension RoomReport {
    /// The states a room may report, by their codes (docs/protocol.md).
    static let stateCodes: [RoomState] = [.acquiringClock, .waiting, .playing]
    /// Every field but the name and its length: 80 bytes.
    static let fixedSize = 80
    static let longestName = 255
    /// The fields after the name: holes and concealments, 4 bytes each; then the headroom
    /// and the recoveries' headroom (µs, signed; the least Int32 when there is none), 4 bytes
    /// each. (Not a flag: an older coordinator refuses a report with flags it does not know.)
    static let addedSize = 8
    static let headroomSize = 4

    func encodeBinary(into out: inout [UInt8]) {
        let name = Array(name.utf8.prefix(Self.longestName))
        out.append((interrupted ? 1 : 0) | (epoch == nil ? 0 : 2))
        out.append(UInt8(Self.stateCodes.firstIndex(of: state) ?? 1))
        out.appendBigEndian(UInt64(bitPattern: Self.clamp(clockOffsetMicroseconds * 1_000, Int64.self)))
        out.appendBigEndian(Self.clamp(clockUncertaintyMicroseconds * 1_000, UInt32.self))
        out.appendBigEndian(Self.clamp(roundTripMicroseconds * 1_000, UInt32.self))
        out.appendBigEndian(Self.clamp(Double(bufferedPackets), UInt16.self))
        out.appendBigEndian(Self.clamp(outputLatencyMilliseconds * 1_000, UInt32.self))
        for count in [packetsReceived, packetsLost, packetsRecovered, framesConcealed, packetsLate] {
            out.appendBigEndian(Self.clamp(Double(count), UInt32.self))
        }
        out.appendBigEndian(UInt32(bitPattern: Self.clamp(timingErrorMicroseconds * 1_000, Int32.self)))
        out.appendBigEndian(settingsVersion)
        out.appendBigEndian(epoch ?? 0)
        out.appendBigEndian(Self.clamp(outputDelayMilliseconds * 1_000, UInt32.self))
        for count in [packetsMissed, packetsRetransmitted, steps, slews, outages] {
            out.appendBigEndian(Self.clamp(Double(count ?? 0), UInt32.self))
        }
        out.append(UInt8(name.count))
        out += name
        out.appendBigEndian(Self.clamp(Double(holes ?? 0), UInt32.self))
        out.appendBigEndian(Self.clamp(Double(concealments ?? 0), UInt32.self))
        for headroom in [headroomMilliseconds, recoveryHeadroomMilliseconds] {
            out.appendBigEndian(UInt32(bitPattern: headroom.map { max(Self.clamp($0 * 1_000, Int32.self), Int32.min + 1) } ?? Int32.min))
        }
    }

    static func decodeBinary(_ r: inout ByteReader) throws(PacketError) -> RoomReport {
        guard r.remaining >= fixedSize + 2 else { throw .badPayload("room report too short") }
        let flags = try r.u8()
        let code = Int(try r.u8())
        guard flags & ~3 == 0, code < stateCodes.count else { throw .badPayload("room report's flags or state unknown") }
        var report = RoomReport(name: "", state: stateCodes[code], interrupted: flags & 1 != 0)
        report.clockOffsetMicroseconds = Double(Int64(bitPattern: try r.u64())) / 1_000
        report.clockUncertaintyMicroseconds = Double(try r.u32()) / 1_000
        report.roundTripMicroseconds = Double(try r.u32()) / 1_000
        report.bufferedPackets = Int(try r.u16())
        report.outputLatencyMilliseconds = Double(try r.u32()) / 1_000
        report.packetsReceived = Int(try r.u32())
        report.packetsLost = Int(try r.u32())
        report.packetsRecovered = Int(try r.u32())
        report.framesConcealed = Int(try r.u32())
        report.packetsLate = Int(try r.u32())
        report.timingErrorMicroseconds = Double(Int32(bitPattern: try r.u32())) / 1_000
        report.settingsVersion = try r.u32()
        let epoch = try r.u32()
        report.epoch = flags & 2 != 0 ? epoch : nil
        report.outputDelayMilliseconds = Double(try r.u32()) / 1_000
        report.packetsMissed = Int(try r.u32())
        report.packetsRetransmitted = Int(try r.u32())
        report.steps = Int(try r.u32())
        report.slews = Int(try r.u32())
        report.outages = Int(try r.u32())
        let length = Int(try r.u8())
        // What follows the name: nothing (a follower from before the holes), the holes and
        // concealments, then the headroom, then the recoveries' headroom and whatever a newer
        // follower adds.
        let tail = r.remaining - length
        guard tail == 0 || tail == Self.addedSize || tail == Self.addedSize + Self.headroomSize
            || tail >= Self.addedSize + 2 * Self.headroomSize else {
            throw .badPayload("room report's name is not \(length) bytes")
        }
        let bytes = r.bytes[r.offset..<(r.offset + length)]
        try r.skip(length)
        if r.remaining >= Self.addedSize {
            report.holes = Int(try r.u32())
            report.concealments = Int(try r.u32())
            if r.remaining >= Self.headroomSize {
                report.headroomMilliseconds = Self.headroom(try r.u32())
                if r.remaining >= Self.headroomSize { report.recoveryHeadroomMilliseconds = Self.headroom(try r.u32()) }
            }
        }
        guard let name = String(validating: bytes, as: UTF8.self), isValidName(name) else {
            throw .badPayload("room report's name is not UTF-8, or blank, too long or has control characters")
        }
        report.name = name
        return report
    }

    /// A headroom field's milliseconds (the least Int32: none).
    static func headroom(_ field: UInt32) -> Double? {
        let microseconds = Int32(bitPattern: field)
        return microseconds == Int32.min ? nil : Double(microseconds) / 1_000
    }

    /// `value` rounded into `T`'s range (NaN as 0).
    static func clamp<T: FixedWidthInteger>(_ value: Double, _: T.Type) -> T {
        guard value == value else { return 0 }
        if value <= Double(T.min) { return T.min }
        if value >= Double(T.max) { return T.max }
        return T(value.rounded())
    }
}
