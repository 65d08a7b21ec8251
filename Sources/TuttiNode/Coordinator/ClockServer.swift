import Synchronization
import TuttiCore
import TuttiNet
import TuttiSecurity

/// The coordinator's clock port: a thin shell over `ControlChannelService` (time answers,
/// subscriptions, room reports, who may ask for retransmissions), which answers the
/// followers' retransmission requests (RFC 4585 NACKs) with RFC 4588 retransmissions, by
/// unicast to the asker. Its thread receives, hands each datagram to the machine, and
/// carries out what it says.
final class ClockServer: @unchecked Sendable {
    private let socket: UDPSocket
    private let clock: SystemClock
    private let stopFlag: StopFlag
    /// This service's thread only.
    private var service: ControlChannelService<SocketAddress>
    /// The zones' streams: their subscribers, the packets sent lately (for peers that ask
    /// again) and their protection (retransmissions are sealed like the stream).
    let streams: StreamDirectory
    /// Opens the followers' NACKs (SRTCP), when the stream is sealed.
    private var opener: SRTPContext?
    /// Called on this service's thread with every room report, its sender and arrival time.
    var onReport: (@Sendable (RoomReport, SocketAddress, Int64) -> Void)?
    /// NACKs from addresses that have not exchanged time lately, refused.
    private var refusedRequests = 0
    private var reportedStrangers = (0, 0)
    private var reported = Retransmitter<SocketAddress>.Statistics()
    private var nextSummary: Int64 = 0
    private let log = Log("coordinator")

    init(socket: UDPSocket, clock: SystemClock, stopFlag: StopFlag, key: any MessageAuthenticator,
         streams: StreamDirectory, stream: SRTPMasterKey? = nil) {
        self.socket = socket
        self.streams = streams
        // One replay window per follower that asks (their NACKs' SSRCs), as many as peers.
        opener = stream.map { SRTPContext($0, capacity: 512) }
        self.clock = clock
        self.stopFlag = stopFlag
        service = ControlChannelService(key: key, cookieKey: HMACAuthenticator.random(), stream: { streams.resolve($0) },
                                        payloadType: RTPPacket.defaultPayloadType, addressBytes: \.bytes,
                                        atPort: { SocketAddress(address: $0.address, port: $1) })
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
            for action in service.receive(bytes, from: from, at: t2, clock: clock) {
                switch action {
                case let .send(reply, to):
                    try? socket.send(reply, to: to)
                case let .subscribe(target, expiry, ssrc, reply, to):
                    let (accepted, isNew) = streams.subscribe(target, to: ssrc, until: expiry, at: t2)
                    if accepted && isNew { log.info("unicast subscriber \(target) of stream \(ssrc.hex(digits: 8))") }
                    if accepted {
                        try? socket.send(reply, to: to)
                    } else {
                        log.warning("subscription table full; refusing \(target)")
                    }
                case let .report(report, peer, time):
                    onReport?(report, peer, time)
                case let .firstStranger(peer):
                    log.warning("a message from \(peer) not signed with this house's key: dropped (a stranger, or a follower of "
                                + "another house; such messages are counted every 10 s)")
                }
            }
        }
    }

    /// Resends what a known peer asks for, to that peer.
    private func answer(_ bytes: [UInt8], from: SocketAddress, at now: Int64) {
        guard service.admitsFeedback(from: from, at: now) else {
            refusedRequests += 1
            return
        }
        var request = bytes
        if opener != nil {
            do {
                request = try opener!.unprotectRTCP(bytes)
            } catch {
                service.countUnauthenticated()
                return
            }
        }
        guard let nack = try? GenericNACK.decode(request) else {
            refusedRequests += 1
            return
        }
        for bytes in streams.outlet(nack.mediaSSRC).resend(nack, from: from, at: now) {
            try? socket.send(bytes, to: from)
        }
    }

    /// Every 10 s, when followers asked for packets again: how many, and what came of it; and
    /// how many messages from strangers were dropped.
    private func summarize() {
        let now = clock.nanosecondsNow()
        guard now >= nextSummary else { return }
        CoordinatorMetrics.shared.strangers.update(total: service.counts.unauthenticated + service.counts.unverified)
        nextSummary = now + 10_000_000_000
        let strangers = (service.counts.unauthenticated, service.counts.unverified)
        if strangers != reportedStrangers {
            log.info("clock port in the last 10 s: \(strangers.0 - reportedStrangers.0) messages not signed with this house's key "
                     + "and \(strangers.1 - reportedStrangers.1) without a valid cookie dropped")
            reportedStrangers = strangers
        }
        let s = streams.retransmissions
        guard s != reported || refusedRequests > 0 else { return }
        let asked = s.requested - reported.requested, resent = s.resent - reported.resent
        let gone = s.unknown - reported.unknown, refused = s.refused - reported.refused, foreign = s.foreign - reported.foreign
        log.info("retransmissions in the last 10 s: \(asked) packets asked for, \(resent) resent, \(gone) no longer held, "
                 + "\(refused) beyond a follower's rate, \(foreign) for another stream; \(refusedRequests) requests from strangers refused")
        reported = s
        refusedRequests = 0
    }
}
