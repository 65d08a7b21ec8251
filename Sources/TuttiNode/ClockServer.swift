import Synchronization
import TuttiCore
import TuttiNet

/// Serves the shared clock on the coordinator's UDP clock port: answers time requests
/// with receive and transmit times, records unicast subscriptions, and answers the
/// followers' retransmission requests (RFC 4585 NACKs) with RFC 4588 retransmissions, by
/// unicast to the asker: only to peers that have exchanged time in the last 10 s.
final class ClockServer: @unchecked Sendable {
    private let socket: UDPSocket
    private let clock: SystemClock
    private let ssrc: UInt32
    private let stopFlag: StopFlag
    let subscribers = Mutex(LeaseTable<SocketAddress>())
    let rejected = Atomic<Int>(0)
    /// Called on this service's thread with every room report, its sender and arrival time.
    var onReport: (@Sendable (RoomReport, SocketAddress, Int64) -> Void)?
    /// The packets sent lately (recorded by the sender's thread), for peers that ask again.
    private let retransmitter: Mutex<Retransmitter<SocketAddress>>
    /// NACKs from addresses that have not exchanged time lately, refused.
    private var refusedRequests = 0
    private var reported = Retransmitter<SocketAddress>.Statistics()
    private var nextSummary: Int64 = 0
    /// Who exchanged time lately, and when (this service's thread only).
    private var peers: [SocketAddress: Int64] = [:]
    private let peerMemory: Int64 = 10_000_000_000
    private let log = Log("coordinator")

    init(socket: UDPSocket, clock: SystemClock, ssrc: UInt32, stopFlag: StopFlag) {
        self.socket = socket
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
            let message: ControlMessage
            do {
                message = try ControlMessage.decode(bytes)
            } catch {
                rejected.add(1, ordering: .relaxed)
                continue
            }
            switch message {
            case let .timeRequest(originate):
                remember(from, at: t2)
                let t3 = clock.nanosecondsNow()
                let reply = ControlMessage.timeResponse(
                    originate: originate, receive: NTPTimestamp(nanoseconds: t2), transmit: NTPTimestamp(nanoseconds: t3))
                try? socket.send(reply.encode(), to: from)
            case let .subscribe(port, lease):
                let target = SocketAddress(address: from.address, port: port == 0 ? from.port : port)
                let expiry = t2 + Int64(lease) * 1_000_000_000
                let accepted = subscribers.withLock { table in
                    let isNew = !table.active(now: t2).contains(target)
                    let ok = table.renew(target, until: expiry, now: t2)
                    if ok && isNew && lease > 0 { log.info("unicast subscriber \(target)") }
                    return ok
                }
                if accepted {
                    try? socket.send(ControlMessage.subscribed(ssrc: ssrc, payloadType: RTPPacket.defaultPayloadType).encode(), to: from)
                } else {
                    log.warning("subscription table full; refusing \(target)")
                }
            case let .roomReport(report):
                onReport?(report, from, t2)
            case .timeResponse, .subscribed, .roomSettings, .epochEnd:
                rejected.add(1, ordering: .relaxed)
            }
        }
    }

    /// Resends what a known peer asks for, to that peer.
    private func answer(_ bytes: [UInt8], from: SocketAddress, at now: Int64) {
        guard let seen = peers[from], now - seen < peerMemory, let nack = try? GenericNACK.decode(bytes) else {
            refusedRequests += 1
            return
        }
        for packet in retransmitter.withLock({ $0.answer(nack, from: from, now: now) }) {
            try? socket.send(packet.encode(), to: from)
        }
    }

    /// Every 10 s, when followers asked for packets again: how many, and what came of it.
    private func summarize() {
        let now = clock.nanosecondsNow()
        guard now >= nextSummary else { return }
        nextSummary = now + 10_000_000_000
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
