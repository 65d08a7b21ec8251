import TuttiCore
import TuttiNet
import TuttiSecurity

/// A follower's side of the clock port: keeps its clock locked to the coordinator's (a
/// burst of time exchanges at start, then as often as the estimate's bound needs), renews
/// the unicast subscription every second and at once when the coordinator answers after a
/// silence or from another clock (so a restarted coordinator learns of it at once),
/// reports the room once a second, and hands on the coordinator's room settings and epoch
/// ends. Backs off (to once a second) and says so while the coordinator does not answer.
///
/// Every message is signed with the house key. Of the coordinator's, only signed ones count:
/// a time answer only for a request of the last second not answered before, any other only
/// when its stamp is within 2 s of the coordinator's clock (a replay is older); the rest are
/// counted and dropped (`CoordinatorLink`).
public final class ClockClient: @unchecked Sendable {
    /// What the client hands on, and asks for.
    public struct Handlers: Sendable {
        /// A time exchange; returns how the clock stands after it (it sets the pace of the next ones).
        public var sample: @Sendable (ClockSample) -> ClockLock
        public var settings: @Sendable (_ version: UInt32, _ volume: Double, _ muted: Bool, _ outputDelayMicroseconds: UInt32) -> Void
        public var epochEnd: @Sendable (_ epoch: UInt32, _ at: CoordinatorTime) -> Void
        /// The room's report, once a second; nil for a client that is not a room (a screen).
        public var report: (@Sendable () -> RoomReport)?
        /// A retransmission from the coordinator (RTP, in answer to a NACK) and its arrival.
        public var retransmission: (@Sendable ([UInt8], Int64) -> Void)? = nil
        /// Called at every turn of the client's loop (at least every `idleInterval`): the
        /// follower's news from its playout thread is taken here.
        public var idle: (@Sendable () -> Void)? = nil

        public init(sample: @escaping @Sendable (ClockSample) -> ClockLock,
                    settings: @escaping @Sendable (_ version: UInt32, _ volume: Double, _ muted: Bool, _ outputDelayMicroseconds: UInt32) -> Void,
                    epochEnd: @escaping @Sendable (_ epoch: UInt32, _ at: CoordinatorTime) -> Void, report: (@Sendable () -> RoomReport)?,
                    retransmission: (@Sendable ([UInt8], Int64) -> Void)? = nil, idle: (@Sendable () -> Void)? = nil) {
            self.sample = sample
            self.settings = settings
            self.epochEnd = epochEnd
            self.report = report
            self.retransmission = retransmission
            self.idle = idle
        }
    }

    private let socket: UDPSocket
    private let coordinator: SocketAddress
    private let clock: SystemClock
    private let stopFlag: StopFlag
    private let unicastPort: UInt16?
    private let handlers: Handlers
    private let key: HMACAuthenticator
    private let keyDescription: String
    /// Opens sealed retransmissions (SRTP) when the stream is sealed.
    private var opener: SRTPContext?
    /// The coordinator's messages dropped: not signed with the house key, or stale (replayed).
    private var unauthenticated = 0
    private var stale = 0
    private var reported = (0, 0)
    private var nextSummary: Int64 = 0
    private var lastNotPaired: Int64?
    private let reportInterval: Int64 = 1_000_000_000
    private let subscribeInterval: Int64 = 1_000_000_000
    private let maximumBackoff: Int64 = 1_000_000_000
    /// Answers come at least every 250 ms plus a round trip; a longer gap is an outage.
    private let silenceBeforeResubscribing: Int64 = 600_000_000
    /// The longest the loop sleeps: how soon it notices a stop, and how often `idle` runs.
    private let idleInterval: Int64 = 250_000_000
    private let log = Log("follower")

    public init(socket: UDPSocket, coordinator: SocketAddress, clock: SystemClock, stopFlag: StopFlag,
         unicastPort: UInt16?, houseKey: HouseKey, sealedStream: Bool = true, handlers: Handlers) {
        self.socket = socket
        opener = sealedStream ? SRTPContext(houseKey.stream) : nil
        key = houseKey.clockPort
        keyDescription = "fingerprint \(houseKey.fingerprint)"
        self.coordinator = coordinator
        self.clock = clock
        self.stopFlag = stopFlag
        self.unicastPort = unicastPort
        self.handlers = handlers
    }

    public func run() {
        var exchanges = 0
        var lastAnswer: Int64?
        var backoff: Int64 = 500_000_000
        var nextRequest: Int64 = 0
        var nextSubscribe: Int64 = 0
        var nextReport: Int64 = 0
        var complained = false
        var firstRequest: Int64?
        var lock = ClockLock(uncertainty: nil, suspect: false)
        var streamSSRC: UInt32?
        var link = CoordinatorLink()
        while !stopFlag.isSet {
            let now = clock.nanosecondsNow()
            summarize(now: now)
            // Subscriptions and reports count only with the coordinator's cookie: after an answer.
            if let port = unicastPort, now >= nextSubscribe, link.cookie != 0 {
                try? socket.send(ControlMessage.subscribe(rtpPort: port, leaseSeconds: 30).seal(stamp: link.cookie, with: key), to: coordinator)
                nextSubscribe = now + subscribeInterval
            }
            if now >= nextReport, lastAnswer != nil, let report = handlers.report {
                try? socket.send(ControlMessage.roomReport(report()).seal(stamp: link.cookie, with: key), to: coordinator)
                nextReport = now + reportInterval
            }
            if now >= nextRequest {
                if firstRequest == nil { firstRequest = now }
                let t1 = clock.nanosecondsNow()
                link.sent(originate: t1)
                do {
                    try socket.send(ControlMessage.timeRequest(originate: UInt64(bitPattern: t1)).seal(stamp: link.cookie, with: key), to: coordinator)
                } catch {
                    log.debug("clock request: \(error)")
                }
                nextRequest = now + ExchangeSchedule.interval(after: exchanges, uncertainty: lock.uncertainty, suspect: lock.suspect)
                let silentSince = lastAnswer ?? firstRequest ?? now
                if now - silentSince > 1_500_000_000 {
                    if !complained {
                        log.warning("coordinator at \(coordinator) is not answering; retrying every \(backoff / 1_000_000) ms")
                        complained = true
                    }
                    nextRequest = now + backoff
                    backoff = min(backoff * 2, maximumBackoff)
                    nextSubscribe = min(nextSubscribe, nextRequest)
                }
                exchanges += 1
            }
            handlers.idle?()
            // Sleep until the next thing due: a request, a subscription, a report.
            var wake = min(nextRequest, now + idleInterval)
            if unicastPort != nil, link.cookie != 0 { wake = min(wake, nextSubscribe) }
            if lastAnswer != nil, handlers.report != nil { wake = min(wake, nextReport) }
            let wait = max(1, (wake - clock.nanosecondsNow() + 999_999) / 1_000_000)
            guard let datagram = try? socket.receive(timeoutMilliseconds: Int32(wait)) else { continue }
            let t4 = datagram.receivedAt
            if let first = datagram.bytes.first, first >> 6 == 2 {  // RTP: a retransmission
                if datagram.from == coordinator {
                    if opener == nil {
                        handlers.retransmission?(datagram.bytes, t4)
                    } else if let packet = try? opener!.unprotectRTP(datagram.bytes) {
                        handlers.retransmission?(packet, t4)
                    } else {
                        unauthenticated += 1
                    }
                } else {
                    log.debug("RTP from \(datagram.from), not the coordinator: dropped")
                }
                continue
            }
            let message: ControlMessage, stamp: UInt64
            do {
                (message, stamp) = try ControlMessage.open(datagram.bytes, with: key)
            } catch {
                if error == .unauthenticated {
                    unauthenticated += 1
                    if unauthenticated == 1 {
                        log.warning("a message from \(datagram.from) not signed with the house key: dropped (such messages are "
                                    + "counted every 10 s)")
                    }
                }
                continue
            }
            let arrived = LocalTime(nanoseconds: t4)
            switch message {
            case .notPaired:
                if lastNotPaired.map({ t4 - $0 > 10_000_000_000 }) ?? true {
                    lastNotPaired = t4
                    log.warning("the coordinator at \(coordinator) says this machine is not a member of its house: its house key "
                                + "is not this one (\(keyDescription)); pair it again: `tutti ctl pair` on the coordinator's "
                                + "machine, then here `tutti pair CODE --server http://COORDINATOR:8485`")
                }
                continue
            case .timeResponse:
                break
            default:
                guard link.isFresh(stamp: NTPTimestamp(rawValue: stamp).coordinatorTime, arrived: arrived) else {
                    stale += 1
                    continue
                }
            }
            switch message {
            case let .roomSettings(version, volume, muted, delay):
                handlers.settings(version, volume, muted, delay)
                nextReport = min(nextReport, clock.nanosecondsNow() + 20_000_000)  // confirm soon
                continue
            case let .epochEnd(epoch, at):
                handlers.epochEnd(epoch, at.coordinatorTime)
                continue
            case let .subscribed(ssrc, _):
                if let known = streamSSRC, known != ssrc {
                    log.info("the coordinator restarted (stream \(ssrc.hex(digits: 8)), was \(known.hex(digits: 8)))")
                }
                streamSSRC = ssrc
                continue
            default: break
            }
            if case let .timeResponse(originate, receive, transmit, cookie) = message {
                guard link.answer(originate: originate, transmit: transmit.coordinatorTime, cookie: cookie, arrived: arrived) else {
                    stale += 1
                    continue
                }
                let sample = ClockSample(
                    t1: LocalTime(nanoseconds: Int64(bitPattern: originate)), t2: receive.coordinatorTime,
                    t3: transmit.coordinatorTime, t4: LocalTime(nanoseconds: t4))
                guard sample.t1 <= sample.t4, sample.t4 - sample.t1 < 1_000_000_000 else { continue }
                if complained { log.info("coordinator at \(coordinator) answers again") }
                complained = false
                backoff = 500_000_000
                // Back after a silence, or answering from another clock: it may have
                // restarted and forgotten this follower. Subscribe now, not at the next turn.
                let wasSilent = lastAnswer.map { t4 - $0 > silenceBeforeResubscribing } ?? false
                lastAnswer = t4
                let wasSuspect = lock.suspect
                lock = handlers.sample(sample)
                if wasSilent || (lock.suspect && !wasSuspect) { nextSubscribe = min(nextSubscribe, t4) }
            }
        }
    }
}

extension ClockClient {
    /// Every 10 s, when the coordinator's address sent what did not count: how much.
    private func summarize(now: Int64) {
        guard now >= nextSummary else { return }
        nextSummary = now + 10_000_000_000
        guard (unauthenticated, stale) != reported else { return }
        log.info("clock port in the last 10 s: \(unauthenticated - reported.0) messages not signed with the house key and "
                 + "\(stale - reported.1) stale or unasked-for (replayed) dropped")
        reported = (unauthenticated, stale)
    }
}

/// How a follower's clock stands, as far as the pace of its exchanges goes.
public struct ClockLock: Sendable {
    /// The estimate's bound, nil when not locked.
    public var uncertainty: Int64?
    /// Exchanges disagree with the estimate (the coordinator may have restarted).
    public var suspect: Bool

    public init(uncertainty: Int64?, suspect: Bool) {
        self.uncertainty = uncertainty
        self.suspect = suspect
    }

    public init(_ estimator: ClockEstimator) {
        self.init(uncertainty: estimator.estimate?.uncertainty, suspect: estimator.isSuspect)
    }
}
