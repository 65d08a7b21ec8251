import Synchronization
import TuttiCore
import TuttiNet

/// Sends the rooms what the coordinator decides for them, on the clock port: their
/// settings, and the end of an epoch. Followers answer from the address their reports
/// come from.
final class RoomMessenger: Sendable {
    private let socket: UDPSocket
    private let clock: SystemClock
    private let key: any MessageAuthenticator
    private let addresses = Mutex<[String: SocketAddress]>([:])

    init(socket: UDPSocket, clock: SystemClock, key: any MessageAuthenticator) {
        self.socket = socket
        self.clock = clock
        self.key = key
    }

    /// Signed, stamped with the coordinator's clock now (a follower drops a stale one: a replay).
    private func seal(_ message: ControlMessage) -> [UInt8] {
        message.seal(stamp: NTPTimestamp(nanoseconds: clock.nanosecondsNow()).rawValue, with: key)
    }

    func remember(_ address: SocketAddress, for key: String) {
        addresses.withLock { $0[key] = address }
    }

    /// A room's settings, with the SSRC of the stream it is to play (0: any).
    func deliver(_ settings: RoomSettings, stream: UInt32, to key: String) {
        guard let address = addresses.withLock({ $0[key] }) else { return }
        let message = ControlMessage.roomSettings(
            version: settings.version, volume: settings.volume, muted: settings.muted,
            outputDelayMicroseconds: UInt32(max(0, min(settings.outputDelayMilliseconds * 1000, 4e9))), stream: stream)
        try? socket.send(seal(message), to: address)
    }

    /// `copies` datagrams to each room at once: one lost on a lossy path would leave the
    /// room playing past the cut (the follower takes the first; the others change nothing).
    func endEpoch(_ epoch: UInt32, at end: CoordinatorTime, rooms: [RoomRegistry.Room], copies: Int = 1) {
        let bytes = seal(.epochEnd(epoch: epoch, at: NTPTimestamp(end)))
        let targets = addresses.withLock { table in rooms.compactMap { table[$0.key] } }
        for _ in 0..<copies {
            for address in targets { try? socket.send(bytes, to: address) }
        }
    }
}
