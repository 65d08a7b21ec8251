import Synchronization
import TuttiCore
import TuttiNet

/// Sends the rooms what the coordinator decides for them, on the clock port: their
/// settings, the end of an epoch and calibration probes, each sealed with the key of the
/// member that speaks for the room (no other member can make them). Followers answer from
/// the address their reports come from. Each is one `sendto` that never waits (the house
/// actor calls it): a full send buffer drops the datagram, as the network may, and what
/// matters goes in several copies.
final class RoomMessenger: Sendable {
    private let socket: any DatagramSocket & Sendable
    private let clock: any MonotonicClock
    private let keys: any MemberKeys
    /// Each room's address, and the member that reported it.
    private let addresses = Mutex<[String: (address: SocketAddress, member: UInt16)]>([:])

    init(socket: any DatagramSocket & Sendable, clock: any MonotonicClock, keys: any MemberKeys) {
        self.socket = socket
        self.clock = clock
        self.keys = keys
    }

    /// Sealed for `member`, stamped with the coordinator's clock now (a follower drops a
    /// stale one: a replay); nil when the house no longer knows the member.
    private func seal(_ message: ControlMessage, for member: UInt16) -> [UInt8]? {
        guard let key = keys.clockKey(member: member) else { return nil }
        return message.seal(stamp: NTPTimestamp(nanoseconds: clock.nanosecondsNow()).rawValue, member: member,
                            sequence: UInt64(keys.streamGeneration), with: key)
    }

    func remember(_ address: SocketAddress, member: UInt16, for key: String) {
        addresses.withLock { $0[key] = (address, member) }
    }

    /// A room's settings, with the SSRC of the stream it is to play (0: any).
    func deliver(_ settings: RoomSettings, stream: UInt32, to key: String) {
        guard let (address, member) = addresses.withLock({ $0[key] }) else { return }
        let message = ControlMessage.roomSettings(
            version: settings.version, volume: settings.volume, muted: settings.muted,
            outputDelayMicroseconds: UInt32(max(0, min(settings.outputDelayMilliseconds * 1000, 4e9))), stream: stream)
        guard let bytes = seal(message, for: member) else { return }
        try? socket.send(bytes, to: address, wait: false)
    }

    /// `copies` datagrams to each room at once: one lost on a lossy path would leave the
    /// room playing past the cut (the follower takes the first; the others change nothing).
    func endEpoch(_ epoch: UInt32, at end: CoordinatorTime, rooms: [RoomRegistry.Room], copies: Int = 1) {
        let targets = addresses.withLock { table in rooms.compactMap { table[$0.key] } }
        let sealed = targets.compactMap { target in seal(.epochEnd(epoch: epoch, at: NTPTimestamp(end)), for: target.member).map { ($0, target.address) } }
        for _ in 0..<copies {
            for (bytes, address) in sealed { try? socket.send(bytes, to: address, wait: false) }
        }
    }

    /// A calibration probe for one room, `copies` datagrams at once (a probe lost is a room
    /// the calibration does not hear; the follower plays a seed and time once).
    func probe(_ probe: CalibrationProbe, at start: CoordinatorTime, to key: String, copies: Int = 3) {
        guard let (address, member) = addresses.withLock({ $0[key] }),
              let bytes = seal(.probe(seed: probe.seed, level: Double(probe.level), at: NTPTimestamp(start)), for: member) else { return }
        for _ in 0..<copies { try? socket.send(bytes, to: address, wait: false) }
    }

    /// The peer at `address` enrolled as `member`: what goes to its room from now on is
    /// sealed for that member (it takes nothing sealed with the house key any more).
    func enrolled(_ address: SocketAddress, as member: UInt16) {
        addresses.withLock { table in
            for (key, entry) in table where entry.address == address { table[key] = (address, member) }
        }
    }

    /// Forgets the rooms of the members revoked: nothing more is sent to them.
    func forget(rooms keys: [String]) {
        addresses.withLock { table in for key in keys { table[key] = nil } }
    }
}
