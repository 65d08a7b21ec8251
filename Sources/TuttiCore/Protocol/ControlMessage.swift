/// Signs and checks the clock port's messages with a key of the house (TuttiSecurity's
/// HMAC-SHA256; tests may use a fake).
public protocol MessageAuthenticator: Sendable {
    /// A `ControlMessage.tagSize`-byte tag over `bytes`.
    func tag(_ bytes: ArraySlice<UInt8>) -> [UInt8]
    /// Whether `tag` is the tag of `bytes`, compared in constant time.
    func verify(_ tag: ArraySlice<UInt8>, for bytes: ArraySlice<UInt8>) -> Bool
}

/// Messages on the coordinator's clock port (UDP): time exchange, unicast subscription, and
/// the rooms' control: their reports, their settings, and the end of an epoch.
///
/// Every message starts with a 16-byte header: magic `TUTC`, version, type, two reserved
/// bytes, and a stamp: from a follower, the coordinator's return-routability cookie (the
/// newest it was given, 0 before any); from the coordinator, its clock when it sent the
/// message (NTP format), by which a follower tells a fresh message from a replayed one. It
/// ends with a 16-byte tag (`seal`) over everything before, made with the house key: a
/// message without the right tag is dropped before its body is read. Times are NTP-format
/// (see `NTPTimestamp`). Byte tables: docs/protocol.md.
public enum ControlMessage: Equatable, Sendable {
    /// Follower → coordinator. `originate` is the follower's local time (t1), echoed back.
    /// Padded to the answer's size: an answer is never larger than what asked for it.
    case timeRequest(originate: UInt64)
    /// Coordinator → follower: t1 echoed, t2 (receive) and t3 (transmit) in coordinator time,
    /// and a cookie for the asker's address, which its later messages carry (they prove that
    /// the follower receives at the address it sends from).
    case timeResponse(originate: UInt64, receive: NTPTimestamp, transmit: NTPTimestamp, cookie: UInt64)
    /// Follower → coordinator: send the audio stream by unicast to the sender's address at
    /// `rtpPort` for the next `leaseSeconds`. A lease of 0 cancels the subscription.
    /// `stream`: the SSRC of the zone's stream the room settings named (0: the default
    /// zone's).
    case subscribe(rtpPort: UInt16, leaseSeconds: UInt16, stream: UInt32 = 0)
    /// Coordinator → follower: subscription accepted; `ssrc` of the stream and its payload type.
    case subscribed(ssrc: UInt32, payloadType: UInt8)
    /// Follower → coordinator, about once a second: who it is and how it plays
    /// (fixed binary fields, then its name; `RoomReport+Wire`).
    case roomReport(RoomReport)
    /// Coordinator → follower: apply these settings (volume 0 to 1, cubic), labelled `version`.
    /// `stream`: the SSRC of the stream of the room's zone, the only one it is to play
    /// (0: any, in a house of one zone). A message without the field names none.
    case roomSettings(version: UInt32, volume: Double, muted: Bool, outputDelayMicroseconds: UInt32, stream: UInt32 = 0)
    /// Coordinator → follower: epoch `epoch` ends at `at` (coordinator time): silence from
    /// then on (a pause, a stop, the end of the queue).
    case epochEnd(epoch: UInt32, at: NTPTimestamp)
    /// Coordinator → a sender whose time request was not signed with the house key: this
    /// house does not know it (pair it). Unsigned, so it proves nothing: a follower only says so.
    case notPaired

    public static let magic: [UInt8] = Array("TUTC".utf8)
    public static let version: UInt8 = 2
    public static let headerSize = 16
    public static let tagSize = 16
    /// The largest message; anything longer is not ours.
    public static let maximumSize = 1_200

    enum Kind: UInt8 {
        case timeRequest = 1, timeResponse = 2, subscribe = 3, subscribed = 4
        case roomReport = 5, roomSettings = 6, epochEnd = 7, notPaired = 8
    }

    /// The message, signed: header (with `stamp`), body, and the tag of both.
    public func seal(stamp: UInt64, with key: any MessageAuthenticator) -> [UInt8] {
        var out = encode(stamp: stamp)
        out += self == .notPaired ? [UInt8](repeating: 0, count: Self.tagSize) : key.tag(out[...])
        return out
    }

    /// A signed message and its stamp. Throws `.unauthenticated` when the tag does not check
    /// out (the body is not read); `.notPaired` is the one message taken unsigned.
    public static func open(_ bytes: [UInt8], with key: any MessageAuthenticator) throws(PacketError) -> (message: ControlMessage, stamp: UInt64) {
        guard bytes.count <= maximumSize else { throw .oversized(bytes.count) }
        guard bytes.count >= headerSize + tagSize else { throw .truncated(needed: headerSize + tagSize, got: bytes.count) }
        let signed = Array(bytes[..<(bytes.count - tagSize)])
        try checkHeader(signed)
        if signed[5] != Kind.notPaired.rawValue {
            guard key.verify(bytes[(bytes.count - tagSize)...], for: signed[...]) else { throw .unauthenticated }
        }
        return try decode(signed)
    }

    /// The header and body, unsigned (`seal` signs them).
    public func encode(stamp: UInt64 = 0) -> [UInt8] {
        var out = ControlMessage.magic
        out.append(ControlMessage.version)
        func header(_ kind: Kind) {
            out += [kind.rawValue, 0, 0]
            out.appendBigEndian(stamp)
        }
        switch self {
        case let .timeRequest(originate):
            header(.timeRequest)
            out.appendBigEndian(originate)
            out += [UInt8](repeating: 0, count: 24)
        case let .timeResponse(originate, receive, transmit, cookie):
            header(.timeResponse)
            out.appendBigEndian(originate)
            out.appendBigEndian(receive.rawValue)
            out.appendBigEndian(transmit.rawValue)
            out.appendBigEndian(cookie)
        case let .subscribe(port, lease, stream):
            header(.subscribe)
            out.appendBigEndian(port)
            out.appendBigEndian(lease)
            out.appendBigEndian(stream)
        case let .subscribed(ssrc, pt):
            header(.subscribed)
            out.appendBigEndian(ssrc)
            out += [pt, 0, 0, 0]
        case let .roomReport(report):
            header(.roomReport)
            report.encodeBinary(into: &out)
        case let .roomSettings(version, volume, muted, delay, stream):
            header(.roomSettings)
            out.appendBigEndian(version)
            out.appendBigEndian(UInt16((min(max(volume, 0), 1) * 10_000).rounded()))
            out += [muted ? 1 : 0, 0]
            out.appendBigEndian(delay)
            out.appendBigEndian(stream)
        case let .epochEnd(epoch, at):
            header(.epochEnd)
            out.appendBigEndian(epoch)
            out.appendBigEndian(at.rawValue)
        case .notPaired:
            header(.notPaired)
        }
        return out
    }

    private static func checkHeader(_ bytes: [UInt8]) throws(PacketError) {
        guard bytes.count >= headerSize else { throw .truncated(needed: headerSize, got: bytes.count) }
        guard Array(bytes[0..<4]) == magic else { throw .badMagic }
        guard bytes[4] == ControlMessage.version else { throw .badVersion(bytes[4]) }
        guard Kind(rawValue: bytes[5]) != nil else { throw .unknownType(bytes[5]) }
    }

    /// Reads an unsigned message (header and body, as `encode` makes it) and its stamp.
    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> (message: ControlMessage, stamp: UInt64) {
        let message = try decodeBody(bytes)
        return (message, bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
    }

    private static func decodeBody(_ bytes: [UInt8]) throws(PacketError) -> ControlMessage {
        guard bytes.count <= maximumSize else { throw .oversized(bytes.count) }
        try checkHeader(bytes)
        let kind = Kind(rawValue: bytes[5])!
        var r = ByteReader(bytes, offset: headerSize)
        switch kind {
        case .timeRequest:
            let originate = try r.u64()
            try r.skip(24)
            return .timeRequest(originate: originate)
        case .timeResponse:
            let t1 = try r.u64()
            let t2 = try r.u64()
            let t3 = try r.u64()
            let cookie = try r.u64()
            return .timeResponse(originate: t1, receive: NTPTimestamp(rawValue: t2), transmit: NTPTimestamp(rawValue: t3), cookie: cookie)
        case .subscribe:
            let port = try r.u16()
            let lease = try r.u16()
            return .subscribe(rtpPort: port, leaseSeconds: lease, stream: try r.u32())
        case .subscribed:
            let ssrc = try r.u32()
            let pt = try r.u8()
            try r.skip(3)
            return .subscribed(ssrc: ssrc, payloadType: pt)
        case .roomReport:
            return .roomReport(try RoomReport.decodeBinary(&r))
        case .roomSettings:
            let version = try r.u32()
            let volume = Double(try r.u16()) / 10_000
            let muted = try r.u8()
            try r.skip(1)
            let delay = try r.u32()
            let stream = r.remaining >= 4 ? try r.u32() : 0
            guard volume <= 1, muted <= 1 else { throw .badPayload("room settings out of range") }
            return .roomSettings(version: version, volume: volume, muted: muted == 1, outputDelayMicroseconds: delay, stream: stream)
        case .epochEnd:
            let epoch = try r.u32()
            return .epochEnd(epoch: epoch, at: NTPTimestamp(rawValue: try r.u64()))
        case .notPaired:
            return .notPaired
        }
    }
}
