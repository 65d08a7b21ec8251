import Synchronization
import TuttiCore
import TuttiNet
import TuttiSecurity

/// Serves the shared clock on the coordinator's UDP clock port: answers time requests
/// with receive and transmit times, records unicast subscriptions, and answers the
/// followers' retransmission requests (RFC 4585 NACKs) with RFC 4588 retransmissions, by
/// unicast to the asker.
///
/// Only house members are served: a message without the house key's tag is counted and
/// dropped (a time request so signed by another key is told, once a second at most, that
/// this house does not know it). Time answers carry a return-routability cookie; only a
/// sender whose messages carry the right cookie for its address (it receives there) gets a
/// subscription, a room, or retransmissions. No answer is larger than what asked for it.
final class ClockServer: @unchecked Sendable {
    private let socket: UDPSocket
    private let clock: SystemClock
    private let ssrc: UInt32
    private let stopFlag: StopFlag
    private let key: any MessageAuthenticator
    private let cookies = ReturnRoutability(key: HMACAuthenticator.random())
    /// Seals retransmissions like the stream (SRTP), and opens the followers' NACKs (SRTCP),
    /// when the stream is sealed.
    private let sealer: StreamSealer
    private var opener: SRTPContext?
    let subscribers = Mutex(LeaseTable<SocketAddress>())
    let rejected = Atomic<Int>(0)
    /// Messages dropped as not signed with the house key, or without a valid cookie (this
    /// service's thread only).
    private var unauthenticated = 0
    private var unverified = 0
    /// The last "not paired" notice (one a second at most, to anyone).
    private var lastNotice: Int64?
    /// Called on this service's thread with every room report, its sender and arrival time.
    var onReport: (@Sendable (RoomReport, SocketAddress, Int64) -> Void)?
    /// The packets sent lately (recorded by the sender's thread), for peers that ask again.
    private let retransmitter: Mutex<Retransmitter<SocketAddress>>
    /// NACKs from addresses that have not exchanged time lately, refused.
    private var refusedRequests = 0
    private var reportedStrangers = (0, 0)
    private var reported = Retransmitter<SocketAddress>.Statistics()
    private var nextSummary: Int64 = 0
    /// Who exchanged time lately, and when (this service's thread only).
    private var peers: [SocketAddress: Int64] = [:]
    private let peerMemory: Int64 = 10_000_000_000
    private let log = Log("coordinator")

    init(socket: UDPSocket, clock: SystemClock, ssrc: UInt32, stopFlag: StopFlag, key: any MessageAuthenticator,
         sealer: StreamSealer = StreamSealer(nil), stream: SRTPMasterKey? = nil) {
        self.socket = socket
        self.sealer = sealer
        // One replay window per follower that asks (their NACKs' SSRCs), as many as peers.
        opener = stream.map { SRTPContext($0, capacity: 512) }
        self.key = key
        self.clock = clock
        self.ssrc = ssrc
        self.stopFlag = stopFlag
        retransmitter = Mutex(Retransmitter(mediaSSRC: ssrc, ssrc: UInt32.random(in: 1...UInt32.max),
                                            initialSequence: UInt16.random(in: 0...UInt16.max)))
    }

    /// Keeps a packet just sent, for retransmission (any thread).
    func record(_ packet: RTPPacket) {
        retransmitter.withLock { $0.record(packet) }
    }

    func run() {
        while !stopFlag.isSet {
            summarize()
            let received: Datagram?
            do {
                received = try socket.receive(timeoutMilliseconds: 200)
            } catch {
                log.error("clock socket: \(error)")
                return
            }
            guard let received else { continue }
            let (bytes, from, t2) = (received.bytes, received.from, received.receivedAt)
            if GenericNACK.isFeedback(bytes) {
                answer(bytes, from: from, at: t2)
                continue
            }
            let message: ControlMessage, cookie: UInt64
            do {
                (message, cookie) = try ControlMessage.open(bytes, with: key)
            } catch .unauthenticated {
                unauthenticated += 1
                if unauthenticated == 1 {
                    log.warning("a message from \(from) not signed with this house's key: dropped (a stranger, or a follower of "
                                + "another house; such messages are counted every 10 s)")
                }
                // A follower of another house (or none): say so, no larger than its request.
                if bytes.count >= 64, bytes[5] == 1, lastNotice.map({ t2 - $0 >= 1_000_000_000 }) ?? true {
                    lastNotice = t2
                    try? socket.send(ControlMessage.notPaired.seal(stamp: 0, with: key), to: from)
                }
                continue
            } catch {
                rejected.add(1, ordering: .relaxed)
                continue
            }
            let (verified, currentCookie) = cookies.check(cookie, for: from.bytes, at: t2)
            if verified { remember(from, at: t2) }
            switch message {
            case let .timeRequest(originate):
                let t3 = clock.nanosecondsNow()
                let reply = ControlMessage.timeResponse(
                    originate: originate, receive: NTPTimestamp(nanoseconds: t2), transmit: NTPTimestamp(nanoseconds: t3),
                    cookie: currentCookie)
                try? socket.send(reply.seal(stamp: NTPTimestamp(nanoseconds: t3).rawValue, with: key), to: from)
            case let .subscribe(port, lease):
                guard verified else {
                    unverified += 1
                    continue
                }
                let target = SocketAddress(address: from.address, port: port == 0 ? from.port : port)
                let expiry = t2 + Int64(min(lease, Self.longestLease)) * 1_000_000_000
                let accepted = subscribers.withLock { table in
                    let isNew = !table.active(now: t2).contains(target)
                    let ok = table.renew(target, until: expiry, now: t2)
                    if ok && isNew && lease > 0 { log.info("unicast subscriber \(target)") }
                    return ok
                }
                if accepted {
                    let reply = ControlMessage.subscribed(ssrc: ssrc, payloadType: RTPPacket.defaultPayloadType)
                    try? socket.send(reply.seal(stamp: NTPTimestamp(nanoseconds: clock.nanosecondsNow()).rawValue, with: key), to: from)
                } else {
                    log.warning("subscription table full; refusing \(target)")
                }
            case let .roomReport(report):
                guard verified else {
                    unverified += 1
                    continue
                }
                onReport?(report, from, t2)
            case .timeResponse, .subscribed, .roomSettings, .epochEnd, .notPaired:
                rejected.add(1, ordering: .relaxed)
            }
        }
    }

    /// A follower renews its lease every second; a longer one would outlive a follower that
    /// went away by more than the house needs.
    static let longestLease: UInt16 = 60

    /// Resends what a known peer asks for, to that peer.
    private func answer(_ bytes: [UInt8], from: SocketAddress, at now: Int64) {
        guard let seen = peers[from], now - seen < peerMemory else {
            refusedRequests += 1
            return
        }
        var request = bytes
        if opener != nil {
            do {
                request = try opener!.unprotectRTCP(bytes)
            } catch {
                unauthenticated += 1
                return
            }
        }
        guard let nack = try? GenericNACK.decode(request) else {
            refusedRequests += 1
            return
        }
        for packet in retransmitter.withLock({ $0.answer(nack, from: from, now: now) }) {
            // Retransmissions carry no send time: they are no clock readings.
            try? socket.send(sealer.wire(packet) { CoordinatorTime(nanoseconds: 0) }, to: from)
        }
    }

    /// Every 10 s, when followers asked for packets again: how many, and what came of it; and
    /// how many messages from strangers were dropped.
    private func summarize() {
        let now = clock.nanosecondsNow()
        guard now >= nextSummary else { return }
        nextSummary = now + 10_000_000_000
        let strangers = (unauthenticated, unverified)
        if strangers != reportedStrangers {
            log.info("clock port in the last 10 s: \(strangers.0 - reportedStrangers.0) messages not signed with this house's key "
                     + "and \(strangers.1 - reportedStrangers.1) without a valid cookie dropped")
            reportedStrangers = strangers
        }
        let s = retransmitter.withLock { $0.statistics }
        guard s != reported || refusedRequests > 0 else { return }
        let asked = s.requested - reported.requested, resent = s.resent - reported.resent
        let gone = s.unknown - reported.unknown, refused = s.refused - reported.refused, foreign = s.foreign - reported.foreign
        log.info("retransmissions in the last 10 s: \(asked) packets asked for, \(resent) resent, \(gone) no longer held, "
                 + "\(refused) beyond a follower's rate, \(foreign) for another stream; \(refusedRequests) requests from strangers refused")
        reported = s
        refusedRequests = 0
    }

    private func remember(_ peer: SocketAddress, at now: Int64) {
        if peers[peer] == nil, peers.count >= 4_096 {
            peers = peers.filter { now - $0.value < peerMemory }
            if peers.count >= 4_096 { return }
        }
        peers[peer] = now
    }
}
