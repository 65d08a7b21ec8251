import Testing
import TuttiCore

@Suite("The sender's schedule")
struct SendScheduleTests {
    func at(_ ms: Int64) -> CoordinatorTime { CoordinatorTime(nanoseconds: ms * 1_000_000) }

    @Test func packetsGoTheLatencyAheadOfTheirPresentation() {
        var schedule = SendSchedule(latency: 150_000_000)
        #expect(!schedule.streaming)
        schedule.start()
        #expect(schedule.decide(presentation: at(1_000), now: 800_000_000) == .wait(until: 850_000_000))
        #expect(schedule.decide(presentation: at(1_000), now: 850_000_000) == .send)
        // Late (a start's first packets, a slow decode): at once.
        #expect(schedule.decide(presentation: at(1_000), now: 990_000_000) == .send)
    }

    /// Nothing at or after the cut goes; the earliest of two cuts counts; a new epoch has none.
    @Test func nothingAtOrPastTheCutGoes() {
        var schedule = SendSchedule(latency: 150_000_000)
        schedule.start()
        schedule.cut(at: at(2_000))
        schedule.cut(at: at(2_500))
        #expect(schedule.cut == at(2_000))
        #expect(schedule.decide(presentation: at(1_980), now: 1_900_000_000) == .send)
        #expect(!schedule.isPastCut(at(1_999)) && schedule.isPastCut(at(2_000)))
        #expect(schedule.decide(presentation: at(2_000), now: 1_900_000_000) == .over)
        #expect(!schedule.streaming)
        schedule.start()
        #expect(schedule.streaming && schedule.cut == nil)
        #expect(schedule.decide(presentation: at(2_100), now: 1_960_000_000) == .send)
        schedule.rest()
        #expect(!schedule.streaming)
    }
}
