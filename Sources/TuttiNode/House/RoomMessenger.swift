import Synchronization
import TuttiCore
import TuttiNet

/// Sends the rooms what the coordinator decides for them, on the clock port: their
/// settings, and the end of an epoch. Followers answer from the address their reports
/// come from.
final class RoomMessenger: Sendable {
    private let socket: UDPSocket
    private let addresses = Mutex<[String: SocketAddress]>([:])

    init(socket: UDPSocket) {
        self.socket = socket
    }

    func remember(_ address: SocketAddress, for key: String) {
        addresses.withLock { $0[key] = address }
    }

    func deliver(_ settings: RoomSettings, to key: String) {
        guard let address = addresses.withLock({ $0[key] }) else { return }
        let message = ControlMessage.roomSettings(
            version: settings.version, volume: settings.volume, muted: settings.muted,
            outputDelayMicroseconds: UInt32(max(0, min(settings.outputDelayMilliseconds * 1000, 4e9))))
        try? socket.send(message.encode(), to: address)
    }

    /// `copies` datagrams to each room at once: one lost on a lossy path would leave the
    /// room playing past the cut (the follower takes the first; the others change nothing).
    func endEpoch(_ epoch: UInt32, at end: CoordinatorTime, rooms: [RoomRegistry.Room], copies: Int = 1) {
        let bytes = ControlMessage.epochEnd(epoch: epoch, at: NTPTimestamp(end)).encode()
        let targets = addresses.withLock { table in rooms.compactMap { table[$0.key] } }
        for _ in 0..<copies {
            for address in targets { try? socket.send(bytes, to: address) }
        }
    }
}
