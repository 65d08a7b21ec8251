import Synchronization
import TuttiCore
import TuttiNet

/// Where the coordinator's streams leave: its send socket, the clock each packet's send time
/// is read from, and the count of packets that reached at least one destination (the
/// metrics'). Every zone's outlet sends on the one wire.
final class StreamWire: Sendable {
    let socket: any DatagramSocket & Sendable
    let clock: any MonotonicClock
    /// Packets sent to at least one destination.
    let packetsSent = Atomic<Int>(0)
    private let log = Log("coordinator")

    init(socket: any DatagramSocket & Sendable, clock: any MonotonicClock) {
        self.socket = socket
        self.clock = clock
    }

    /// `bytes` to every one of `targets`; `counted`: a stream packet, counted when it reached one.
    func send(_ bytes: [UInt8], to targets: [SocketAddress], counted: Bool) {
        var sent = false
        for destination in targets {
            do {
                try socket.send(bytes, to: destination, wait: true)
                sent = true
            } catch {
                log.debug("send to \(destination): \(error)")
            }
        }
        if sent, counted { packetsSent.add(1, ordering: .relaxed) }
    }
}
