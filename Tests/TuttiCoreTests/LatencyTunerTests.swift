import Testing
import TuttiCore

/// A live zone's latency fitted to its rooms' network, from the headroom they report, and
/// the lead each room measures of the packets it gets.
@Suite("A latency that fits the network")
struct LatencyTunerTests {
    static func ms(_ t: Int64) -> Int64 { t * 1_000_000 }
    static func s(_ t: Int64) -> Int64 { t * 1_000_000_000 }

    @Test func aStallRaisesTheLatencyAtOnceAndACalmMinuteBringsItBack() {
        var tuner = LatencyTuner(floor: Self.ms(150), cap: Self.ms(1_000))
        // A calm network: packets come 100 ms before they are needed.
        for t in 0..<20 {
            let changed = tuner.observe(headroom: Self.ms(100), inForce: Self.ms(150), now: Self.s(Int64(t)))
            #expect(!changed)
        }
        #expect(tuner.target == Self.ms(150))
        // A stall held packets 200 ms: the last came 100 ms too late. The zone needs 150 +
        // 100 + the margin, in whole steps.
        let stalled = tuner.observe(headroom: -Self.ms(100), inForce: Self.ms(150), now: Self.s(20))
        #expect(stalled)
        #expect(tuner.target == Self.ms(275) && LatencyTuner.margin == Self.ms(10) && LatencyTuner.step == Self.ms(25))
        // The latency grew to it: the rooms have as much more headroom, and need no more.
        var changes = 0
        for t in 21..<70 where tuner.observe(headroom: Self.ms(210), inForce: Self.ms(275), now: Self.s(Int64(t))) { changes += 1 }
        // Another stall 30 s later, 8 ms longer than the first, needs no new step.
        if tuner.observe(headroom: -Self.ms(108) + Self.ms(125), inForce: Self.ms(275), now: Self.s(50)) { changes += 1 }
        #expect(changes == 0 && tuner.target == Self.ms(275))
        // A minute after the last stall the need is forgotten.
        let calmed = tuner.observe(headroom: Self.ms(250), inForce: Self.ms(275), now: Self.s(121))
        #expect(calmed)
        #expect(tuner.target == Self.ms(150))
    }

    @Test func theLatencyStaysBetweenTheHousesAndTheCap() {
        var tuner = LatencyTuner(floor: Self.ms(150), cap: Self.ms(1_000))
        tuner.observe(headroom: -Self.ms(5_000), inForce: Self.ms(150), now: 0)  // a link down for seconds
        #expect(tuner.target == Self.ms(1_000))
        var calm = LatencyTuner(floor: Self.ms(150), cap: Self.ms(1_000))
        calm.observe(headroom: Self.ms(900), inForce: Self.ms(1_000), now: 0)
        #expect(calm.target == Self.ms(150))
        // A cap under the floor is the floor.
        #expect(LatencyTuner(floor: Self.ms(500), cap: Self.ms(200)).cap == Self.ms(500))
    }

    @Test func aRoomsLeadIsTheLeastOverItsLastSeconds() {
        var watch = LeadWatch()
        #expect(watch.least(now: 0) == nil)
        watch.arrived(presentation: Self.ms(150), now: 0)
        watch.arrived(presentation: Self.ms(1_000), now: Self.ms(900))  // 100 ms of lead
        watch.arrived(presentation: Self.ms(1_500), now: Self.ms(1_600))  // 100 ms late
        #expect(watch.least(now: Self.ms(1_700)) == -Self.ms(100))
        // The span after keeps it; the one after that has forgotten it.
        watch.arrived(presentation: Self.ms(2_300), now: Self.ms(2_100))
        #expect(watch.least(now: Self.ms(3_000)) == -Self.ms(100))
        watch.arrived(presentation: Self.ms(4_300), now: Self.ms(4_100))
        watch.arrived(presentation: Self.ms(6_300), now: Self.ms(6_100))
        #expect(watch.least(now: Self.ms(6_200)) == Self.ms(200))
        // No packet for two spans: nothing to tell.
        #expect(watch.least(now: Self.ms(10_200)) == nil)
    }
}
