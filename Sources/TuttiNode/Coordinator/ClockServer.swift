import Synchronization
import TuttiCore
import TuttiNet
import TuttiSecurity

/// The coordinator's clock port: a thin shell over `ControlChannelService` (time answers,
/// subscriptions, room reports, who may ask for retransmissions), which answers the
/// followers' retransmission requests (RFC 4585 NACKs) with RFC 4588 retransmissions, by
/// unicast to the asker. `turn` does what is due and carries out what the machine says of
/// each datagram waiting, and says when it must turn again, as the follower's
/// `Playout.step` does: `run` turns it on a thread of its own, asleep on the socket between
/// turns; a simulated house turns it on a manual clock.
final class ClockServer: Sendable {
    private let socket: any DatagramSocket & Sendable
    private let clock: any MonotonicClock
    /// What the service keeps: its thread's alone (a simulated house turns it on its own),
    /// in one lock all the same.
    private struct State {
        var service: ControlChannelService<SocketAddress>
        /// Opens the followers' NACKs (SRTCP), when the stream is sealed: with the stream's
        /// key in use, else the one before it (members still sealing with it while the stream moves).
        var openers: [SRTPContext] = []
        /// NACKs from addresses that have not exchanged time lately, refused.
        var refusedRequests = 0
        var reportedStrangers = (0, 0)
        var reported = Retransmitter<SocketAddress>.Statistics()
        var nextSummary: Int64 = 0
    }
    private let state: Mutex<State>
    /// The zones' streams: their subscribers, the packets sent lately (for peers that ask
    /// again) and their protection (retransmissions are sealed like the stream).
    let streams: StreamDirectory
    private let keyring: HouseKeyring
    private let sealed: Bool
    private struct Callbacks {
        var streamKey: (@Sendable (SRTPMasterKey) -> Void)?
        var report: (@Sendable (RoomReport, SocketAddress, UInt16, Int64) -> Void)?
        var enrolled: (@Sendable (SocketAddress, UInt16) -> Void)?
    }
    private let callbacks = Mutex(Callbacks())
    /// Called on this service's thread when the stream moved to a new key.
    var onStreamKey: (@Sendable (SRTPMasterKey) -> Void)? {
        get { callbacks.withLock { $0.streamKey } }
        set { callbacks.withLock { $0.streamKey = newValue } }
    }
    /// Called on this service's thread with every room report, its sender and arrival time.
    var onReport: (@Sendable (RoomReport, SocketAddress, UInt16, Int64) -> Void)? {
        get { callbacks.withLock { $0.report } }
        set { callbacks.withLock { $0.report = newValue } }
    }
    /// Called on this service's thread when a peer enrolled, before it is answered.
    var onEnrolled: (@Sendable (SocketAddress, UInt16) -> Void)? {
        get { callbacks.withLock { $0.enrolled } }
        set { callbacks.withLock { $0.enrolled = newValue } }
    }
    private let log = Log("coordinator")

    /// The longest a turn rests (a key that its members now hold is moved within it).
    static let longestRest: Int64 = 200_000_000

    init(socket: any DatagramSocket & Sendable, clock: any MonotonicClock, keyring: HouseKeyring, streams: StreamDirectory, sealed: Bool) {
        self.socket = socket
        self.streams = streams
        self.keyring = keyring
        self.sealed = sealed
        self.clock = clock
        var state = State(service: ControlChannelService(keys: keyring, cookieKey: HMACAuthenticator.random(), stream: { streams.resolve($0) },
                                                         payloadType: RTPPacket.defaultPayloadType, addressBytes: \.bytes,
                                                         atPort: { SocketAddress(address: $0.address, port: $1) }))
        // One replay window per follower that asks (their NACKs' SSRCs), as many as peers.
        if sealed { state.openers = [SRTPContext(keyring.streamInUse.key, capacity: 512)] }
        self.state = Mutex(state)
    }

    /// Turns until `stopFlag` is set, asleep on the socket between turns (a datagram wakes it).
    func run(until stopFlag: StopFlag) {
        while !stopFlag.isSet {
            let now = clock.nanosecondsNow()
            let next: Int64
            do {
                next = try turn(now: now)
                let rest = Int32(max(0, min(next - clock.nanosecondsNow(), Self.longestRest)) / 1_000_000)
                if let received = try socket.receive(timeoutMilliseconds: rest) { state.withLock { take(received, &$0) } }
            } catch {
                log.error("clock socket: \(error)")
                return
            }
        }
    }

    /// Does what is due at `now` (the summary, a move of the stream's key), then takes every
    /// datagram waiting; returns when it must turn again, if no datagram comes first.
    func turn(now: Int64) throws(SystemError) -> Int64 {
        try state.withLock { (state) throws(SystemError) -> Int64 in
            summarize(now: now, &state)
            moveStreamKey(now: now, &state)
            while let received = try socket.receiveWaiting() { take(received, &state) }
            return min(state.nextSummary, now + Self.longestRest)
        }
    }

    /// One datagram: a retransmission request, or a message for the control channel's machine.
    private func take(_ received: Datagram, _ state: inout State) {
        let (bytes, from, t2) = (received.bytes, received.from, received.receivedAt)
        if GenericNACK.isFeedback(bytes) {
            answer(bytes, from: from, at: t2, &state)
            return
        }
        for action in state.service.receive(bytes, from: from, at: t2, clock: clock) {
            switch action {
            case let .send(reply, to):
                try? socket.send(reply, to: to, wait: true)
            case let .subscribe(target, expiry, ssrc, reply, to):
                let (accepted, isNew) = streams.subscribe(target, to: ssrc, until: expiry, at: t2)
                if accepted && isNew { log.info("unicast subscriber \(target) of stream \(ssrc.hex(digits: 8))") }
                if accepted {
                    try? socket.send(reply, to: to, wait: true)
                } else {
                    log.warning("subscription table full; refusing \(target)")
                }
            case let .report(report, peer, member, time):
                onReport?(report, peer, member, time)
            case let .enrolled(member, name, peer):
                onEnrolled?(peer, member)
                log.info("'\(name.prefix(64))' at \(peer) enrolled with the house key: member \(member)")
            case let .firstStranger(peer):
                log.warning("a message from \(peer) not signed with this house's key: dropped (a stranger, or a follower of "
                            + "another house; such messages are counted every 10 s)")
            }
        }
    }

    /// Resends what a known peer asks for, to that peer.
    private func answer(_ bytes: [UInt8], from: SocketAddress, at now: Int64, _ state: inout State) {
        guard state.service.admitsFeedback(from: from, at: now) else {
            state.refusedRequests += 1
            return
        }
        var request = bytes
        if sealed {
            guard let opened = Self.openRTCP(bytes, with: &state.openers) else {
                state.service.countUnauthenticated()
                return
            }
            request = opened
        }
        guard let nack = try? GenericNACK.decode(request) else {
            state.refusedRequests += 1
            return
        }
        for bytes in streams.outlet(nack.mediaSSRC).resend(nack, from: from, at: now) {
            try? socket.send(bytes, to: from, wait: true)
        }
    }

    private static func openRTCP(_ bytes: [UInt8], with openers: inout [SRTPContext]) -> [UInt8]? {
        for i in openers.indices {
            if let opened = try? openers[i].unprotectRTCP(bytes) { return opened }
        }
        return nil
    }

    /// The stream moves to a newer key once its members hold it (`HouseKeyring.switchDue`):
    /// every stream seals with it from its next packet, NACKs sealed with the one before are
    /// still taken, and the SDP file is written again.
    private func moveStreamKey(now: Int64, _ state: inout State) {
        guard sealed, let (generation, key) = keyring.switchDue(at: now) else { return }
        for outlet in streams.all { outlet.rekey(key) }
        state.openers = [SRTPContext(key, capacity: 512)] + state.openers.prefix(1)
        onStreamKey?(key)
        log.info("the stream moved to its key of generation \(generation)")
    }

    /// Every 10 s, when followers asked for packets again: how many, and what came of it; and
    /// how many messages from strangers were dropped.
    private func summarize(now: Int64, _ state: inout State) {
        guard now >= state.nextSummary else { return }
        let counts = state.service.counts
        CoordinatorMetrics.shared.strangers.update(total: counts.unauthenticated + counts.unverified + counts.replayed)
        state.nextSummary = now + 10_000_000_000
        let strangers = (counts.unauthenticated, counts.unverified)
        if strangers != state.reportedStrangers {
            log.info("clock port in the last 10 s: \(strangers.0 - state.reportedStrangers.0) messages not signed with this house's key "
                     + "and \(strangers.1 - state.reportedStrangers.1) without a valid cookie dropped")
            state.reportedStrangers = strangers
        }
        let s = streams.retransmissions
        guard s != state.reported || state.refusedRequests > 0 else { return }
        let reported = state.reported
        let asked = s.requested - reported.requested, resent = s.resent - reported.resent
        let gone = s.unknown - reported.unknown, refused = s.refused - reported.refused, foreign = s.foreign - reported.foreign
        log.info("retransmissions in the last 10 s: \(asked) packets asked for, \(resent) resent, \(gone) no longer held, "
                 + "\(refused) beyond a follower's rate, \(foreign) for another stream; \(state.refusedRequests) requests from strangers refused")
        state.reported = s
        state.refusedRequests = 0
    }
}
