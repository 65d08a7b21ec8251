import Synchronization
import TuttiCore
import TuttiNet

/// Serves the shared clock on the coordinator's UDP clock port: answers time requests
/// with receive and transmit times, and records unicast subscriptions.
final class ClockServer: @unchecked Sendable {
    private let socket: UDPSocket
    private let clock: SystemClock
    private let ssrc: UInt32
    private let stopFlag: StopFlag
    let subscribers = Mutex(LeaseTable<SocketAddress>())
    let rejected = Atomic<Int>(0)
    /// Called on this service's thread with every room report, its sender and arrival time.
    var onReport: (@Sendable (RoomReport, SocketAddress, Int64) -> Void)?
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
            let message: ControlMessage
            do {
                message = try ControlMessage.decode(bytes)
            } catch {
                rejected.add(1, ordering: .relaxed)
                continue
            }
            switch message {
            case let .timeRequest(originate):
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
}
