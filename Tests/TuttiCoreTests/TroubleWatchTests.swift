import Testing
@testable import TuttiCore

@Suite struct TroubleWatchTests {
    static func counts(lost: Int = 0, concealed: Int = 0, received: Int = 0, retransmitted: Int = 0, unsealed: Int = 0) -> TroubleWatch.Counts {
        var s = PlayoutStatistics()
        s.lost = lost
        s.concealedFrames = concealed
        s.packetsReceived = received
        s.retransmitted = retransmitted
        return TroubleWatch.Counts(s, unsealed: unsealed)
    }

    @Test func quietWhilePlayingCleanlyEvenWhenTheNetworkLosesWhatRetransmissionMends() {
        var watch = TroubleWatch()
        #expect(watch.judge(Self.counts(received: 250), clockSuspect: false) == .quiet)
        #expect(watch.judge(Self.counts(received: 500, retransmitted: 12), clockSuspect: false) == .quiet)
    }

    @Test func aPeriodWithLossesIsTroubleThenOneLineWhenItIsOver() {
        var watch = TroubleWatch()
        _ = watch.judge(Self.counts(received: 250), clockSuspect: false)
        #expect(watch.judge(Self.counts(lost: 3, concealed: 3, received: 497), clockSuspect: false)
            == .trouble("3 lost, 3 frames concealed"))
        // Counted per period, not since the start.
        #expect(watch.judge(Self.counts(lost: 4, concealed: 3, received: 746), clockSuspect: false) == .trouble("1 lost"))
        #expect(watch.judge(Self.counts(lost: 4, concealed: 3, received: 996), clockSuspect: false) == .recovered)
        #expect(watch.judge(Self.counts(lost: 4, concealed: 3, received: 1246), clockSuspect: false) == .quiet)
    }

    @Test func stepsWhileSettlingAfterAStartAreNoTroubleButLaterTheyAre() {
        var watch = TroubleWatch()
        var s = PlayoutStatistics()
        s.steps = 3
        #expect(watch.judge(TroubleWatch.Counts(s, unsealed: 0), clockSuspect: false, settling: true) == .quiet)
        s.steps = 4
        #expect(watch.judge(TroubleWatch.Counts(s, unsealed: 0), clockSuspect: false) == .trouble("1 steps"))
    }

    @Test func strangersPacketsAndADoubtfulClockAreTrouble() {
        var watch = TroubleWatch()
        #expect(watch.judge(Self.counts(unsealed: 7), clockSuspect: false) == .trouble("7 unsealed"))
        #expect(watch.judge(Self.counts(unsealed: 7), clockSuspect: true) == .trouble("the clock in doubt"))
        #expect(watch.judge(Self.counts(unsealed: 7), clockSuspect: false) == .recovered)
    }
}

@Suite struct MulticastWatchTests {
    @Test func silenceForThreeSecondsWithTheClockLockedAsksForUnicastOnce() {
        var watch = MulticastWatch()
        // Not locked yet: no verdict, however long.
        #expect(watch.check(now: 0, locked: false, heardStream: false) == false)
        #expect(watch.check(now: 10_000_000_000, locked: false, heardStream: false) == false)
        #expect(watch.check(now: 11_000_000_000, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 13_900_000_000, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 14_000_000_000, locked: true, heardStream: false) == true)
        #expect(watch.check(now: 20_000_000_000, locked: true, heardStream: false) == false)
    }

    @Test func aPacketSettlesItForGood() {
        var watch = MulticastWatch()
        #expect(watch.check(now: 0, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 1_000_000_000, locked: true, heardStream: true) == false)
        #expect(watch.check(now: 60_000_000_000, locked: true, heardStream: false) == false)
    }

    @Test func losingTheLockStartsTheWaitAgain() {
        var watch = MulticastWatch()
        #expect(watch.check(now: 0, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 2_000_000_000, locked: false, heardStream: false) == false)
        #expect(watch.check(now: 3_000_000_000, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 5_900_000_000, locked: true, heardStream: false) == false)
        #expect(watch.check(now: 6_000_000_000, locked: true, heardStream: false) == true)
    }
}
