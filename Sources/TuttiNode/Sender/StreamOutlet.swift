import Synchronization
import TuttiCore
import TuttiNet
import TuttiSecurity

/// Everything the coordinator keeps of one stream's packets, with one owner: where they go
/// (the fixed destinations, the multicast group, the followers subscribed by unicast), the
/// packets sent lately (for retransmission), and the stream's protection (SRTP, AES-GCM,
/// keyed from the house key, with each SSRC's rollover counter; SRTCP for its reports; and
/// the tags of the members each packet is for, which no other member can make).
/// Without a key (`--plain-rtp`) packets leave as plain RTP, untagged. The sender's thread and the
/// clock service's (subscriptions, retransmission requests) reach it through one lock,
/// each call in one step. The player sends through it (`transmit`), on the coordinator's
/// `StreamWire`.
final class StreamOutlet: Sendable {
    private struct State {
        var sealing: SRTPContext?
        var rollovers: [UInt32: RolloverCounter] = [:]
        var subscribers = LeaseTable<SocketAddress>()
        var retransmitter: Retransmitter<SocketAddress>
    }

    private let state: Mutex<State>
    /// Fixed destinations (their RTP port; RTCP goes to port + 1), the multicast group included.
    let destinations: [SocketAddress]
    let isSealing: Bool
    /// The stream's SSRC.
    let ssrc: UInt32
    /// The members a packet of this stream is for at a time, whose tags it carries.
    private let members: @Sendable (_ ssrc: UInt32, _ now: Int64) -> [StreamTagKey]
    /// Where its packets leave.
    let wire: StreamWire

    init(ssrc: UInt32, master: SRTPMasterKey?, destinations: [SocketAddress], wire: StreamWire,
         resending: Retransmitter<SocketAddress>.Configuration = .init(),
         members: @escaping @Sendable (_ ssrc: UInt32, _ now: Int64) -> [StreamTagKey] = { _, _ in [] }) {
        self.ssrc = ssrc
        self.wire = wire
        self.members = members
        self.destinations = destinations
        isSealing = master != nil
        state = Mutex(State(sealing: master.map { SRTPContext($0) },
                            retransmitter: Retransmitter(mediaSSRC: ssrc, ssrc: RTPPacket.retransmissionSSRC(of: ssrc),
                                                         initialSequence: UInt16.random(in: 0...UInt16.max), configuration: resending)))
    }

    /// A packet to send now: kept for retransmission, and as it goes on the wire to every
    /// destination, its send time (when it has the element) read from `now` just before
    /// sealing: one stamp for every destination, as one sealed packet may not be sealed twice
    /// with different contents (AES-GCM would give its key away).
    func send(_ packet: RTPPacket, at time: Int64, now: () -> CoordinatorTime) -> (bytes: [UInt8], to: [SocketAddress]) {
        let tags = isSealing ? members(ssrc, time) : []
        return state.withLock { state in
            state.retransmitter.record(packet)
            return (Self.seal(packet, tags: tags, in: &state, now: now), destinations + state.subscribers.active(now: time))
        }
    }

    /// Sends `packet` to every destination now, sealed once for all of them and stamped with
    /// the wire's clock just before; kept for retransmission.
    func transmit(_ packet: RTPPacket) {
        let clock = wire.clock
        let (bytes, targets) = send(packet, at: clock.nanosecondsNow()) { CoordinatorTime(nanoseconds: clock.nanosecondsNow()) }
        wire.send(bytes, to: targets, counted: true)
    }

    /// Sends an RTCP sender report to every destination's RTCP port (its RTP port + 1).
    func transmit(report: RTCPSenderReport) {
        let (bytes, targets) = send(report: report.encode(), at: wire.clock.nanosecondsNow())
        wire.send(bytes, to: targets, counted: false)
    }

    /// An RTCP report to send now, and where (every destination's port + 1).
    func send(report bytes: [UInt8], at time: Int64) -> (bytes: [UInt8], to: [SocketAddress]) {
        state.withLock { state in
            let sealed = state.sealing == nil ? bytes : (try? state.sealing!.protectRTCP(bytes)) ?? []
            let targets = (destinations + state.subscribers.active(now: time)).map { SocketAddress(address: $0.address, port: $0.port &+ 1) }
            return (sealed, targets)
        }
    }

    /// What a follower asks for again, sealed, for that follower. Retransmissions carry no
    /// send time: they are no clock readings.
    func resend(_ nack: GenericNACK, from peer: SocketAddress, at time: Int64) -> [[UInt8]] {
        let tags = isSealing ? members(ssrc, time) : []
        return state.withLock { state in
            state.retransmitter.answer(nack, from: peer, now: time).map {
                Self.seal($0, tags: tags, in: &state) { CoordinatorTime(nanoseconds: 0) }
            }
        }
    }

    /// A follower asks to receive the stream by unicast until `expiry` (or to stop, with an
    /// expiry not after `time`): whether it was taken (the table has room), and whether the
    /// follower is new.
    func subscribe(_ target: SocketAddress, until expiry: Int64, at time: Int64) -> (accepted: Bool, isNew: Bool) {
        state.withLock { state in
            let isNew = !state.subscribers.active(now: time).contains(target)
            return (state.subscribers.renew(target, until: expiry, now: time), isNew && expiry > time)
        }
    }

    func subscriberCount(at time: Int64) -> Int {
        state.withLock { $0.subscribers.active(now: time).count }
    }

    /// Seals with `master` from the next packet on (the stream's key moved to a new
    /// generation). The rollover counters go on: the index is the stream's, not the key's.
    func rekey(_ master: SRTPMasterKey) {
        guard isSealing else { return }
        state.withLock { $0.sealing = SRTPContext(master) }
    }

    /// What the retransmitter did so far.
    var retransmissions: Retransmitter<SocketAddress>.Statistics { state.withLock { $0.retransmitter.statistics } }

    /// The packet encoded, tagged for `tags`' members, stamped with its send time, and sealed.
    /// The tags come before the stamp: they are made over the packet with its send time
    /// zeroed, so that nothing but the stamp and SRTP's sealing stands between the clock's
    /// reading and the packet's leaving.
    private static func seal(_ packet: RTPPacket, tags: [StreamTagKey], in state: inout State, now: () -> CoordinatorTime) -> [UInt8] {
        guard state.sealing != nil else {
            var bytes = packet.encode()
            if let at = RTPPacket.sendTimeOffset(in: bytes) { RTPPacket.stamp(&bytes, at: at, sendTime: now()) }
            return bytes
        }
        var packet = packet
        let rollover = state.rollovers[packet.ssrc, default: RolloverCounter()].next(packet.sequenceNumber.rawValue)
        packet.rollover = rollover
        var bytes = packet.encode(taggedFor: tags.map(\.member))
        StreamTagKey.sign(&bytes, with: tags)
        if let at = RTPPacket.sendTimeOffset(in: bytes) { RTPPacket.stamp(&bytes, at: at, sendTime: now()) }
        // An encoded packet always has a valid header.
        return (try? state.sealing!.protectRTP(bytes, rollover: rollover)) ?? []
    }
}
