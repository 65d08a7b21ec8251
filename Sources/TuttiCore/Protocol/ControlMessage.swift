import Foundation

/// Messages on the coordinator's clock port (UDP): time exchange, unicast subscription, and
/// the rooms' control: their reports, their settings, and the end of an epoch.
///
/// Every message starts with an 8-byte header: magic `TUTC`, version, type, and two
/// reserved bytes. Times are NTP-format (see `NTPTimestamp`). Byte tables: docs/protocol.md.
public enum ControlMessage: Equatable, Sendable {
    /// Follower → coordinator. `originate` is the follower's local time (t1), echoed back.
    case timeRequest(originate: UInt64)
    /// Coordinator → follower: t1 echoed, t2 (receive) and t3 (transmit) in coordinator time.
    case timeResponse(originate: UInt64, receive: NTPTimestamp, transmit: NTPTimestamp)
    /// Follower → coordinator: send the audio stream by unicast to the sender's address at
    /// `rtpPort` for the next `leaseSeconds`. A lease of 0 cancels the subscription.
    case subscribe(rtpPort: UInt16, leaseSeconds: UInt16)
    /// Coordinator → follower: subscription accepted; `ssrc` of the stream and its payload type.
    case subscribed(ssrc: UInt32, payloadType: UInt8)
    /// Follower → coordinator, about once a second: who it is and how it plays (JSON).
    case roomReport(RoomReport)
    /// Coordinator → follower: apply these settings (volume 0 to 1, cubic), labelled `version`.
    case roomSettings(version: UInt32, volume: Double, muted: Bool, outputDelayMicroseconds: UInt32)
    /// Coordinator → follower: epoch `epoch` ends at `at` (coordinator time): silence from
    /// then on (a pause, a stop, the end of the queue).
    case epochEnd(epoch: UInt32, at: NTPTimestamp)

    public static let magic: [UInt8] = Array("TUTC".utf8)
    public static let version: UInt8 = 1
    /// The largest message; anything longer is not ours.
    public static let maximumSize = 1_200

    enum Kind: UInt8 {
        case timeRequest = 1, timeResponse = 2, subscribe = 3, subscribed = 4
        case roomReport = 5, roomSettings = 6, epochEnd = 7
    }

    public func encode() -> [UInt8] {
        var out = ControlMessage.magic
        out.append(ControlMessage.version)
        switch self {
        case let .timeRequest(originate):
            out += [Kind.timeRequest.rawValue, 0, 0]
            out.appendBigEndian(originate)
        case let .timeResponse(originate, receive, transmit):
            out += [Kind.timeResponse.rawValue, 0, 0]
            out.appendBigEndian(originate)
            out.appendBigEndian(receive.rawValue)
            out.appendBigEndian(transmit.rawValue)
        case let .subscribe(port, lease):
            out += [Kind.subscribe.rawValue, 0, 0]
            out.appendBigEndian(port)
            out.appendBigEndian(lease)
        case let .subscribed(ssrc, pt):
            out += [Kind.subscribed.rawValue, 0, 0]
            out.appendBigEndian(ssrc)
            out += [pt, 0, 0, 0]
        case let .roomReport(report):
            out += [Kind.roomReport.rawValue, 0, 0]
            out += (try? Self.json.encode(report)).map { Array($0) } ?? []
        case let .roomSettings(version, volume, muted, delay):
            out += [Kind.roomSettings.rawValue, 0, 0]
            out.appendBigEndian(version)
            out.appendBigEndian(UInt16((min(max(volume, 0), 1) * 10_000).rounded()))
            out += [muted ? 1 : 0, 0]
            out.appendBigEndian(delay)
        case let .epochEnd(epoch, at):
            out += [Kind.epochEnd.rawValue, 0, 0]
            out.appendBigEndian(epoch)
            out.appendBigEndian(at.rawValue)
        }
        return out
    }

    private static let json: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> ControlMessage {
        guard bytes.count <= maximumSize else { throw .oversized(bytes.count) }
        var r = ByteReader(bytes)
        try r.need(8)
        guard Array(bytes[0..<4]) == magic else { throw .badMagic }
        r.offset = 4
        let version = try r.u8()
        guard version == ControlMessage.version else { throw .badVersion(version) }
        let rawKind = try r.u8()
        try r.skip(2)
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownType(rawKind) }
        switch kind {
        case .timeRequest:
            return .timeRequest(originate: try r.u64())
        case .timeResponse:
            let t1 = try r.u64()
            let t2 = try r.u64()
            let t3 = try r.u64()
            return .timeResponse(originate: t1, receive: NTPTimestamp(rawValue: t2), transmit: NTPTimestamp(rawValue: t3))
        case .subscribe:
            let port = try r.u16()
            let lease = try r.u16()
            return .subscribe(rtpPort: port, leaseSeconds: lease)
        case .subscribed:
            let ssrc = try r.u32()
            let pt = try r.u8()
            try r.skip(3)
            return .subscribed(ssrc: ssrc, payloadType: pt)
        case .roomReport:
            guard JSONNesting.isShallow(bytes[8...]) else { throw .badPayload("room report nests too deeply") }
            guard let report = try? JSONDecoder().decode(RoomReport.self, from: Data(bytes[8...])) else {
                throw .badPayload("room report is not valid JSON")
            }
            guard RoomReport.isValidName(report.name) else { throw .badPayload("room report's name is blank, too long or has control characters") }
            return .roomReport(report)
        case .roomSettings:
            let version = try r.u32()
            let volume = Double(try r.u16()) / 10_000
            let muted = try r.u8()
            try r.skip(1)
            let delay = try r.u32()
            guard volume <= 1, muted <= 1 else { throw .badPayload("room settings out of range") }
            return .roomSettings(version: version, volume: volume, muted: muted == 1, outputDelayMicroseconds: delay)
        case .epochEnd:
            let epoch = try r.u32()
            return .epochEnd(epoch: epoch, at: NTPTimestamp(rawValue: try r.u64()))
        }
    }
}
