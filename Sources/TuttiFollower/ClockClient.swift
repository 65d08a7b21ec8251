import TuttiCore
import TuttiNet
import TuttiSecurity

/// The socket side of a member's `CoordinatorSession` on the house's control channel (the
/// clock port): it seals and sends what the session asks for, opens what arrives, checks its
/// tag with the member's own key (the house key's before it enrolled), and hands the
/// session's news to its handlers. Messages not so signed are counted and dropped (a summary
/// every 10 s); retransmissions of the stream (RTP, in answer to a NACK) arrive here too and
/// are opened with SRTP.
///
/// A member that holds the house key alone enrols: the coordinator makes it a member of its
/// own, and the client keeps the credential (`Membership.keyPath`) and signs with it from
/// then on. The stream's key comes the same way, sealed for the member, whenever the
/// coordinator's messages name a newer generation than the member holds.
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
        /// A new generation of the stream's key, for the stream's socket.
        public var streamKey: ((SRTPMasterKey, UInt32) -> Void)?
        /// This member's credential, once it enrolled (the stream's packets must carry its tag).
        public var enrolled: ((MemberKey) -> Void)?
        /// A calibration probe to play (`CalibrationProbe`), from `at`.
        public var probe: ((CalibrationProbe, CoordinatorTime) -> Void)?

        public init(sample: @escaping (ClockSample) -> Void,
                    settings: @escaping (_ version: UInt32, _ volume: Double, _ muted: Bool, _ outputDelayMicroseconds: UInt32,
                                         _ stream: UInt32) -> Void = { _, _, _, _, _ in },
                    epochEnd: @escaping (_ epoch: UInt32, _ at: CoordinatorTime) -> Void = { _, _ in },
                    report: (() -> RoomReport)? = nil, retransmission: (([UInt8], LocalTime) -> Void)? = nil,
                    streamKey: ((SRTPMasterKey, UInt32) -> Void)? = nil, enrolled: ((MemberKey) -> Void)? = nil,
                    probe: ((CalibrationProbe, CoordinatorTime) -> Void)? = nil) {
            self.sample = sample
            self.probe = probe
            self.enrolled = enrolled
            self.streamKey = streamKey
            self.settings = settings
            self.epochEnd = epochEnd
            self.report = report
            self.retransmission = retransmission
        }
    }

    /// Who this member is: the house key, its own credential once it has one, the name it
    /// enrols as, and where it keeps its credential (nil: in memory only).
    public struct Membership {
        public var houseKey: HouseKey
        public var member: MemberKey?
        public var name: String
        public var keyPath: String?
        /// The credential is one kept before credentials were per house, from this file:
        /// the coordinator's first answer signed with it makes it this house's (kept at
        /// `keyPath`); a "not paired" instead means it is another house's, and the member
        /// enrols anew with the house key (the file is left as it is).
        public var trying: String?

        public init(houseKey: HouseKey, member: MemberKey? = nil, name: String, keyPath: String? = nil) {
            self.houseKey = houseKey
            self.member = member
            self.name = name
            self.keyPath = keyPath
        }
    }

    private let socket: any DatagramSocket
    private let coordinator: SocketAddress
    private let clock: any MonotonicClock
    private var handlers: Handlers
    private var membership: Membership
    /// What signs and checks this member's messages: its own key's, else the house key's.
    private var key: HMACAuthenticator
    /// When this member enrolled (answers to its earlier messages may still come).
    private var enrolledAt: Int64?
    /// Whether the first message not signed with this member's key was told of.
    private var warned = false
    private var session: CoordinatorSession
    /// Opens sealed retransmissions (SRTP) when the stream is sealed.
    private var opener: StreamKeys?
    /// The coordinator's messages dropped: not signed with the house key (the session
    /// counts the stale ones).
    private var unauthenticated = 0
    private var reported = (0, 0)
    private var nextSummary: Int64 = 0
    private let log: Log
    /// Where the stream is asked for by unicast, if it is.
    private var unicastPort: UInt16?

    /// `role` names the program in its log lines (`follower`, `lyrics`).
    public init(socket: any DatagramSocket, coordinator: SocketAddress, clock: any MonotonicClock, unicastPort: UInt16?,
                membership: Membership, sealedStream: Bool = true, role: String = "follower", handlers: Handlers) {
        log = Log(role)
        self.socket = socket
        self.membership = membership
        opener = sealedStream ? StreamKeys(membership.houseKey.stream, member: membership.member) : nil
        key = membership.member?.clockPort ?? membership.houseKey.clockPort
        self.coordinator = coordinator
        self.clock = clock
        self.handlers = handlers
        self.unicastPort = unicastPort
        session = CoordinatorSession(unicastPort: unicastPort, reportsRoom: handlers.report != nil,
                                     enrollAs: membership.member == nil ? membership.name : nil, nonce: UInt64.random(in: 1...UInt64.max))
        if let member = membership.member { log.info("member \(member.id) of the house (credential \(member.fingerprint))") }
    }

    /// The member id this member signs as (0: a holder of the house key, not yet enrolled).
    public var memberID: UInt16 { membership.member?.id ?? 0 }

    /// Signs a message (numbered, but for time requests) and sends it, never waiting.
    private func send(_ message: ControlMessage, now: Int64) throws {
        let sequence: UInt64 = if case .timeRequest = message { 0 } else { session.sequence(at: now) }
        try socket.send(message.seal(stamp: session.cookie, member: memberID, sequence: sequence, with: key), to: coordinator, wait: false)
    }

    /// Asks for the stream by unicast on `port` from now on.
    public func receiveByUnicast(port: UInt16) {
        unicastPort = port
        session.receiveByUnicast(port: port)
    }

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
                    try send(.timeRequest(originate: UInt64(bitPattern: t1)), now: t1)
                } catch {
                    log.debug("clock request: \(error)")
                }
            case let .send(message):
                try? send(message, now: now)
            case .sendReport:
                guard let report = handlers.report?() else { continue }
                try? send(.roomReport(report), now: now)
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
        let opened: ControlMessage.Opened
        // Only what is sealed with this member's own key (the house key's before it enrolled).
        let (id, key) = (memberID, key)
        do {
            opened = try ControlMessage.open(datagram.bytes) { $0 == id ? key : nil }
        } catch {
            // Answers to what it sent before it enrolled may still be on the way: counted, but
            // not warned of as a stranger's.
            let lateAnswer = id != 0 && ControlMessage.member(of: datagram.bytes) == 0
                && enrolledAt.map { arrived.nanoseconds - $0 < 2_000_000_000 } ?? false
            if error == .unauthenticated {
                unauthenticated += 1
                if !lateAnswer, !warned {
                    warned = true
                    log.warning("a message from \(datagram.from) not signed with this member's key: dropped (such messages are "
                                + "counted every 10 s)")
                }
            }
            return
        }
        if let legacy = membership.trying, let member = membership.member, opened.message != .notPaired {
            membership.trying = nil
            keep(member, adoptedFrom: legacy)
        }
        let generation = UInt32(truncatingIfNeeded: opened.sequence)
        for action in session.receive(opened.message, stamp: opened.stamp, generation: generation, arrived: arrived) { perform(action) }
    }

    private func perform(_ action: CoordinatorSession.Action) {
        switch action {
        case let .sample(sample): handlers.sample(sample)
        case let .settings(version, volume, muted, delay, stream): handlers.settings(version, volume, muted, delay, stream)
        case let .epochEnd(epoch, at): handlers.epochEnd(epoch, at)
        case let .probe(seed, level, at): handlers.probe?(CalibrationProbe(seed: seed, level: Float(level)), at)
        case let .enrolled(member, sealed): enrolled(member, sealed: sealed)
        case let .streamKey(generation, sealed): take(generation, sealed: sealed)
        case let .notice(notice): say(notice)
        case .requestTime, .send, .sendReport: break  // sent by `turn`
        }
    }

    /// The coordinator made this member `id`: its credential, kept where it is to be, signs
    /// from now on.
    private func enrolled(_ id: UInt16, sealed: [UInt8]) {
        guard let member = membership.houseKey.openEnrolment(member: id, sealed: sealed) else {
            log.warning("an enrolment answer that does not open with the house key: dropped")
            return
        }
        membership.member = member
        key = member.clockPort
        opener?.enrolled(member)
        handlers.enrolled?(member)
        enrolledAt = clock.nanosecondsNow()
        var kept = "kept in memory only (no state folder): it enrols again at its next start"
        if let path = membership.keyPath {
            do {
                try StateFolder.writeMemberKey(member, to: path)
                kept = "kept in \(path)"
            } catch {
                kept = "NOT kept (\(error)): it enrols again at its next start"
            }
        }
        log.info("enrolled as member \(id) of the house (credential \(member.fingerprint), \(kept))")
    }

    /// A credential kept before credentials were per house turned out to be this house's:
    /// kept for it from now on.
    private func keep(_ member: MemberKey, adoptedFrom legacy: String) {
        guard let path = membership.keyPath else { return }
        do {
            try StateFolder.writeMemberKey(member, to: path)
            log.info("the credential in \(legacy) is this house's (fingerprint \(membership.houseKey.fingerprint)): kept in \(path)")
        } catch {
            log.warning("cannot keep this house's credential in \(path) (\(error)): \(legacy) is tried again at the next start")
        }
    }

    /// A credential kept before credentials were per house is another house's (a
    /// reinstalled coordinator's, say): this member enrols anew with the house key.
    private func enrolAnew(instead legacy: String) {
        log.info("the credential in \(legacy) is not one of this house's (fingerprint \(membership.houseKey.fingerprint)): enrolling "
                 + "with the house key (the file is left as it is)")
        membership.trying = nil
        membership.member = nil
        key = membership.houseKey.clockPort
        if opener != nil { opener = StreamKeys(membership.houseKey.stream, member: nil) }
        session = CoordinatorSession(unicastPort: unicastPort, reportsRoom: handlers.report != nil, enrollAs: membership.name,
                                     nonce: UInt64.random(in: 1...UInt64.max))
    }

    /// The stream's key of `generation`, sealed for this member.
    private func take(_ generation: UInt32, sealed: [UInt8]) {
        let key = membership.member.map { $0.openStreamKey(sealed, generation: generation) }
            ?? membership.houseKey.openStreamKey(sealed, generation: generation)
        guard let key else {
            log.warning("a stream key of generation \(generation) that does not open with this member's key: dropped")
            return
        }
        opener?.take(key, generation: generation)
        handlers.streamKey?(key, generation)
        session.holdKey(generation: generation)
        log.info("took the stream's key of generation \(generation)")
    }

    private func say(_ notice: CoordinatorSession.Notice) {
        switch notice {
        case let .notAnswering(retry):
            log.warning("coordinator at \(coordinator) is not answering; retrying every \(retry / 1_000_000) ms")
        case .answersAgain:
            log.info("coordinator at \(coordinator) answers again")
        case .notPaired:
            if let legacy = membership.trying, membership.member != nil { return enrolAnew(instead: legacy) }
            // Unsigned (a stranger who is told nothing gets no key to sign with): it proves nothing.
            let who = membership.member.map { "member \($0.id) (credential \($0.fingerprint)) is not one of its members: revoked, or its "
                + "members were lost; delete \(membership.keyPath ?? "the credential") to enrol again while the house allows it, or" }
                ?? "this house key (fingerprint \(membership.houseKey.fingerprint)) is not its own, or enrolment by the house key is closed;"
            log.warning("a \"not paired\" notice came from \(coordinator)'s address (unsigned: the coordinator's, or a "
                        + "stranger's): if the coordinator does not answer either, this machine is not a member of its house: "
                        + "\(who) pair it again: `tutti ctl pair` on the coordinator's machine, then here "
                        + "`tutti pair CODE --server http://COORDINATOR:8485`")
        case .notEnrolled:
            log.warning("the coordinator does not enrol this machine with the house key (enrolment is closed since a member was "
                        + "revoked, or the house is full): pair it: `tutti ctl pair` on the coordinator's machine, then here "
                        + "`tutti pair CODE --server http://COORDINATOR:8485`")
        case let .restarted(stream, was):
            log.info("the coordinator restarted (stream \(stream.hex(digits: 8)), was \(was.hex(digits: 8)))")
        }
    }

    /// Every 10 s, when the coordinator's address sent what did not count: how much.
    private func summarize(now: Int64) {
        guard now >= nextSummary else { return }
        nextSummary = now + 10_000_000_000
        guard (unauthenticated, session.stale) != reported else { return }
        log.info("clock port in the last 10 s: \(unauthenticated - reported.0) messages not signed with this member's key and "
                 + "\(session.stale - reported.1) stale or unasked-for (replayed) dropped")
        reported = (unauthenticated, session.stale)
    }
}
