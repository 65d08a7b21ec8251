import Testing
import TuttiTesting
@testable import TuttiCore

/// The receiver's stages one by one (the engine that assembles them is tested whole in
/// PlayoutEngineTests, TransportPlayoutTests and the simulated house).
@Suite("Receiver stages")
struct ReceiverStagesTests {
    static func packet(_ k: Int, ssrc: UInt32 = 5, epoch: UInt32 = 1, start: Int64 = 1_000_000_000) -> RTPPacket {
        RTPPacket(sequenceNumber: SequenceNumber(UInt16(k)), timestamp: StreamTimestamp(UInt32(k * 960)), ssrc: ssrc,
                  presentationTime: CoordinatorTime(nanoseconds: start + Int64(k) * 20_000_000), epoch: epoch, payload: [1])
    }

    @Test func theStateMachineGoesFromTheClockToPlayingAndBackInPlace() {
        var s = ReceiverState()
        #expect(s.phase == .acquiringClock && s.roomState == .acquiringClock)
        s.handle(.started)
        #expect(s.phase == .acquiringClock, "nothing plays before the clock")
        s.handle(.clockLocked(playing: false))
        #expect(s.phase == .buffering && s.roomState == .waiting)
        s.handle(.started)
        #expect(s.phase == .playing && s.roomState == .playing)
        s.handle(.streamStopped)
        #expect(s.phase == .outage && s.roomState == .waiting)
        s.handle(.stopped)
        #expect(s.phase == .outage, "an outage stays one until playback starts again")
        s.handle(.started)
        s.handle(.resynced)
        #expect(s.phase == .resyncing)
        s.handle(.started)
        s.handle(.stopped)
        #expect(s.phase == .buffering)
        s.handle(.clockLost)
        #expect(s.phase == .acquiringClock)
        s.handle(.clockLocked(playing: true))
        #expect(s.phase == .playing, "playback that ran on while the clock was lost plays on")
    }

    @Test func theMonitorStepsWhileSettlingSlewsAfterAndResyncsBeyondItsThreshold() {
        var monitor = LatencyMonitor(configuration: .init(hardResyncThreshold: 20_000_000, settlingTime: 3_000_000_000,
                                                          stepThreshold: 100_000, lateStepThreshold: 3_000_000, slewThreshold: 20_833))
        var statistics = PlayoutStatistics()
        func at(_ ms: Int64) -> LocalTime { LocalTime(nanoseconds: ms * 1_000_000) }
        // Settling: 500 µs late, three times: the third steps it out.
        #expect(monitor.assess(500_000, now: at(0), statistics: &statistics) == .play(step: nil, error: 500_000))
        #expect(monitor.assess(500_000, now: at(10), statistics: &statistics) == .play(step: nil, error: 500_000))
        #expect(monitor.assess(500_000, now: at(20), statistics: &statistics) == .play(step: 500_000, error: 0))
        #expect(statistics.steps == 1)
        // Settled: 500 µs is slewed (once counted), 4 ms stepped.
        for k in 0..<3 as Range<Int64> { _ = monitor.assess(500_000, now: at(4_000 + k * 10), statistics: &statistics) }
        #expect(statistics.slews == 1 && monitor.slewing && statistics.steps == 1)
        monitor.reset()
        for k in 0..<2 as Range<Int64> { _ = monitor.assess(4_000_000, now: at(5_000 + k * 10), statistics: &statistics) }
        let stepped = monitor.assess(4_000_000, now: at(5_020), statistics: &statistics)
        #expect(stepped == .play(step: 4_000_000, error: 0), "a reset settles again: beyond 100 µs is stepped")
        // Beyond 20 ms: start again.
        for k in 0..<2 as Range<Int64> { _ = monitor.assess(30_000_000, now: at(9_000 + k * 10), statistics: &statistics) }
        #expect(monitor.assess(30_000_000, now: at(9_020), statistics: &statistics) == .resync)
        #expect(statistics.resyncs == 1)
    }

    @Test func theFaderRampsInAfterAStartAndOutBeforeTheBoundary() {
        var fader = Fader(frames: 4)
        var out = [Float](repeating: 1, count: 16)
        fader.started()
        fader.apply(from: 0, count: 8, heard: CoordinatorTime(nanoseconds: 0), boundary: nil, into: &out)
        #expect(stride(from: 0, to: 16, by: 2).map { out[$0] } == [0, 0.25, 0.5, 0.75, 1, 1, 1, 1])
        var tail = [Float](repeating: 1, count: 16)
        // The boundary 6 frames after the first: the last 4 before it ramp down, then silence.
        fader.apply(from: 0, count: 8, heard: CoordinatorTime(nanoseconds: 0),
                    boundary: CoordinatorTime(nanoseconds: AudioFormat.nanoseconds(forFrames: 6)), into: &tail)
        #expect(stride(from: 0, to: 16, by: 2).map { tail[$0] } == [1, 1, 1, 0.75, 0.5, 0.25, 0, 0])
    }

    func route(_ switcher: inout SegmentSwitch, _ packet: RTPPacket, presentation: CoordinatorTime) -> SegmentSwitch.Routed {
        switcher.route(packet, presentation: presentation).0
    }

    @Test func theSegmentSwitchHoldsTheNewestEpochAndDropsEndedAndStaleOnes() {
        var switcher = SegmentSwitch(capacity: 16, tolerance: 1_000_000)
        #expect(route(&switcher, Self.packet(0), presentation: CoordinatorTime(nanoseconds: 1_000_000_000)) == .replaced)
        #expect(route(&switcher, Self.packet(1), presentation: CoordinatorTime(nanoseconds: 1_020_000_000)) == .accepted)
        // Epoch 3 (a seek) is held as the next; then epoch 2 is stale next to it.
        let seek = Self.packet(10, epoch: 3, start: 2_000_000_000)
        #expect(route(&switcher, seek, presentation: seek.presentationTime!) == .accepted)
        #expect(switcher.upcoming?.epoch == 3 && switcher.boundary == seek.presentationTime)
        let stale = Self.packet(11, epoch: 2, start: 2_000_000_000)
        #expect(route(&switcher, stale, presentation: stale.presentationTime!) == .late)
        // The current epoch ends: its packets past the end are late, and the boundary is the earlier.
        switcher.endEpoch(1, at: CoordinatorTime(nanoseconds: 1_500_000_000))
        let after = Self.packet(30)
        #expect(route(&switcher, after, presentation: after.presentationTime!) == .late)
        #expect(switcher.boundary == CoordinatorTime(nanoseconds: 1_500_000_000))
        let switched = switcher.switchIfOver(at: CoordinatorTime(nanoseconds: 1_500_000_000), playing: true)
        #expect(switched)
        #expect(switcher.current?.epoch == 3 && switcher.upcoming == nil)
        // Another stream (the coordinator restarted) replaces it.
        let other = Self.packet(0, ssrc: 9, epoch: 1)
        #expect(route(&switcher, other, presentation: other.presentationTime!) == .replaced)
        #expect(switcher.current?.ssrc == 9)
    }

    @Test func theGateCountsWhatItStops() {
        let gate = PacketGate(payloadTypes: [96], absurdHorizon: 10_000_000_000)
        var foreign = Self.packet(0)
        foreign.payloadType = 97
        #expect(gate.presentation(of: foreign) == nil && gate.presentation(of: Self.packet(0)) != nil)
        let now = CoordinatorTime(nanoseconds: 1_000_000_000)
        #expect(gate.verdict(presentation: now + 1_000, now: nil) == .beforeClockLock)
        #expect(gate.verdict(presentation: now - 1_000, now: now) == .late)
        #expect(gate.verdict(presentation: now + 11_000_000_000, now: now) == .absurd)
        #expect(gate.verdict(presentation: now + 1_000, now: now) == .pass)
    }
}
