import Testing
@testable import TuttiCore

/// A room's holes over the last hour, from the running totals of its reports.
@Suite("Holes in the last hour")
struct HoleCountTests {
    static let minute: Int64 = 60_000_000_000

    @Test func countsWhatTheLastHourAdded() {
        var count = HoleCount()
        count.record(7, at: 0)  // what the follower counted before the coordinator heard of it
        #expect(count.lastHour(now: 0) == 0)
        count.record(9, at: 10 * Self.minute)
        count.record(12, at: 50 * Self.minute)
        #expect(count.lastHour(now: 50 * Self.minute) == 5)
        // Reports every second keep a mark a minute at most.
        for s in 1...600 { count.record(12, at: 50 * Self.minute + Int64(s) * 1_000_000_000) }
        count.record(13, at: 75 * Self.minute)
        // An hour before 75 min is 15 min: the mark of 10 min (9) is the newest an hour old.
        #expect(count.lastHour(now: 75 * Self.minute) == 4)
        count.record(13, at: 200 * Self.minute)
        #expect(count.lastHour(now: 200 * Self.minute) == 0)
    }

    @Test func aFollowerThatStartsAgainCountsOnFromItsPredecessor() {
        var count = HoleCount()
        count.record(4, at: 0)
        count.record(6, at: Self.minute)
        count.record(1, at: 2 * Self.minute)  // restarted: 1 since
        #expect(count.lastHour(now: 2 * Self.minute) == 3)
    }
}
