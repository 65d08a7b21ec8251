import Testing
@testable import TuttiCore

/// A member's session with its coordinator, driven by hand: the pace of its exchanges, its
/// subscriptions and reports, its backoff, and which of the coordinator's messages count.
@Suite("Coordinator session")
struct CoordinatorSessionTests {
    static let ms: Int64 = 1_000_000
    static let locked = ClockLock(uncertainty: 15_000, suspect: false)
    /// The coordinator's clock runs 7 s ahead of this member's.
    static let coordinatorAhead: Int64 = 7_000_000_000

    /// A session that has sent its burst and had every request answered 200 µs later.
    static func answered(unicast: UInt16? = nil, room: Bool = true) -> (CoordinatorSession, Int64) {
        var session = CoordinatorSession(unicastPort: unicast, reportsRoom: room)
        var now: Int64 = 1_000 * ms
        var requests = 0
        while requests < ExchangeSchedule.burst {
            if exchange(&session, at: now).first == .requestTime { requests += 1 }
            now = session.nextTurn
        }
        return (session, now)
    }

    /// Turns at `now`, sends the request it asks for and answers it 200 µs later; returns
    /// what the turn asked for.
    @discardableResult
    static func exchange(_ session: inout CoordinatorSession, at now: Int64, lock: ClockLock = locked) -> [CoordinatorSession.Action] {
        let actions = session.turn(now: now, lock: lock)
        if actions.first == .requestTime {
            session.requestSent(originate: now)
            _ = session.receive(answer(to: now, cookie: 42), stamp: 0, arrived: LocalTime(nanoseconds: now + 200_000))
        }
        return actions
    }

    static func answer(to originate: Int64, cookie: UInt64) -> ControlMessage {
        let at = NTPTimestamp(CoordinatorTime(nanoseconds: originate + 100_000 + coordinatorAhead))
        return .timeResponse(originate: UInt64(bitPattern: originate), receive: at, transmit: at, cookie: cookie)
    }

    /// A coordinator message stamped with its clock `ms` milliseconds after `local`.
    static func stamp(at local: Int64) -> UInt64 { NTPTimestamp(CoordinatorTime(nanoseconds: local + coordinatorAhead)).rawValue }

    @Test func theBurstIsAMillisecondApartThenThePaceFollowsTheBound() {
        var session = CoordinatorSession(unicastPort: nil, reportsRoom: false)
        var now: Int64 = 1_000 * Self.ms
        var sent: [Int64] = []
        while sent.count < ExchangeSchedule.burst + 3 {
            if Self.exchange(&session, at: now).first == .requestTime { sent.append(now) }
            now = session.nextTurn
        }
        let gaps = zip(sent.dropFirst(), sent).map { $0 - $1 }
        // Each turn is at the latest moment allowed: a quarter of the interval late.
        #expect(gaps[0] == 1_250_000)
        // A 15 µs bound (a quiet path): a pair every 40 ms (as many exchanges as one every
        // 20 ms), each turned a quarter of its interval late at the latest.
        #expect(gaps[ExchangeSchedule.burst] == 1_250_000 && gaps[ExchangeSchedule.burst + 1] == 39 * Self.ms + 39 * Self.ms / 4,
                "15 µs bound: pairs a millisecond apart every 40 ms: \(gaps.suffix(2))")
        // A 30 µs bound (a jittery path): single exchanges every 10 ms.
        #expect(ExchangeSchedule.interval(after: ExchangeSchedule.burst, uncertainty: 30_000) == 10 * Self.ms)
        #expect(ExchangeSchedule.interval(after: ExchangeSchedule.burst + 1, uncertainty: 30_000) == 10 * Self.ms)
        // Under a 10 µs bound: pairs a millisecond apart, a pair every 250 ms.
        var pairs: [Int64] = []
        for _ in 0..<4 {
            #expect(Self.exchange(&session, at: now, lock: ClockLock(uncertainty: 5_000, suspect: false)).first == .requestTime)
            pairs.append(session.nextTurn - now)
            now = session.nextTurn
        }
        let short = ExchangeSchedule.pairGap + ExchangeSchedule.pairGap / 4, long = 250 * Self.ms - ExchangeSchedule.pairGap
        #expect(Set(pairs) == [short, long + long / 4] && pairs[0] != pairs[1] && pairs[1] != pairs[2],
                "5 µs bound: pairs a millisecond apart every 250 ms, each turned a quarter late: \(pairs)")
    }

    @Test func theFirstTurnAsksWhateverTheLocalClockReads() {
        for start: Int64 in [-3_000_000_000, 0, 5_000_000_000] {
            var session = CoordinatorSession(unicastPort: 6000, reportsRoom: true)
            #expect(session.nextTurn <= start)
            #expect(session.turn(now: start, lock: Self.locked) == [.requestTime], "at \(start)")
            session.requestSent(originate: start)
            _ = session.receive(Self.answer(to: start, cookie: 3), stamp: 0, arrived: LocalTime(nanoseconds: start + 200_000))
            let next = session.turn(now: start + 300_000, lock: Self.locked)
            #expect(next.contains(.sendReport) && next.contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30))), "at \(start)")
        }
    }

    @Test func aRequestRidesAnEarlierWakeWithinAQuarterOfItsInterval() {
        var (session, now) = Self.answered()
        let jittery = ClockLock(uncertainty: 30_000, suspect: false)  // single exchanges, 10 ms apart
        Self.exchange(&session, at: now, lock: jittery)
        // Due 10 ms later: a wake 8 ms later sends it (within 2.5 ms early), one 7 ms later does not.
        #expect(!session.turn(now: now + 7 * Self.ms, lock: jittery).contains(.requestTime))
        #expect(session.turn(now: now + 8 * Self.ms, lock: jittery).first == .requestTime)
        now += 8 * Self.ms
        #expect(session.nextTurn <= now + 12_500_000)
    }

    @Test func reportsComeOnceASecondAfterTheFirstAnswerAndSoonAfterNewSettings() {
        var session = CoordinatorSession(unicastPort: nil, reportsRoom: true)
        let start: Int64 = 1_000 * Self.ms
        #expect(session.turn(now: start, lock: Self.locked) == [.requestTime], "no report before an answer")
        session.requestSent(originate: start)
        _ = session.receive(Self.answer(to: start, cookie: 9), stamp: 0, arrived: LocalTime(nanoseconds: start + 200_000))
        #expect(session.cookie == 9)
        #expect(session.turn(now: start + Self.ms, lock: Self.locked).contains(.sendReport))
        #expect(!session.turn(now: start + 500 * Self.ms, lock: Self.locked).contains(.sendReport))
        let settings = ControlMessage.roomSettings(version: 3, volume: 0.5, muted: false, outputDelayMicroseconds: 1_500)
        #expect(session.receive(settings, stamp: Self.stamp(at: start + 600 * Self.ms), arrived: LocalTime(nanoseconds: start + 600 * Self.ms))
            == [.settings(version: 3, volume: 0.5, muted: false, outputDelayMicroseconds: 1_500, stream: 0)])
        #expect(session.nextTurn <= start + 620 * Self.ms, "the new settings are confirmed within 20 ms")
        // An older version (a replay within the freshness window, or overtaken) is not taken;
        // the same one again (sent until confirmed) is not applied twice, only confirmed again.
        let older = ControlMessage.roomSettings(version: 2, volume: 1, muted: false, outputDelayMicroseconds: 0)
        let stale = session.stale
        #expect(session.receive(older, stamp: Self.stamp(at: start + 610 * Self.ms), arrived: LocalTime(nanoseconds: start + 610 * Self.ms)).isEmpty)
        #expect(session.stale == stale + 1)
        #expect(session.receive(settings, stamp: Self.stamp(at: start + 611 * Self.ms), arrived: LocalTime(nanoseconds: start + 611 * Self.ms)).isEmpty)
        #expect(session.turn(now: start + 620 * Self.ms, lock: Self.locked).contains(.sendReport))
        var screen = CoordinatorSession(unicastPort: nil, reportsRoom: false)
        #expect(!screen.turn(now: start, lock: Self.locked).contains(.sendReport), "a screen reports nothing")
    }

    @Test func unicastSubscribesEverySecondOnceItHasACookie() {
        var session = CoordinatorSession(unicastPort: 6000, reportsRoom: false)
        let start: Int64 = 1_000 * Self.ms
        #expect(session.turn(now: start, lock: Self.locked) == [.requestTime], "no subscription before a cookie")
        session.requestSent(originate: start)
        _ = session.receive(Self.answer(to: start, cookie: 5), stamp: 0, arrived: LocalTime(nanoseconds: start + 200_000))
        #expect(session.turn(now: start + Self.ms, lock: Self.locked).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30))))
        #expect(!session.turn(now: start + 900 * Self.ms, lock: Self.locked).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30))))
        // Exchanges that start to disagree: the coordinator may have restarted; subscribe now.
        let suspect = ClockLock(uncertainty: 15_000, suspect: true)
        #expect(session.turn(now: start + 901 * Self.ms, lock: suspect).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30))))
    }

    /// Settings that name another zone's stream: by unicast the room asks for it at once
    /// (and from then on), and its answer is no sign of a restart; a stream it did not ask
    /// for is.
    @Test func aRoomMovedToAnotherZoneSubscribesToItsStreamAtOnce() {
        var session = CoordinatorSession(unicastPort: 6000, reportsRoom: true)
        let start: Int64 = 1_000 * Self.ms
        _ = session.turn(now: start, lock: Self.locked)
        session.requestSent(originate: start)
        _ = session.receive(Self.answer(to: start, cookie: 5), stamp: 0, arrived: LocalTime(nanoseconds: start + 200_000))
        #expect(session.turn(now: start + Self.ms, lock: Self.locked).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30, stream: 0))))
        let at = start + 300 * Self.ms
        _ = session.receive(.subscribed(ssrc: 0xAAAA, payloadType: 96), stamp: Self.stamp(at: at), arrived: LocalTime(nanoseconds: at))
        let moved = ControlMessage.roomSettings(version: 2, volume: 1, muted: false, outputDelayMicroseconds: 0, stream: 0xBEEF)
        #expect(session.receive(moved, stamp: Self.stamp(at: at), arrived: LocalTime(nanoseconds: at))
            == [.settings(version: 2, volume: 1, muted: false, outputDelayMicroseconds: 0, stream: 0xBEEF)])
        #expect(session.stream == 0xBEEF)
        #expect(session.turn(now: at + Self.ms, lock: Self.locked).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30, stream: 0xBEEF))),
                "not a second later: now")
        #expect(session.receive(.subscribed(ssrc: 0xBEEF, payloadType: 96), stamp: Self.stamp(at: at), arrived: LocalTime(nanoseconds: at + 2 * Self.ms))
            .isEmpty, "the stream it asked for")
        #expect(session.receive(.subscribed(ssrc: 0x1234, payloadType: 96), stamp: Self.stamp(at: at), arrived: LocalTime(nanoseconds: at + 3 * Self.ms))
            == [.notice(.restarted(stream: 0x1234, was: 0xBEEF))], "a stream it did not ask for: the coordinator restarted")
        // Hearing only other zones' streams, the room reports at once.
        _ = session.turn(now: at + 10 * Self.ms, lock: Self.locked)
        session.reportSoon(now: at + 20 * Self.ms)
        #expect(session.turn(now: at + 20 * Self.ms, lock: Self.locked).contains(.sendReport))
    }

    @Test func aSilentCoordinatorIsToldOnceAndAskedLessOften() {
        var (session, now) = Self.answered()
        var notices: [CoordinatorSession.Notice] = []
        var requests: [Int64] = []
        let end = now + 6_000 * Self.ms
        while now < end {
            for action in session.turn(now: now, lock: Self.locked) {
                if case let .notice(notice) = action { notices.append(notice) }
                if action == .requestTime {
                    requests.append(now)
                    session.requestSent(originate: now)
                }
            }
            now = session.nextTurn
        }
        #expect(notices == [.notAnswering(retryInterval: 500 * Self.ms)])
        let gaps = zip(requests.dropFirst(), requests).map { $0 - $1 }
        #expect(gaps.suffix(2).allSatisfy { $0 >= 1_000 * Self.ms }, "backed off to a second: \(gaps.suffix(4))")
        // An answer again: said once, and the pace comes back.
        let last = requests.last!
        let actions = session.receive(Self.answer(to: last, cookie: 42), stamp: 0, arrived: LocalTime(nanoseconds: last + 300_000))
        #expect(actions.first == .notice(.answersAgain))
        #expect(actions.count == 2)
    }

    @Test func onlyAnswersToOurOwnRecentRequestsCountOnce() {
        var (session, now) = Self.answered()
        #expect(session.turn(now: now, lock: Self.locked).first == .requestTime)
        session.requestSent(originate: now)
        let answer = Self.answer(to: now, cookie: 42)
        let arrived = LocalTime(nanoseconds: now + 200_000)
        guard case .sample = session.receive(answer, stamp: 0, arrived: arrived).first else {
            Issue.record("the answer was not taken")
            return
        }
        let before = session.stale
        #expect(session.receive(answer, stamp: 0, arrived: arrived).isEmpty, "a replayed answer")
        #expect(session.receive(Self.answer(to: now - 5 * Self.ms, cookie: 42), stamp: 0, arrived: arrived).isEmpty, "never asked")
        #expect(session.stale == before + 2)
    }

    @Test func theCoordinatorsMessagesCountOnlyWhenFresh() {
        var (session, now) = Self.answered()
        now += 10 * Self.ms
        let at = NTPTimestamp(CoordinatorTime(nanoseconds: now + Self.coordinatorAhead + 100 * Self.ms))
        let end = ControlMessage.epochEnd(epoch: 4, at: at)
        #expect(session.receive(end, stamp: Self.stamp(at: now), arrived: LocalTime(nanoseconds: now)) == [.epochEnd(4, at: at.coordinatorTime)])
        let before = session.stale
        #expect(session.receive(end, stamp: Self.stamp(at: now - 3_000 * Self.ms), arrived: LocalTime(nanoseconds: now)).isEmpty,
                "stamped 3 s ago: a replay")
        #expect(session.receive(.timeRequest(originate: 1), stamp: Self.stamp(at: now), arrived: LocalTime(nanoseconds: now)).isEmpty,
                "a member's message, not the coordinator's")
        #expect(session.stale == before + 2)
        var fresh = CoordinatorSession(unicastPort: nil, reportsRoom: true)
        #expect(fresh.receive(end, stamp: Self.stamp(at: now), arrived: LocalTime(nanoseconds: now)).isEmpty,
                "before any answer nothing can be dated")
    }

    @Test func aNewStreamSaysTheCoordinatorRestartedAndNotPairedIsSaidEveryTenSeconds() {
        var (session, now) = Self.answered(unicast: 6000)
        let arrived = LocalTime(nanoseconds: now)
        #expect(session.receive(.subscribed(ssrc: 1, payloadType: 96), stamp: Self.stamp(at: now), arrived: arrived).isEmpty)
        #expect(session.receive(.subscribed(ssrc: 1, payloadType: 96), stamp: Self.stamp(at: now), arrived: arrived).isEmpty)
        #expect(session.receive(.subscribed(ssrc: 2, payloadType: 96), stamp: Self.stamp(at: now), arrived: arrived)
            == [.notice(.restarted(stream: 2, was: 1))])
        #expect(session.receive(.notPaired, stamp: 0, arrived: arrived) == [.notice(.notPaired)])
        now += 5_000 * Self.ms
        #expect(session.receive(.notPaired, stamp: 0, arrived: LocalTime(nanoseconds: now)).isEmpty)
        now += 6_000 * Self.ms
        #expect(session.receive(.notPaired, stamp: 0, arrived: LocalTime(nanoseconds: now)) == [.notice(.notPaired)])
    }

    @Test func anAnswerAfterASilenceResubscribesAtOnce() {
        var (session, now) = Self.answered(unicast: 6000)
        // The next answer comes 0.7 s after the last one (an outage): subscribe now.
        now += 700 * Self.ms
        _ = session.turn(now: now, lock: Self.locked)
        session.requestSent(originate: now)
        _ = session.receive(Self.answer(to: now, cookie: 42), stamp: 0, arrived: LocalTime(nanoseconds: now + 200_000))
        #expect(session.nextTurn <= now + 200_000)
        #expect(session.turn(now: now + 300_000, lock: Self.locked).contains(.send(.subscribe(rtpPort: 6000, leaseSeconds: 30))))
    }
}
