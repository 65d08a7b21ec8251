/// Messages on the coordinator's clock port (UDP): time exchange and unicast subscription.
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

    public static let magic: [UInt8] = Array("TUTC".utf8)
    public static let version: UInt8 = 1
    /// The largest message; anything longer is not ours.
    public static let maximumSize = 64

    enum Kind: UInt8 {
        case timeRequest = 1, timeResponse = 2, subscribe = 3, subscribed = 4
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
        }
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> ControlMessage {
        guard bytes.count <= maximumSize else { throw .badMagic }
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
        }
    }
}
