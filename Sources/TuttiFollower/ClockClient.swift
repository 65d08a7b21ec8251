import TuttiCore
import TuttiNet
import TuttiSecurity

/// The socket side of a member's `CoordinatorSession` on the house's control channel (the
/// clock port): it seals and sends what the session asks for, opens what arrives, checks its
/// tag with the house key, and hands the session's news to its handlers. Messages not signed
/// with the house key are counted and dropped (a summary every 10 s); retransmissions of
/// the stream (RTP, in answer to a NACK) arrive here too and are opened with SRTP.
///
/// It has no thread of its own. A follower's playout thread calls `turn` and
/// `receiveWaiting` between renders (see `Playout`); a lyric screen runs `run` on a thread
/// of its own. Either way one thread uses it, and the handlers run on that thread.
public final class ClockClient {
    /// What the client hands on, and asks for.
    public struct Handlers {
        public var sample: (ClockSample) -> Void
        /// The room's settings; `stream`: its zone's stream (0: any).
        public var settings: (_ version: UInt32, _ volume: Double, _ muted: Bool, _ outputDelayMicroseconds: UInt32, _ stream: UInt32) -> Void
        public var epochEnd: (_ epoch: UInt32, _ at: CoordinatorTime) -> Void
        /// The room's report, once a second; nil for a member that is not a room (a screen).
        public var report: (() -> RoomReport)?
        /// A retransmission from the coordinator (RTP, in answer to a NACK), opened, and its arrival.
        public var retransmission: (([UInt8], LocalTime) -> Void)?

        public init(sample: @escaping (ClockSample) -> Void,
                    settings: @escaping (_ version: UInt32, _ volume: Double, _ muted: Bool, _ outputDelayMicroseconds: UInt32,
                                         _ stream: UInt32) -> Void = { _, _, _, _, _ in },
                    epochEnd: @escaping (_ epoch: UInt32, _ at: CoordinatorTime) -> Void = { _, _ in },
                    report: (() -> RoomReport)? = nil, retransmission: (([UInt8], LocalTime) -> Void)? = nil) {
            self.sample = sample
            self.settings = settings
            self.epochEnd = epochEnd
            self.report = report
            self.retransmission = retransmission
        }
    }

    private let socket: any DatagramSocket
    private let coordinator: SocketAddress
    private let clock: any MonotonicClock
    private let handlers: Handlers
    private let key: HMACAuthenticator
    private let keyDescription: String
    private var session: CoordinatorSession
    /// Opens sealed retransmissions (SRTP) when the stream is sealed.
    private var opener: SRTPContext?
    /// The coordinator's messages dropped: not signed with the house key (the session
    /// counts the stale ones).
    private var unauthenticated = 0
    private var reported = (0, 0)
    private var nextSummary: Int64 = 0
    private let log: Log

    /// `role` names the program in its log lines (`follower`, `lyrics`).
    public init(socket: any DatagramSocket, coordinator: SocketAddress, clock: any MonotonicClock, unicastPort: UInt16?, houseKey: HouseKey,
                sealedStream: Bool = true, role: String = "follower", handlers: Handlers) {
        log = Log(role)
        self.socket = socket
        opener = sealedStream ? SRTPContext(houseKey.stream) : nil
        key = houseKey.clockPort
        keyDescription = "fingerprint \(houseKey.fingerprint)"
        self.coordinator = coordinator
        self.clock = clock
        self.handlers = handlers
        session = CoordinatorSession(unicastPort: unicastPort, reportsRoom: handlers.report != nil)
    }

    /// Asks for the stream by unicast on `port` from now on.
    public func receiveByUnicast(port: UInt16) { session.receiveByUnicast(port: port) }

    /// Reports the room with the next turn (see `CoordinatorSession.reportSoon`).
    public func reportSoon() { session.reportSoon(now: clock.nanosecondsNow()) }

    /// Sends what is due now, given how the clock stands; returns the latest time (local
    /// ns) to turn again.
    public func turn(lock: ClockLock) -> Int64 {
        let now = clock.nanosecondsNow()
        summarize(now: now)
        for action in session.turn(now: now, lock: lock) {
            switch action {
            case .requestTime:
                let t1 = clock.nanosecondsNow()
                session.requestSent(originate: t1)
                do {
                    try socket.send(ControlMessage.timeRequest(originate: UInt64(bitPattern: t1)).seal(stamp: session.cookie, with: key),
                                    to: coordinator, wait: false)
                } catch {
                    log.debug("clock request: \(error)")
                }
            case let .send(message):
                try? socket.send(message.seal(stamp: session.cookie, with: key), to: coordinator, wait: false)
            case .sendReport:
                guard let report = handlers.report?() else { continue }
                try? socket.send(ControlMessage.roomReport(report).seal(stamp: session.cookie, with: key), to: coordinator, wait: false)
            default:
                perform(action)
            }
        }
        return session.nextTurn
    }

    /// Takes every datagram waiting on the socket, without waiting for more.
    public func receiveWaiting() {
        while let datagram = try? socket.receiveWaiting() { take(datagram) }
    }

    /// For a member with no loop of its own (a lyric screen): turns and receives on the
    /// calling thread until `stop` is set, sleeping on the socket until the next turn.
    public func run(stop: StopFlag, lock: () -> ClockLock) {
        while !stop.isSet {
            let wake = turn(lock: lock())
            let wait = min(250_000_000, max(0, wake - clock.nanosecondsNow()))
            guard let datagram = try? socket.receive(timeoutMilliseconds: Int32((wait + 999_999) / 1_000_000)) else { continue }
            take(datagram)
        }
    }

    private func take(_ datagram: Datagram) {
        let arrived = LocalTime(nanoseconds: datagram.receivedAt)
        if let first = datagram.bytes.first, first >> 6 == 2 {  // RTP: a retransmission
            guard datagram.from == coordinator else {
                log.debug("RTP from \(datagram.from), not the coordinator: dropped")
                return
            }
            if opener == nil {
                handlers.retransmission?(datagram.bytes, arrived)
            } else if let packet = try? opener!.unprotectRTP(datagram.bytes) {
                handlers.retransmission?(packet, arrived)
            } else {
                unauthenticated += 1
            }
            return
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
            return
        }
        for action in session.receive(message, stamp: stamp, arrived: arrived) { perform(action) }
    }

    private func perform(_ action: CoordinatorSession.Action) {
        switch action {
        case let .sample(sample): handlers.sample(sample)
        case let .settings(version, volume, muted, delay, stream): handlers.settings(version, volume, muted, delay, stream)
        case let .epochEnd(epoch, at): handlers.epochEnd(epoch, at)
        case let .notice(notice): say(notice)
        case .requestTime, .send, .sendReport: break  // sent by `turn`
        }
    }

    private func say(_ notice: CoordinatorSession.Notice) {
        switch notice {
        case let .notAnswering(retry):
            log.warning("coordinator at \(coordinator) is not answering; retrying every \(retry / 1_000_000) ms")
        case .answersAgain:
            log.info("coordinator at \(coordinator) answers again")
        case .notPaired:
            // Unsigned (a stranger who is told nothing gets no key to sign with): it proves nothing.
            log.warning("a \"not paired\" notice came from \(coordinator)'s address (unsigned: the coordinator's, or a "
                        + "stranger's): if the coordinator does not answer either, this machine is not a member of its house "
                        + "(this house key, \(keyDescription), is another); pair it again: `tutti ctl pair` on the coordinator's "
                        + "machine, then here `tutti pair CODE --server http://COORDINATOR:8485`")
        case let .restarted(stream, was):
            log.info("the coordinator restarted (stream \(stream.hex(digits: 8)), was \(was.hex(digits: 8)))")
        }
    }

    /// Every 10 s, when the coordinator's address sent what did not count: how much.
    private func summarize(now: Int64) {
        guard now >= nextSummary else { return }
        nextSummary = now + 10_000_000_000
        guard (unauthenticated, session.stale) != reported else { return }
        log.info("clock port in the last 10 s: \(unauthenticated - reported.0) messages not signed with the house key and "
                 + "\(session.stale - reported.1) stale or unasked-for (replayed) dropped")
        reported = (unauthenticated, session.stale)
    }
}
