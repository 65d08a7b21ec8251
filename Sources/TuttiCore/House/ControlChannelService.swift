/// The coordinator's side of the house's control channel (its UDP "clock port"), as a pure
/// machine: a datagram and its arrival time in, what to send and what to tell the house
/// out. It answers time requests, takes unicast subscriptions, passes on room reports, and
/// says which peers may ask for retransmissions. The member's side is `CoordinatorSession`.
///
/// Only house members are served: a message without the tag of the member it names (its own
/// key's, or the house key's for member 0 while holders of the house key may enrol) is
/// counted and dropped (a time request so signed by another key is told, once a second at
/// most, that this house does not know it), and so is a member's message whose sequence
/// number was taken before (a replay). Answers are sealed with the asker's key. Time answers
/// carry a return-routability cookie; only a sender whose messages carry the right cookie for
/// its address (it receives there) gets a subscription, a room, an enrolment, the stream's
/// key, or retransmissions. No answer is larger than what asked for it.
///
/// `Peer` is an address: `SocketAddress` in the coordinator, an index in the tests'
/// in-memory house.
public struct ControlChannelService<Peer: Hashable & Sendable>: Sendable {
    public enum Action: Equatable, Sendable {
        /// A sealed message for `peer`.
        case send([UInt8], to: Peer)
        /// `target` asks to be sent stream `stream` (an SSRC of the house's) until `expiry`;
        /// the shell keeps it (in that stream's lease table, and in no other) and, if it can,
        /// sends `reply` to `peer` (`subscribed`).
        case subscribe(target: Peer, until: Int64, stream: UInt32, reply: [UInt8], to: Peer)
        /// A room's report, from `member`, for the house.
        case report(RoomReport, from: Peer, member: UInt16, at: Int64)
        /// A holder of the house key enrolled as `member`, named `name`.
        case enrolled(member: UInt16, name: String, from: Peer)
        /// The first message from a stranger (one not signed with the house key): say so.
        case firstStranger(Peer)
    }

    /// What was dropped, for the shell's summaries.
    public struct Counts: Equatable, Sendable {
        /// Not signed with the house key.
        public var unauthenticated = 0
        /// Signed, but without a valid cookie for its address, where one is needed.
        public var unverified = 0
        /// Signed, but with a sequence number taken before: replays.
        public var replayed = 0
        /// Reports of a room another than the member's own, and enrolments refused.
        public var refused = 0
        /// Malformed, or a message only the coordinator sends.
        public var rejected = 0
        public init() {}
    }

    /// A follower renews its lease every second; a longer one would outlive a follower that
    /// went away by more than the house needs.
    public static var longestLease: UInt16 { 60 }
    /// How long a peer that exchanged time may ask for retransmissions.
    public static var peerMemory: Int64 { 10_000_000_000 }

    private let keys: any MemberKeys
    private let cookies: ReturnRoutability
    /// The sequence numbers each member (but 0) sent.
    private var sequences: [UInt16: SequenceWindow] = [:]
    /// The SSRC of the stream a follower asks for (0: the default zone's; one the house
    /// does not have: the default zone's too).
    private let stream: @Sendable (UInt32) -> UInt32
    private let payloadType: UInt8
    /// An address's bytes (for its cookie), and the same address at another port.
    private let addressBytes: @Sendable (Peer) -> [UInt8]
    private let atPort: @Sendable (Peer, UInt16) -> Peer
    /// Who exchanged time lately (with a valid cookie), and when.
    private var peers: [Peer: Int64] = [:]
    /// The last "not paired" notice (one a second at most, to anyone).
    private var lastNotice: Int64?
    public private(set) var counts = Counts()

    /// `keys`: the members' keys; `cookieKey`: a secret of this run's for the cookies;
    /// `stream`: the SSRC of the stream asked for (one per zone), and `payloadType`, told to
    /// subscribers.
    public init(keys: any MemberKeys, cookieKey: any MessageAuthenticator, stream: @escaping @Sendable (UInt32) -> UInt32,
                payloadType: UInt8, addressBytes: @escaping @Sendable (Peer) -> [UInt8],
                atPort: @escaping @Sendable (Peer, UInt16) -> Peer) {
        self.keys = keys
        cookies = ReturnRoutability(key: cookieKey)
        self.stream = stream
        self.payloadType = payloadType
        self.addressBytes = addressBytes
        self.atPort = atPort
    }

    /// A house of one key (`OneKey`: its holders are all member 0).
    public init(key: any MessageAuthenticator, cookieKey: any MessageAuthenticator, stream: @escaping @Sendable (UInt32) -> UInt32,
                payloadType: UInt8, addressBytes: @escaping @Sendable (Peer) -> [UInt8],
                atPort: @escaping @Sendable (Peer, UInt16) -> Peer) {
        self.init(keys: OneKey(key), cookieKey: cookieKey, stream: stream, payloadType: payloadType, addressBytes: addressBytes,
                  atPort: atPort)
    }

    /// A datagram from `peer`, received at `t2` (the kernel's stamp). Time answers are
    /// stamped with `clock` as they are sealed.
    public mutating func receive(_ bytes: [UInt8], from peer: Peer, at t2: Int64, clock: some MonotonicClock) -> [Action] {
        let opened: ControlMessage.Opened
        let keys = self.keys
        // The key the message was checked with: its answers are sealed with the same (the
        // member may be revoked on another thread meanwhile).
        var checkedWith: (any MessageAuthenticator)?
        do {
            opened = try ControlMessage.open(bytes) { member in
                checkedWith = keys.clockKey(member: member)
                return checkedWith
            }
        } catch .unauthenticated {
            counts.unauthenticated += 1
            var actions: [Action] = counts.unauthenticated == 1 ? [.firstStranger(peer)] : []
            // A follower of another house (or none, or a revoked member): say so, no larger
            // than its request.
            if bytes.count >= 64, bytes[5] == 1, lastNotice.map({ t2 - $0 >= 1_000_000_000 }) ?? true {
                lastNotice = t2
                actions.append(.send(ControlMessage.notPaired.seal(stamp: 0, with: OneKey.unsigned), to: peer))
            }
            return actions
        } catch {
            counts.rejected += 1
            return []
        }
        let member = opened.member
        // Unsigned (a "not paired" notice): none of the coordinator's business.
        guard let key = checkedWith else {
            counts.rejected += 1
            return []
        }
        // A member numbers what it sends after its first answer (time requests are not
        // numbered: a replayed one earns its sender nothing).
        if member != 0, !opened.message.isTimeRequest {
            guard sequences[member, default: SequenceWindow()].take(opened.sequence) else {
                counts.replayed += 1
                return []
            }
        }
        if member != 0 { keys.heard(member: member, at: t2) }
        let (verified, currentCookie) = cookies.check(opened.stamp, for: addressBytes(peer), at: t2)
        if verified { remember(peer, at: t2) }
        /// An answer to the asker, sealed with its key, stamped now, with the stream key's generation.
        func answer(_ message: ControlMessage, stamp: Int64? = nil) -> [UInt8] {
            message.seal(stamp: NTPTimestamp(nanoseconds: stamp ?? clock.nanosecondsNow()).rawValue, member: member,
                         sequence: UInt64(keys.streamGeneration), with: key)
        }
        switch opened.message {
        case let .timeRequest(originate):
            let t3 = clock.nanosecondsNow()
            let reply = ControlMessage.timeResponse(
                originate: originate, receive: NTPTimestamp(nanoseconds: t2), transmit: NTPTimestamp(nanoseconds: t3),
                cookie: currentCookie)
            return [.send(answer(reply, stamp: t3), to: peer)]
        case .subscribe, .roomReport, .enroll, .keyRequest:
            guard verified else {
                counts.unverified += 1
                return []
            }
        case .timeResponse, .subscribed, .roomSettings, .epochEnd, .notPaired, .enrolled, .streamKey, .probe:
            counts.rejected += 1
            return []
        }
        switch opened.message {
        case let .subscribe(port, lease, wanted):
            let target = port == 0 ? peer : atPort(peer, port)
            let expiry = t2 + Int64(min(lease, Self.longestLease)) * 1_000_000_000
            let ssrc = stream(wanted)
            let reply = answer(.subscribed(ssrc: ssrc, payloadType: payloadType))
            return [.subscribe(target: target, until: expiry, stream: ssrc, reply: reply, to: peer)]
        case let .roomReport(report):
            guard keys.mayReport(member: member, room: report.name) else {
                counts.refused += 1
                return []
            }
            return [.report(report, from: peer, member: member, at: t2)]
        case let .enroll(nonce, name):
            guard member == 0, let (id, sealed) = keys.enroll(name: name, at: t2) else {
                counts.refused += 1
                return []
            }
            // The house first learns who the peer is now (what it sends the peer from now on
            // is sealed for the new member), then the peer.
            return [.enrolled(member: id, name: name, from: peer),
                    .send(answer(.enrolled(nonce: nonce, member: id, sealed: sealed)), to: peer)]
        case let .keyRequest(held):
            keys.holds(member: member, generation: held, at: t2)
            guard let (generation, sealed) = keys.streamKey(for: member), generation != held else { return [] }
            return [.send(answer(.streamKey(generation: generation, sealed: sealed)), to: peer)]
        default:
            return []
        }
    }

    /// Whether `peer` may ask for retransmissions at `now`: it exchanged time, with a valid
    /// cookie, within `peerMemory` (it receives at its address).
    public func admitsFeedback(from peer: Peer, at now: Int64) -> Bool {
        guard let seen = peers[peer] else { return false }
        return now - seen < Self.peerMemory
    }

    /// A message the shell opened that was not the house's (an NACK's SRTCP that failed).
    public mutating func countUnauthenticated() {
        counts.unauthenticated += 1
    }

    private mutating func remember(_ peer: Peer, at now: Int64) {
        if peers[peer] == nil, peers.count >= 4_096 {
            peers = peers.filter { now - $0.value < Self.peerMemory }
            if peers.count >= 4_096 { return }
        }
        peers[peer] = now
    }
}
