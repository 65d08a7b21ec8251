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
    /// The retransmissions that answer a NACK from a peer, at a time.
    var retransmit: (@Sendable (GenericNACK, SocketAddress, Int64) -> [RTPPacket])?
    /// NACKs from addresses that have not exchanged time lately, refused.
    let refusedRequests = Atomic<Int>(0)
    /// Who exchanged time lately, and when (this service's thread only).
    private var peers: [SocketAddress: Int64] = [:]
    private let peerMemory: Int64 = 10_000_000_000
    private let log = Log("coordinator")

    init(socket: UDPSocket, clock: SystemClock, ssrc: UInt32, stopFlag: StopFlag) {
        self.socket = socket
        self.clock = clock
        self.ssrc = ssrc
        self.stopFlag = stopFlag
    }

    func run() {
        while !stopFlag.isSet {
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
            refusedRequests.add(1, ordering: .relaxed)
            return
        }
        for packet in retransmit?(nack, from, now) ?? [] {
            try? socket.send(packet.encode(), to: from)
        }
    }

    private func remember(_ peer: SocketAddress, at now: Int64) {
        if peers[peer] == nil, peers.count >= 4_096 {
            peers = peers.filter { now - $0.value < peerMemory }
            if peers.count >= 4_096 { return }
        }
        peers[peer] = now
    }
}
