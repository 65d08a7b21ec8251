/// A member's session with its coordinator on the house's control channel (the clock
/// port), as a machine: what to send when, and what each authenticated message means.
///
/// A follower and a lyric screen keep their clocks locked to the coordinator's (a burst of
/// time exchanges at start, then as often as the estimate's bound needs); a follower that
/// asked for unicast renews its subscription every second, and at once when the
/// coordinator answers after a silence or when the clock's exchanges disagree with it (a
/// restarted coordinator learns of it at once); a room reports itself once a second. While
/// the coordinator does not answer it backs off to once a second and says so.
///
/// The machine reads no clock and touches no socket: its shell (`ClockClient`) passes the
/// time in, seals what it asks to send (with `cookie`), opens what arrives and passes on the
/// messages whose tag is the house's. Of those, a time answer counts only for a request of
/// the last second not answered before, any other only when its stamp is within 2 s of the
/// coordinator's clock (a replay is older): the rest are counted in `stale`.
///
/// Requests are due in a window around their time (a quarter of the interval either
/// side), so that a shell which wakes for other reasons (a follower's device asking for
/// audio every 20 ms) sends them on those wakes instead of waking for them alone.
public struct CoordinatorSession: Sendable {
    /// What the shell is to do.
    public enum Action: Equatable, Sendable {
        /// Send a time request: stamp the local time just before sending it as its
        /// originate, and tell `requestSent(originate:)`.
        case requestTime
        /// Send this message, sealed with `cookie`.
        case send(ControlMessage)
        /// Send the room's report (the shell knows how the room plays).
        case sendReport
        /// A time exchange, for the clock estimator.
        case sample(ClockSample)
        /// The room's settings; `stream`: the SSRC of its zone's stream, the only one it is to
        /// play (0: any).
        case settings(version: UInt32, volume: Double, muted: Bool, outputDelayMicroseconds: UInt32, stream: UInt32)
        case epochEnd(UInt32, at: CoordinatorTime)
        /// Play a calibration probe (`CalibrationProbe`) from `at`.
        case probe(seed: UInt32, level: Double, at: CoordinatorTime)
        /// The coordinator made this holder of the house key member `member`: open its
        /// secret (sealed with a key of the house key's), keep it, and sign with it from now on.
        case enrolled(member: UInt16, sealed: [UInt8])
        /// The stream's key of `generation`, sealed for this member: open it, use it once the
        /// stream is sealed with it, and tell `holdKey(generation:)`.
        case streamKey(generation: UInt32, sealed: [UInt8])
        /// Something to tell the person running this member.
        case notice(Notice)
    }

    public enum Notice: Equatable, Sendable {
        /// No answer for 1.5 s; retrying at this interval (ns), doubling to a second.
        case notAnswering(retryInterval: Int64)
        case answersAgain
        /// The coordinator says this member's house key is not its own (at most every 10 s).
        case notPaired
        /// The coordinator's stream has a new SSRC: it restarted.
        case restarted(stream: UInt32, was: UInt32)
        /// Ten requests to enrol had no answer: enrolment is closed (a member was revoked
        /// since), or the house has all the members it takes.
        case notEnrolled
    }

    /// The stream's port when this member receives by unicast; nil on multicast.
    public private(set) var unicastPort: UInt16?
    /// Whether this member is a room (it reports itself) or a screen (it does not).
    public let reportsRoom: Bool
    /// Messages from the coordinator's address, signed, that did not count (stale,
    /// replayed or unasked-for).
    public private(set) var stale = 0

    /// The cookie the shell seals this member's messages with.
    public var cookie: UInt64 { link.cookie }

    private var link = CoordinatorLink()
    private var exchanges = 0
    private var lastAnswer: Int64?
    private var firstRequest: Int64?
    private var backoff: Int64 = 500_000_000
    private var complained = false
    // Due at once: whatever the local clock reads (it may be negative: a test's, or one
    // offset on purpose), the first turn asks.
    private var nextRequest: Int64 = .min
    /// How early or late (ns) the next request may go: a quarter of its interval.
    private var requestSlack: Int64 = 0
    private var nextSubscribe: Int64 = .min
    private var nextReport: Int64 = .min
    private var lastNotPaired: Int64?
    private var streamSSRC: UInt32?
    /// The newest room-settings version taken.
    private var settingsVersion: UInt32?
    /// The stream the coordinator's settings named for this room (0: any), which a
    /// subscription asks for.
    public private(set) var stream: UInt32 = 0
    private var lock = ClockLock(uncertainty: nil, suspect: false)
    /// While this member holds only the house key: the name it enrols as, and the nonce its
    /// requests carry (the answer echoes it).
    public private(set) var enrollingAs: String?
    private let enrollNonce: UInt64
    private var nextEnroll: Int64 = .min
    private var enrollRequests = 0
    /// The stream key's generation this member holds (`ControlMessage.noGeneration`: none),
    /// and the newest the coordinator has (its messages' headers say).
    public private(set) var heldGeneration: UInt32
    private var newestGeneration: UInt32?
    private var nextKeyRequest: Int64 = .min
    /// A key just taken: tell the coordinator with the next turn.
    private var keyTaken = false
    /// The last sequence number given (`sequence(at:)`).
    private var lastSequence: UInt64 = 0

    static let reportInterval: Int64 = 1_000_000_000
    static let subscribeInterval: Int64 = 1_000_000_000
    static let maximumBackoff: Int64 = 1_000_000_000
    /// The coordinator silent this long: say so, and back off.
    static let silenceBeforeBackoff: Int64 = 1_500_000_000
    /// Answers come at least every 250 ms plus a round trip; a longer gap is an outage.
    static let silenceBeforeResubscribing: Int64 = 600_000_000

    /// `enrollAs`: for a member that holds the house key alone, the name to enrol as, with
    /// `nonce` (random) in its requests. `heldGeneration`: the stream key's generation it
    /// holds (0: the house key's own, which a holder of the house key derives).
    public init(unicastPort: UInt16?, reportsRoom: Bool, enrollAs: String? = nil, nonce: UInt64 = 0, heldGeneration: UInt32 = 0) {
        self.unicastPort = unicastPort
        self.reportsRoom = reportsRoom
        enrollingAs = enrollAs
        enrollNonce = nonce
        self.heldGeneration = heldGeneration
    }

    /// The sequence number of a message (not a time request) sent at local `now`: the
    /// coordinator's clock then, in ns, as the last answer read it, and one more than the
    /// last at least. It goes forward across this member's restarts as the coordinator's
    /// clock does, so the coordinator takes each number once and refuses a replay.
    public mutating func sequence(at now: Int64) -> UInt64 {
        let coordinatorNow = link.coordinatorTime(at: now).map { UInt64(clamping: $0) } ?? 0
        lastSequence = max(lastSequence + 1, coordinatorNow)
        return lastSequence
    }

    /// This member opened the stream key of `generation` and uses it: the coordinator hears
    /// so with the next turn.
    public mutating func holdKey(generation: UInt32) {
        heldGeneration = generation
        keyTaken = true
    }

    /// Reports the room at once (it heard another stream than its own, where its own is
    /// silent: its zone's stream may be new, and the coordinator's answer, the settings
    /// that name it, comes to a report).
    public mutating func reportSoon(now: Int64) {
        if reportsRoom, lastAnswer != nil { nextReport = min(nextReport, now) }
    }

    /// From now on, ask for the stream by unicast on `port` (a follower that multicast
    /// does not reach): the subscription goes with the next turn after an answer.
    public mutating func receiveByUnicast(port: UInt16) {
        unicastPort = port
        nextSubscribe = .min
    }

    /// What is due at `now`, given how the clock stands (it sets the pace of the
    /// exchanges). The time request, when due, comes first: it is stamped as it is sent.
    public mutating func turn(now: Int64, lock: ClockLock) -> [Action] {
        // Exchanges that start to disagree: the coordinator may have restarted and
        // forgotten this member. Subscribe now, not at the next turn.
        if lock.suspect, !self.lock.suspect { nextSubscribe = min(nextSubscribe, now) }
        self.lock = lock
        var actions: [Action] = []
        if now >= nextRequest - requestSlack {
            if firstRequest == nil { firstRequest = now }
            actions.append(.requestTime)
            var interval = ExchangeSchedule.interval(after: exchanges, uncertainty: lock.uncertainty, suspect: lock.suspect)
            if now - (lastAnswer ?? firstRequest ?? now) > Self.silenceBeforeBackoff {
                if !complained {
                    actions.append(.notice(.notAnswering(retryInterval: backoff)))
                    complained = true
                }
                interval = backoff
                backoff = min(backoff * 2, Self.maximumBackoff)
                nextSubscribe = min(nextSubscribe, now + interval)
            }
            nextRequest = now + interval
            requestSlack = interval / 4
            exchanges += 1
        }
        // Subscriptions and reports count only with the coordinator's cookie: after an answer.
        if let port = unicastPort, now >= nextSubscribe, link.cookie != 0 {
            actions.append(.send(.subscribe(rtpPort: port, leaseSeconds: 30, stream: stream)))
            nextSubscribe = now + Self.subscribeInterval
        }
        if reportsRoom, now >= nextReport, lastAnswer != nil {
            actions.append(.sendReport)
            nextReport = now + Self.reportInterval
        }
        if let name = enrollingAs, link.cookie != 0, now >= nextEnroll {
            actions.append(.send(.enroll(nonce: enrollNonce, name: name)))
            nextEnroll = now + Self.keyInterval
            enrollRequests += 1
            if enrollRequests == 10 { actions.append(.notice(.notEnrolled)) }
        }
        if enrollingAs == nil, link.cookie != 0 {
            if keyTaken || (newestGeneration.map { $0 != heldGeneration } ?? false) && now >= nextKeyRequest {
                actions.append(.send(.keyRequest(generation: heldGeneration)))
                nextKeyRequest = now + Self.keyInterval
                keyTaken = false
            }
        }
        return actions
    }

    static let keyInterval: Int64 = 1_000_000_000

    /// The time request the last turn asked for went out, stamped `originate` (local ns).
    public mutating func requestSent(originate: Int64) { link.sent(originate: originate) }

    /// The latest the shell should turn again (local ns); it may turn earlier.
    public var nextTurn: Int64 {
        var wake = nextRequest + requestSlack
        if unicastPort != nil, link.cookie != 0 { wake = min(wake, nextSubscribe) }
        if reportsRoom, lastAnswer != nil { wake = min(wake, nextReport) }
        if link.cookie != 0 {
            if enrollingAs != nil { wake = min(wake, nextEnroll) }
            else if keyTaken || newestGeneration.map({ $0 != heldGeneration }) ?? false { wake = min(wake, nextKeyRequest) }
        }
        return wake
    }

    /// A message from the coordinator whose tag was this member's key's (`notPaired` carries
    /// none), with the stamp of its header, the stream key's newest generation its header
    /// names (nil: not said), and when it arrived here.
    public mutating func receive(_ message: ControlMessage, stamp: UInt64, generation: UInt32? = nil, arrived: LocalTime) -> [Action] {
        let t4 = arrived.nanoseconds
        if let generation, message != .notPaired { newestGeneration = generation }
        switch message {
        case .notPaired:
            guard lastNotPaired.map({ t4 - $0 > 10_000_000_000 }) ?? true else { return [] }
            lastNotPaired = t4
            return [.notice(.notPaired)]
        case let .timeResponse(originate, receive, transmit, cookie):
            guard link.answer(originate: originate, transmit: transmit.coordinatorTime, cookie: cookie, arrived: arrived) else {
                stale += 1
                return []
            }
            let sample = ClockSample(t1: LocalTime(nanoseconds: Int64(bitPattern: originate)), t2: receive.coordinatorTime,
                                     t3: transmit.coordinatorTime, t4: arrived)
            guard sample.t1 <= sample.t4, sample.t4 - sample.t1 < 1_000_000_000 else { return [] }
            var actions: [Action] = []
            if complained { actions.append(.notice(.answersAgain)) }
            complained = false
            backoff = 500_000_000
            // Back after a silence: the coordinator may have restarted and forgotten this
            // member. Subscribe now, not at the next turn.
            if lastAnswer.map({ t4 - $0 > Self.silenceBeforeResubscribing }) ?? false { nextSubscribe = min(nextSubscribe, t4) }
            if lastAnswer == nil {
                // The first answer: subscriptions and reports are due from now on.
                nextSubscribe = max(nextSubscribe, t4)
                nextReport = max(nextReport, t4)
            }
            lastAnswer = t4
            actions.append(.sample(sample))
            return actions
        case .timeRequest, .subscribe, .roomReport, .enroll, .keyRequest:
            stale += 1  // a member's message, not the coordinator's
            return []
        case .roomSettings, .epochEnd, .subscribed, .enrolled, .streamKey, .probe:
            break
        }
        guard link.isFresh(stamp: NTPTimestamp(rawValue: stamp).coordinatorTime, arrived: arrived) else {
            stale += 1
            return []
        }
        switch message {
        case let .roomSettings(version, volume, muted, delay, stream):
            // Settings go forward only: an older version is a replay (within the stamp's
            // freshness) or one overtaken on the way.
            if let applied = settingsVersion, applied.isAfter(version) {
                stale += 1
                return []
            }
            // The same again (sent until this room's report says it took them): taken
            // already, so only confirmed again.
            if settingsVersion == version {
                nextReport = min(nextReport, t4 + 20_000_000)
                return []
            }
            settingsVersion = version
            nextReport = min(nextReport, t4 + 20_000_000)  // confirm soon
            if stream != self.stream {
                // Another zone's stream: by unicast, ask for it now (the coordinator stops
                // sending the other one).
                self.stream = stream
                nextSubscribe = min(nextSubscribe, t4)
            }
            return [.settings(version: version, volume: volume, muted: muted, outputDelayMicroseconds: delay, stream: stream)]
        case let .epochEnd(epoch, at):
            return [.epochEnd(epoch, at: at.coordinatorTime)]
        case let .probe(seed, level, at):
            return [.probe(seed: seed, level: level, at: at.coordinatorTime)]
        case let .enrolled(nonce, member, sealed):
            guard enrollingAs != nil, nonce == enrollNonce, member != 0 else {
                stale += 1
                return []
            }
            enrollingAs = nil
            nextReport = min(nextReport, t4)
            return [.enrolled(member: member, sealed: sealed)]
        case let .streamKey(generation, sealed):
            guard generation != heldGeneration else { return [] }
            return [.streamKey(generation: generation, sealed: sealed)]
        case let .subscribed(ssrc, _):
            defer { streamSSRC = ssrc }
            // A new SSRC the room did not ask for (its zone's is another): the coordinator restarted.
            if let known = streamSSRC, known != ssrc, ssrc != stream { return [.notice(.restarted(stream: ssrc, was: known))] }
            return []
        default:
            return []
        }
    }
}

/// How a member's clock stands, as far as the pace of its exchanges goes.
public struct ClockLock: Equatable, Sendable {
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
