import Synchronization
import TuttiCore
import TuttiSecurity

/// The coordinator's side of the stream's protection: encodes each RTP packet, stamps its
/// send time, and seals it with SRTP (AES-GCM, keyed from the house key), giving it the
/// rollover counter of its SSRC; seals RTCP reports with SRTCP. Without a key (`--plain-rtp`)
/// packets leave as plain RTP. Shared by the sending threads: the stream's and the clock
/// service's (retransmissions, their own SSRC).
final class StreamSealer: Sendable {
    private struct State {
        var context: SRTPContext
        var rollovers: [UInt32: RolloverCounter] = [:]
    }

    private let state: Mutex<State?>
    let isSealing: Bool

    init(_ master: SRTPMasterKey?) {
        state = Mutex(master.map { State(context: SRTPContext($0)) })
        isSealing = master != nil
    }

    /// The packet as it goes on the wire, its send time (when it has the element) read from
    /// `now` just before sealing: one stamp for every destination, as one sealed packet may
    /// not be sealed twice with different contents (AES-GCM would give its key away).
    func wire(_ packet: RTPPacket, now: () -> CoordinatorTime) -> [UInt8] {
        guard isSealing else {
            var bytes = packet.encode()
            if let at = RTPPacket.sendTimeOffset(in: bytes) { RTPPacket.stamp(&bytes, at: at, sendTime: now()) }
            return bytes
        }
        return state.withLock { state in
            guard state != nil else { return [] }
            var packet = packet
            let rollover = state!.rollovers[packet.ssrc, default: RolloverCounter()].next(packet.sequenceNumber.rawValue)
            packet.rollover = rollover
            var bytes = packet.encode()
            if let at = RTPPacket.sendTimeOffset(in: bytes) { RTPPacket.stamp(&bytes, at: at, sendTime: now()) }
            // An encoded packet always has a valid header.
            return (try? state!.context.protectRTP(bytes, rollover: rollover)) ?? []
        }
    }

    /// An RTCP packet as it goes on the wire.
    func wire(report bytes: [UInt8]) -> [UInt8] {
        guard isSealing else { return bytes }
        return state.withLock { state in (try? state?.context.protectRTCP(bytes)) ?? [] }
    }
}
