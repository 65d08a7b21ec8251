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

    /// A network that loses packets needs the time to ask for them again for as long as it
    /// loses them: the retransmissions' headroom makes a need whatever it is, so the latency
    /// stays where they come in time (it came back down, and they came too late again, every
    /// minute), and comes down to what they need once they need less, or to the house's once
    /// nothing is lost.
    @Test func lossesKeepTheTimeToAskAgainWhileThereAreAny() {
        var tuner = LatencyTuner(floor: Self.ms(150), cap: Self.ms(1_000))
        // At 150 ms the answers came 40 ms too late: 150 + 40 + the margin.
        tuner.observe(headroom: -Self.ms(40), inForce: Self.ms(150), now: 0, recoveries: true)
        #expect(tuner.target == Self.ms(200))
        // At 200 they have the margin to spare, for minutes: the latency stays.
        for t in 1..<150 { tuner.observe(headroom: Self.ms(10), inForce: Self.ms(200), now: Self.s(Int64(t)), recoveries: true) }
        #expect(tuner.target == Self.ms(200))
        // The first copies' headroom alone would have let it come back down a minute later
        // (and the answers come too late again).
        var firstCopies = LatencyTuner(floor: Self.ms(150), cap: Self.ms(1_000))
        firstCopies.observe(headroom: -Self.ms(40), inForce: Self.ms(150), now: 0)
        for t in 1..<150 { firstCopies.observe(headroom: Self.ms(10), inForce: Self.ms(200), now: Self.s(Int64(t))) }
        #expect(firstCopies.target == Self.ms(150))
        // The answers need less (45 ms to spare): a minute later the latency is what they
        // need (155 + the margin, in whole steps).
        for t in 150..<220 { tuner.observe(headroom: Self.ms(45), inForce: Self.ms(200), now: Self.s(Int64(t)), recoveries: true) }
        #expect(tuner.target == Self.ms(175))
        // Nothing lost for a minute (no answer told of): the house's.
        #expect(tuner.update(now: Self.s(290)) && tuner.target == Self.ms(150))
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
