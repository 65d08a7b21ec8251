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
/// Every message starts with a 24-byte header: magic `TUTC`, version, type, the member (the
/// id of the member that sends it, or to which the coordinator sends it; 0: a holder of
/// the house key not yet enrolled), a stamp, and a sequence number. The stamp: from a
/// member, the coordinator's return-routability cookie (the newest it was given, 0 before
/// any); from the coordinator, its clock when it sent the message (NTP format), by which a
/// member tells a fresh message from a replayed one. The sequence number: from a member, one
/// more than its last (the coordinator takes each only once); from the coordinator, 0. It
/// ends with a 16-byte tag (`seal`) over everything before, made with the member's own key
/// (or the house key's, for member 0): a message without the right tag is dropped before
/// its body is read. Times are NTP-format (see `NTPTimestamp`). Byte tables: docs/protocol.md.
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
    /// A holder of the house key (member 0) → coordinator: make me a member, named `name`
    /// (a room's or a screen's name; at most 64 bytes). `nonce` is echoed in the answer.
    /// Padded to the answer's size.
    case enroll(nonce: UInt64, name: String)
    /// Coordinator → member 0: the new member's id, and its 32-byte secret sealed with a key
    /// of the house key (`MemberKey.sealForEnrollment`; only a holder of the house key opens it).
    case enrolled(nonce: UInt64, member: UInt16, sealed: [UInt8])
    /// Member → coordinator: the stream's key, please; this member holds `generation`
    /// (`noGeneration`: none). Padded to the answer's size.
    case keyRequest(generation: UInt32)
    /// Coordinator → member: the stream's SRTP master key and salt of `generation`, sealed
    /// with a key of the member's own (`MemberKey.sealStreamKey`).
    case streamKey(generation: UInt32, sealed: [UInt8])
    /// Coordinator → follower: play calibration probe `seed` (`CalibrationProbe`) at `level`
    /// (0 to 1, of full scale) from `at` (coordinator time), over whatever it plays, through
    /// the room's volume, as music at that time would be heard.
    case probe(seed: UInt32, level: Double, at: NTPTimestamp)

    /// A key request's "I hold none".
    public static let noGeneration: UInt32 = .max
    /// The longest name an enrolment carries.
    public static let maximumNameBytes = 64
    /// What `enrolled` and `streamKey` seal: a nonce, the secret, a tag.
    public static let sealedSecretSize = 12 + 32 + 16
    public static let sealedStreamKeySize = 12 + 28 + 16

    public static let magic: [UInt8] = Array("TUTC".utf8)
    public static let version: UInt8 = 3
    public static let headerSize = 24
    public static let tagSize = 16
    /// The largest message; anything longer is not ours.
    public static let maximumSize = 1_200

    enum Kind: UInt8 {
        case timeRequest = 1, timeResponse = 2, subscribe = 3, subscribed = 4
        case roomReport = 5, roomSettings = 6, epochEnd = 7, notPaired = 8
        case enroll = 9, enrolled = 10, keyRequest = 11, streamKey = 12, probe = 13
    }

    var isTimeRequest: Bool {
        if case .timeRequest = self { true } else { false }
    }

    /// A message opened: what it says, and its header's fields.
    public struct Opened: Equatable, Sendable {
        public var message: ControlMessage
        public var member: UInt16
        public var stamp: UInt64
        public var sequence: UInt64
    }

    /// The message, signed: header (with `member`, `stamp` and `sequence`), body, and the tag
    /// of both, made with `key` (the member's).
    public func seal(stamp: UInt64, member: UInt16 = 0, sequence: UInt64 = 0, with key: any MessageAuthenticator) -> [UInt8] {
        var out = encode(stamp: stamp, member: member, sequence: sequence)
        out += self == .notPaired ? [UInt8](repeating: 0, count: Self.tagSize) : key.tag(out[...])
        return out
    }

    /// The member a message names in its header (before it is opened: it says which key
    /// checks it), or nil when it is no message of ours.
    public static func member(of bytes: [UInt8]) -> UInt16? {
        guard bytes.count >= headerSize, bytes[0..<4].elementsEqual(magic), bytes[4] == version else { return nil }
        return UInt16(bytes[6]) << 8 | UInt16(bytes[7])
    }

    /// A signed message and its stamp, checked with `key` whatever member it names. Throws
    /// `.unauthenticated` when the tag does not check out (the body is not read);
    /// `.notPaired` is the one message taken unsigned.
    public static func open(_ bytes: [UInt8], with key: any MessageAuthenticator) throws(PacketError) -> (message: ControlMessage, stamp: UInt64) {
        let opened = try open(bytes) { _ in key }
        return (opened.message, opened.stamp)
    }

    /// A signed message, checked with the key of the member its header names (`key` answers
    /// nil for a member it does not know: the message is unauthenticated).
    public static func open(_ bytes: [UInt8], key: (UInt16) -> (any MessageAuthenticator)?) throws(PacketError) -> Opened {
        guard bytes.count <= maximumSize else { throw .oversized(bytes.count) }
        guard bytes.count >= headerSize + tagSize else { throw .truncated(needed: headerSize + tagSize, got: bytes.count) }
        let signed = Array(bytes[..<(bytes.count - tagSize)])
        try checkHeader(signed)
        if signed[5] != Kind.notPaired.rawValue {
            guard let key = key(UInt16(signed[6]) << 8 | UInt16(signed[7])),
                  key.verify(bytes[(bytes.count - tagSize)...], for: signed[...]) else { throw .unauthenticated }
        }
        return try decodeOpened(signed)
    }

    /// The header and body, unsigned (`seal` signs them).
    public func encode(stamp: UInt64 = 0, member: UInt16 = 0, sequence: UInt64 = 0) -> [UInt8] {
        var out = ControlMessage.magic
        out.append(ControlMessage.version)
        func header(_ kind: Kind) {
            out.append(kind.rawValue)
            out.appendBigEndian(member)
            out.appendBigEndian(stamp)
            out.appendBigEndian(sequence)
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
        case let .enroll(nonce, name):
            header(.enroll)
            out.appendBigEndian(nonce)
            let bytes = Array(name.utf8.prefix(Self.maximumNameBytes))
            out.append(UInt8(bytes.count))
            out += bytes
            // As large as the answer: 8 + 2 + 1 + sealed.
            out += [UInt8](repeating: 0, count: max(0, 8 + 2 + 1 + Self.sealedSecretSize - 9 - bytes.count))
        case let .enrolled(nonce, member, sealed):
            header(.enrolled)
            out.appendBigEndian(nonce)
            out.appendBigEndian(member)
            out.append(UInt8(min(sealed.count, 255)))
            out += sealed.prefix(255)
        case let .keyRequest(generation):
            header(.keyRequest)
            out.appendBigEndian(generation)
            out += [UInt8](repeating: 0, count: 1 + Self.sealedStreamKeySize)
        case let .streamKey(generation, sealed):
            header(.streamKey)
            out.appendBigEndian(generation)
            out.append(UInt8(min(sealed.count, 255)))
            out += sealed.prefix(255)
        case let .probe(seed, level, at):
            header(.probe)
            out.appendBigEndian(seed)
            out.appendBigEndian(UInt16((min(max(level, 0), 1) * 10_000).rounded()))
            out += [0, 0]
            out.appendBigEndian(at.rawValue)
        }
        return out
    }

    private static func checkHeader(_ bytes: [UInt8]) throws(PacketError) {
        guard bytes.count >= headerSize else { throw .truncated(needed: headerSize, got: bytes.count) }
        guard bytes[0..<4].elementsEqual(magic) else { throw .badMagic }
        guard bytes[4] == ControlMessage.version else { throw .badVersion(bytes[4]) }
        guard Kind(rawValue: bytes[5]) != nil else { throw .unknownType(bytes[5]) }
    }

    /// Reads an unsigned message (header and body, as `encode` makes it) and its stamp.
    public static func decode(_ bytes: [UInt8]) throws(PacketError) -> (message: ControlMessage, stamp: UInt64) {
        let opened = try decodeOpened(bytes)
        return (opened.message, opened.stamp)
    }

    /// Reads an unsigned message and its header's fields.
    public static func decodeOpened(_ bytes: [UInt8]) throws(PacketError) -> Opened {
        let message = try decodeBody(bytes)
        return Opened(message: message, member: UInt16(bytes[6]) << 8 | UInt16(bytes[7]),
                      stamp: bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }, sequence: bytes[16..<24].reduce(0) { $0 << 8 | UInt64($1) })
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
        case .enroll:
            let nonce = try r.u64()
            let count = Int(try r.u8())
            guard count <= Self.maximumNameBytes else { throw .badPayload("enrolment name over \(Self.maximumNameBytes) bytes") }
            let name = try r.bytes(count)
            guard let text = String(validating: name, as: UTF8.self) else { throw .badPayload("enrolment name not UTF-8") }
            return .enroll(nonce: nonce, name: text)
        case .enrolled:
            let nonce = try r.u64()
            let member = try r.u16()
            let sealed = try r.bytes(Int(try r.u8()))
            return .enrolled(nonce: nonce, member: member, sealed: sealed)
        case .keyRequest:
            return .keyRequest(generation: try r.u32())
        case .streamKey:
            let generation = try r.u32()
            let sealed = try r.bytes(Int(try r.u8()))
            return .streamKey(generation: generation, sealed: sealed)
        case .probe:
            let seed = try r.u32()
            let level = Double(try r.u16()) / 10_000
            try r.skip(2)
            guard level <= 1 else { throw .badPayload("probe level out of range") }
            return .probe(seed: seed, level: level, at: NTPTimestamp(rawValue: try r.u64()))
        }
    }
}
