/// The coordinator's side of the house's control channel (its UDP "clock port"), as a pure
/// machine: a datagram and its arrival time in, what to send and what to tell the house
/// out. It answers time requests, takes unicast subscriptions, passes on room reports, and
/// says which peers may ask for retransmissions. The member's side is `CoordinatorSession`.
///
/// Only house members are served: a message without the house key's tag is counted and
/// dropped (a time request so signed by another key is told, once a second at most, that
/// this house does not know it). Time answers carry a return-routability cookie; only a
/// sender whose messages carry the right cookie for its address (it receives there) gets a
/// subscription, a room, or retransmissions. No answer is larger than what asked for it.
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
        /// A room's report, for the house.
        case report(RoomReport, from: Peer, at: Int64)
        /// The first message from a stranger (one not signed with the house key): say so.
        case firstStranger(Peer)
    }

    /// What was dropped, for the shell's summaries.
    public struct Counts: Equatable, Sendable {
        /// Not signed with the house key.
        public var unauthenticated = 0
        /// Signed, but without a valid cookie for its address, where one is needed.
        public var unverified = 0
        /// Malformed, or a message only the coordinator sends.
        public var rejected = 0
        public init() {}
    }

    /// A follower renews its lease every second; a longer one would outlive a follower that
    /// went away by more than the house needs.
    public static var longestLease: UInt16 { 60 }
    /// How long a peer that exchanged time may ask for retransmissions.
    public static var peerMemory: Int64 { 10_000_000_000 }

    private let key: any MessageAuthenticator
    private let cookies: ReturnRoutability
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

    /// `key`: the house key's clock-port authenticator; `cookieKey`: a secret of this run's
    /// for the cookies; `stream`: the SSRC of the stream asked for (one per zone), and
    /// `payloadType`, told to subscribers.
    public init(key: any MessageAuthenticator, cookieKey: any MessageAuthenticator, stream: @escaping @Sendable (UInt32) -> UInt32,
                payloadType: UInt8, addressBytes: @escaping @Sendable (Peer) -> [UInt8],
                atPort: @escaping @Sendable (Peer, UInt16) -> Peer) {
        self.key = key
        cookies = ReturnRoutability(key: cookieKey)
        self.stream = stream
        self.payloadType = payloadType
        self.addressBytes = addressBytes
        self.atPort = atPort
    }

    /// A datagram from `peer`, received at `t2` (the kernel's stamp). Time answers are
    /// stamped with `clock` as they are sealed.
    public mutating func receive(_ bytes: [UInt8], from peer: Peer, at t2: Int64, clock: some MonotonicClock) -> [Action] {
        let message: ControlMessage, cookie: UInt64
        do {
            (message, cookie) = try ControlMessage.open(bytes, with: key)
        } catch .unauthenticated {
            counts.unauthenticated += 1
            var actions: [Action] = counts.unauthenticated == 1 ? [.firstStranger(peer)] : []
            // A follower of another house (or none): say so, no larger than its request.
            if bytes.count >= 64, bytes[5] == 1, lastNotice.map({ t2 - $0 >= 1_000_000_000 }) ?? true {
                lastNotice = t2
                actions.append(.send(ControlMessage.notPaired.seal(stamp: 0, with: key), to: peer))
            }
            return actions
        } catch {
            counts.rejected += 1
            return []
        }
        let (verified, currentCookie) = cookies.check(cookie, for: addressBytes(peer), at: t2)
        if verified { remember(peer, at: t2) }
        switch message {
        case let .timeRequest(originate):
            let t3 = clock.nanosecondsNow()
            let reply = ControlMessage.timeResponse(
                originate: originate, receive: NTPTimestamp(nanoseconds: t2), transmit: NTPTimestamp(nanoseconds: t3),
                cookie: currentCookie)
            return [.send(reply.seal(stamp: NTPTimestamp(nanoseconds: t3).rawValue, with: key), to: peer)]
        case let .subscribe(port, lease, wanted):
            guard verified else {
                counts.unverified += 1
                return []
            }
            let target = port == 0 ? peer : atPort(peer, port)
            let expiry = t2 + Int64(min(lease, Self.longestLease)) * 1_000_000_000
            let ssrc = stream(wanted)
            let reply = ControlMessage.subscribed(ssrc: ssrc, payloadType: payloadType)
                .seal(stamp: NTPTimestamp(nanoseconds: clock.nanosecondsNow()).rawValue, with: key)
            return [.subscribe(target: target, until: expiry, stream: ssrc, reply: reply, to: peer)]
        case let .roomReport(report):
            guard verified else {
                counts.unverified += 1
                return []
            }
            return [.report(report, from: peer, at: t2)]
        case .timeResponse, .subscribed, .roomSettings, .epochEnd, .notPaired:
            counts.rejected += 1
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
