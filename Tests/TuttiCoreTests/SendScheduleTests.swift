import Testing
import TuttiCore

@Suite("The sender's schedule")
struct SendScheduleTests {
    func at(_ ms: Int64) -> CoordinatorTime { CoordinatorTime(nanoseconds: ms * 1_000_000) }

    @Test func packetsGoTheLatencyAheadOfTheirPresentation() {
        var schedule = SendSchedule(latency: 150_000_000)
        #expect(!schedule.streaming)
        schedule.start(now: 0)
        #expect(schedule.decide(presentation: at(1_000), now: 800_000_000) == .wait(until: 850_000_000))
        #expect(schedule.decide(presentation: at(1_000), now: 850_000_000) == .send)
        // Late (a start's first packets, a slow decode): at once.
        #expect(schedule.decide(presentation: at(1_000), now: 990_000_000) == .send)
    }

    /// Nothing at or after the cut goes; the earliest of two cuts counts; a new epoch has none.
    @Test func nothingAtOrPastTheCutGoes() {
        var schedule = SendSchedule(latency: 150_000_000)
        schedule.start(now: 0)
        schedule.cut(at: at(2_000))
        schedule.cut(at: at(2_500))
        #expect(schedule.cut == at(2_000))
        #expect(schedule.decide(presentation: at(1_980), now: 1_900_000_000) == .send)
        #expect(!schedule.isPastCut(at(1_999)) && schedule.isPastCut(at(2_000)))
        #expect(schedule.decide(presentation: at(2_000), now: 1_900_000_000) == .over)
        #expect(!schedule.streaming)
        schedule.start(now: 0)
        #expect(schedule.streaming && schedule.cut == nil)
        #expect(schedule.decide(presentation: at(2_100), now: 1_960_000_000) == .send)
        schedule.rest()
        #expect(!schedule.streaming)
    }

    /// Stored audio goes ahead: the epoch's first `latency` at once, the rest of the
    /// lookahead eight times faster than real time, then at real time a lookahead ahead.
    /// Live audio keeps the latency in the same schedule.
    @Test func storedAudioGoesTheLookaheadAheadAfterABurst() {
        var schedule = SendSchedule(latency: 150_000_000, lookahead: 2_000_000_000)
        schedule.start(now: 1_000_000_000)
        // A start at 1 s, heard from 1.085 s: what is heard before 1.15 s goes at once.
        #expect(schedule.due(presentation: at(1_085), stored: true) <= 1_000_000_000)
        #expect(schedule.due(presentation: at(1_150), stored: true) == 1_000_000_000)
        // Then the burst: 800 ms of audio in 100 ms.
        #expect(schedule.due(presentation: at(1_950), stored: true) == 1_100_000_000)
        #expect(schedule.decide(presentation: at(1_950), now: 1_050_000_000, stored: true) == .wait(until: 1_100_000_000))
        #expect(schedule.decide(presentation: at(1_950), now: 1_100_000_000, stored: true) == .send)
        // It meets the lookahead at about 1.264 s (heard at 3.264 s); after that, real time.
        #expect(schedule.due(presentation: at(3_000), stored: true) == 1_231_250_000)
        #expect(schedule.due(presentation: at(5_000), stored: true) == 3_000_000_000)
        #expect(schedule.due(presentation: at(60_000), stored: true) == 58_000_000_000)
        // Live audio: the latency, whatever the lookahead.
        #expect(schedule.due(presentation: at(5_000), stored: false) == 4_850_000_000)
        // A new epoch bursts again from its own start.
        schedule.start(now: 10_000_000_000)
        #expect(schedule.due(presentation: at(10_885), stored: true) == 10_091_875_000)
        // Nothing of it goes past its cut, however far ahead it could go.
        schedule.cut(at: at(10_500))
        #expect(schedule.decide(presentation: at(10_500), now: 10_000_000_000, stored: true) == .over)
    }

    /// A lookahead at or below the latency is the latency: everything goes as live audio does.
    @Test func aShortLookaheadIsTheLatency() {
        var schedule = SendSchedule(latency: 150_000_000, lookahead: 0)
        #expect(schedule.lookahead == 150_000_000)
        schedule.start(now: 0)
        #expect(schedule.due(presentation: at(5_000), stored: true) == 4_850_000_000)
    }
}
