import Testing
import TuttiTesting
@testable import TuttiCore

/// Pause, resume and seek as followers hear them: the old epoch stops at its cut, to the
/// sample, in every room; the new one starts at its instant from the right position.
@Suite("Playout across pauses and seeks")
struct TransportPlayoutTests {
    static func followers() -> [SimulatedHouse.FollowerSpec] {
        [.init(clockOffset: 4_000_000_000, drift: 150e-6, deviceLatency: 70_000_000, loss: 0.02, jitter: 3_000_000),
         .init(clockOffset: -2_000_000_000, drift: -150e-6, deviceLatency: 60_000_000, loss: 0.02, jitter: 3_000_000)]
    }

    /// The worst gap (ns) between when a frame was heard and when its position was due,
    /// over frames heard in [from, to).
    static func worst(_ m: SimulatedHouse.Member, _ house: SimulatedHouse, from: Int64, to: Int64) -> Double {
        m.heard.filter { $0.time >= from && $0.time < to }
            .map { abs(($0.position - house.position(at: $0.time)) / 48_000 * 1e9) }.max() ?? 0
    }

    /// Sound stops at the cut, the room is silent until the resume instant, and plays on from
    /// the paused sample then.
    static func expectPaused(_ m: SimulatedHouse.Member, _ house: SimulatedHouse, from cut: Int64, until resume: Int64) throws {
        let last = try #require(m.heard.last { $0.time < resume })
        #expect(abs(cut - last.time) < 100_000, "sound stops at the cut, \((cut - last.time) / 1000) µs early")
        #expect(!m.heard.contains { $0.time >= cut && $0.time < resume - 50_000 }, "silence while paused")
        let back = try #require(m.heard.first { $0.time >= resume - 50_000 })
        #expect(abs(back.time - resume) < 100_000, "back \((back.time - resume) / 1000) µs after the resume instant")
        #expect(abs(back.position - house.position(at: cut)) < 5, "resumes from the paused sample")
    }

    @Test func pauseSilencesEveryRoomAtTheCutAndResumeContinuesFromThere() async throws {
        let house = try await SimulatedHouse(Self.followers())
        house.commands = [(5_000_000_000, .pause(resumeAfter: 1_000_000_000))]
        try await house.run(until: 8_000_000_000)
        let cut = try #require(house.cuts.first).at
        let resume = cut + 1_000_000_000
        for m in house.members {
            try Self.expectPaused(m, house, from: cut, until: resume)
            #expect(Self.worst(m, house, from: resume + 500_000_000, to: 8_000_000_000) < 50_000)
            #expect(m.engine.statistics.resyncs == 0)
        }
    }

    @Test func seekSwitchesEveryRoomAtTheSameSample() async throws {
        let house = try await SimulatedHouse(Self.followers())
        house.commands = [(5_000_000_000, .seek(to: 30 * 48_000))]
        try await house.run(until: 7_000_000_000)
        let cut = try #require(house.cuts.first).at
        for m in house.members {
            #expect(!m.heard.contains { $0.time >= cut + 30_000 && $0.position < Double(30 * 48_000) }, "nothing of before the seek after the cut")
            let after = try #require(m.heard.first { $0.time >= cut })
            #expect(abs(after.time - cut) < 100_000)
            #expect(abs(after.position - Double(30 * 48_000)) < 5)
            #expect(Self.worst(m, house, from: 4_000_000_000, to: cut - 1_000_000) < 50_000)
            #expect(Self.worst(m, house, from: cut + 300_000_000, to: 7_000_000_000) < 50_000)
        }
    }
}

/// Stored audio sent a lookahead ahead, on links that stall as Wi-Fi does: every packet held
/// for 200 ms every few seconds, then delivered at once (with jitter and loss besides).
@Suite("Lookahead through Wi-Fi stalls")
struct LookaheadTests {
    static func stalling(_ every: Int64) -> SimulatedHouse.FollowerSpec {
        var path = PathModel(delay: 5_000_000, jitter: 2_000_000, loss: 0.01)
        path.stallEvery = every
        path.stallLength = 200_000_000
        return .init(clockOffset: 3_000_000_000, drift: 100e-6, deviceLatency: 60_000_000, path: path)
    }

    /// Frames heard in [from, to) that are not the frame after the one before: gaps
    /// (silence, concealment) and jumps.
    static func breaks(_ m: SimulatedHouse.Member, from: Int64, to: Int64) -> Int {
        let heard = m.heard.filter { $0.time >= from && $0.time < to }
        return zip(heard, heard.dropFirst()).filter { a, b in
            b.time - a.time > 30_000 || abs(b.position - a.position - 1) > 0.5
        }.count
    }

    /// With a lookahead of 2 s nothing is missed; with only the latency (150 ms) the same
    /// stalls empty the rooms.
    @Test(arguments: [(Int64(2_000_000_000), true), (Int64(150_000_000), false)])
    func stallsAreRiddenOutWithALookahead(lookahead: Int64, ridesOut: Bool) async throws {
        let house = try await SimulatedHouse([Self.stalling(3_000_000_000), Self.stalling(2_300_000_000)], lookahead: lookahead)
        try await house.run(until: 12_000_000_000)
        for m in house.members {
            let breaks = Self.breaks(m, from: 3_000_000_000, to: 11_500_000_000)
            if ridesOut {
                #expect(breaks == 0, "every frame in turn, on time")
                #expect(m.engine.statistics.concealedFrames == 0 && m.engine.statistics.outages == 0)
                // In time once the clock has settled (its first exchanges met stalls too).
                #expect(TransportPlayoutTests.worst(m, house, from: 4_000_000_000, to: 11_500_000_000) < 50_000)
            } else {
                #expect(breaks > 0, "without the lookahead a stall is a dropout")
            }
        }
    }

    /// Commands still act `cutLead` after they are given, with 2 s of audio in every room:
    /// the rooms drop what they hold past the cut.
    @Test func pauseAndSeekActAtOnceWithTheLookahead() async throws {
        let house = try await SimulatedHouse(TransportPlayoutTests.followers(), lookahead: 2_000_000_000)
        house.commands = [(5_000_000_000, .pause(resumeAfter: 1_000_000_000)), (9_000_000_000, .seek(to: 30 * 48_000))]
        try await house.run(until: 12_000_000_000)
        #expect(house.cuts.count == 2)
        let pause = house.cuts[0].at, seek = house.cuts[1].at
        #expect(pause - 5_000_000_000 <= 100_000_000 && seek - 9_000_000_000 <= 100_000_000)
        let resume = pause + 1_000_000_000
        for m in house.members {
            try TransportPlayoutTests.expectPaused(m, house, from: pause, until: resume)
            #expect(!m.heard.contains { $0.time >= seek + 30_000 && $0.position < Double(30 * 48_000) }, "nothing of before the seek after it")
            let after = try #require(m.heard.first { $0.time >= seek })
            #expect(abs(after.time - seek) < 100_000 && abs(after.position - Double(30 * 48_000)) < 5)
            #expect(TransportPlayoutTests.worst(m, house, from: seek + 300_000_000, to: 12_000_000_000) < 50_000)
        }
    }
}

/// The fades, on a decoder whose every sample is 1.
@Suite("Fades at cuts and starts")
struct FadeTests {
    final class Ones: FrameDecoder {
        func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
            output.append(contentsOf: repeatElement(1, count: 960 * 2))
            return 960
        }
        func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }
        func conceal(frames: Int, into output: inout [Float]) throws -> Int {
            output.append(contentsOf: repeatElement(1, count: frames * 2))
            return frames
        }
        func reset() {}
    }

    static func packet(_ k: Int, epoch: UInt32, start: Int64) -> RTPPacket {
        RTPPacket(sequenceNumber: SequenceNumber(UInt16(k)), timestamp: StreamTimestamp(UInt32(k * 960)), ssrc: 5,
                  presentationTime: CoordinatorTime(nanoseconds: start + Int64(k) * 20_000_000), epoch: epoch, payload: [1])
    }

    @Test func soundFadesInAtItsStartAndOutBeforeItsEnd() {
        let engine = PlayoutEngine(decoder: Ones())
        let zero = LocalTime(nanoseconds: 1_000_000_000)
        engine.addClockSample(ClockSample(t1: zero, t2: CoordinatorTime(nanoseconds: 1_000_000_000),
                                          t3: CoordinatorTime(nanoseconds: 1_000_000_000), t4: zero))
        let start: Int64 = 1_100_000_000
        for k in 0..<50 { engine.receive(Self.packet(k, epoch: 1, start: start), at: zero) }
        let end = CoordinatorTime(nanoseconds: start + 500_000_000)
        engine.endEpoch(1, at: end)
        var out: [Float] = []
        var heard = zero + 50_000_000
        while heard.nanoseconds < 1_800_000_000 {
            engine.render(frames: 480, heardAt: heard, into: &out)
            heard = heard + 10_000_000
        }
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        func at(_ ns: Int64) -> Float { left[Int(AudioFormat.frames(forNanoseconds: ns - 1_050_000_000))] }
        #expect(at(1_099_000_000) == 0, "silent before the start")
        #expect(at(1_100_000_000 + 2_500_000) > 0.4 && at(1_100_000_000 + 2_500_000) < 0.6, "half way up 2.5 ms in")
        #expect(at(1_300_000_000) == 1)
        #expect(at(end.nanoseconds - 2_500_000) > 0.4 && at(end.nanoseconds - 2_500_000) < 0.6, "half way down 2.5 ms before the end")
        #expect(at(end.nanoseconds + 1_000) == 0 && at(1_700_000_000) == 0, "silent after the end")
        // The ramps are monotonic: no click.
        let ramp = Array(left[Int(AudioFormat.frames(forNanoseconds: 1_550_000_000 - 1_050_000_000 - 6_000_000))...])
        #expect(zip(ramp, ramp.dropFirst()).allSatisfy { $0 >= $1 })
    }

    @Test func packetsOfAnEndedEpochAfterItsEndAndOfOlderEpochsAreDropped() {
        let engine = PlayoutEngine(decoder: Ones())
        let zero = LocalTime(nanoseconds: 1_000_000_000)
        engine.addClockSample(ClockSample(t1: zero, t2: CoordinatorTime(nanoseconds: 1_000_000_000),
                                          t3: CoordinatorTime(nanoseconds: 1_000_000_000), t4: zero))
        engine.receive(Self.packet(0, epoch: 3, start: 1_100_000_000), at: zero)
        engine.endEpoch(3, at: CoordinatorTime(nanoseconds: 1_150_000_000))
        engine.receive(Self.packet(5, epoch: 3, start: 1_100_000_000), at: zero)
        #expect(engine.statistics.late == 1)
        engine.receive(Self.packet(1, epoch: 2, start: 1_100_000_000), at: zero)
        #expect(engine.statistics.late == 2, "an older epoch is stale")
        engine.receive(Self.packet(1, epoch: 4, start: 1_300_000_000), at: zero)
        #expect(engine.statistics.packetsReceived == 2)
    }
}

/// A room that moves to another zone: its settings name the new zone's stream, and it hands
/// over from the one it plays, faded, at the new one's own position.
@Suite("Zones: the room's stream")
struct ZoneHandoverTests {
    /// Every frame of a packet is the packet's payload value: 0.25 + k / 1000 for zone A's
    /// packet k, 0.5 + k / 1000 for zone B's.
    final class Values: FrameDecoder {
        func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
            let value = (payload.first == 1 ? 0.25 : 0.5) + Float(payload.dropFirst().first ?? 0) / 1000
            output.append(contentsOf: repeatElement(value, count: 960 * 2))
            return 960
        }
        func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }
        func conceal(frames: Int, into output: inout [Float]) throws -> Int {
            output.append(contentsOf: repeatElement(0, count: frames * 2))
            return frames
        }
        func reset() {}
    }

    static let startA: Int64 = 1_100_000_000
    static let startB: Int64 = 1_105_000_000

    static func packet(_ k: Int, zone: UInt8) -> RTPPacket {
        let start = zone == 1 ? startA : startB
        return RTPPacket(sequenceNumber: SequenceNumber(UInt16(k + 100 * Int(zone))), timestamp: StreamTimestamp(UInt32(k * 960 + 7_000 * Int(zone))),
                         ssrc: UInt32(zone) + 4, presentationTime: CoordinatorTime(nanoseconds: start + Int64(k) * 20_000_000),
                         epoch: UInt32(zone) * 1_000, payload: [zone, UInt8(k)])
    }

    @Test func aRoomMovedToAnotherZoneHandsOverFadedAndInStepWithIt() {
        let engine = PlayoutEngine(decoder: Values())
        let zero = LocalTime(nanoseconds: 1_000_000_000)
        engine.addClockSample(ClockSample(t1: zero, t2: CoordinatorTime(nanoseconds: 1_000_000_000),
                                          t3: CoordinatorTime(nanoseconds: 1_000_000_000), t4: zero))
        engine.follow(stream: 5)
        for k in 0..<100 {
            engine.receive(Self.packet(k, zone: 1), at: zero)
            engine.receive(Self.packet(k, zone: 2), at: zero)
        }
        #expect(engine.statistics.otherZones == 100, "zone B's packets are not this room's")
        #expect(engine.statistics.packetsReceived == 100)
        var out: [Float] = []
        var heard = zero + 50_000_000
        func render(until end: Int64) {
            while heard.nanoseconds < end {
                engine.render(frames: 480, heardAt: heard, into: &out)
                heard = heard + 10_000_000
            }
        }
        render(until: 1_500_000_000)
        // Moved: the settings name zone B's stream, whose packets come from now on (those
        // sent before, resent on joining).
        engine.follow(stream: 6)
        // An answer to what the room asked of zone A before it moved comes first: not zone B's.
        let stale = Self.packet(70, zone: 1).retransmission(ssrc: RTPPacket.retransmissionSSRC(of: 5), sequence: SequenceNumber(1))
        engine.receiveRetransmission(stale.encode(), at: heard)
        #expect(engine.statistics.otherZones == 101 && engine.statistics.retransmitted == 0)
        // As a stream joined comes: its newest packet first (sent a lookahead ahead), then
        // those sent before it, resent on asking.
        engine.receive(Self.packet(99, zone: 2), at: heard)
        for k in 0..<99 { engine.receive(Self.packet(k, zone: 2), at: heard + 5_000_000) }
        for k in 0..<100 { engine.receive(Self.packet(k, zone: 1), at: heard) }
        #expect(engine.statistics.otherZones == 201, "zone A's packets are no longer this room's")
        render(until: 2_500_000_000)

        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        func at(_ ns: Int64) -> Float { left[Int(AudioFormat.frames(forNanoseconds: ns - 1_050_000_000))] }
        func a(_ ns: Int64) -> Float { 0.25 + Float((ns - Self.startA) / 20_000_000) / 1000 }
        func b(_ ns: Int64) -> Float { 0.5 + Float((ns - Self.startB) / 20_000_000) / 1000 }
        // The last sound heard before the move was at 1.49 s; the handover comes 60 ms later.
        let handover: Int64 = 1_490_000_000 + SegmentSwitch.handoverLead
        for t in stride(from: Int64(1_200_000_000), to: handover - 6_000_000, by: 7_000_000) {
            #expect(abs(at(t) - a(t)) < 1e-6, "zone A's sound until the handover: at \(t) \(at(t)), not \(a(t))")
        }
        let fading = at(handover - 2_500_000)
        #expect(fading > 0.4 * a(handover) && fading < 0.6 * a(handover), "A fades out before the handover: \(fading)")
        #expect(handover - 1_490_000_000 <= 200_000_000)
        let rising = at(handover + 2_500_000)
        #expect(rising > 0.4 * b(handover) && rising < 0.6 * b(handover), "B fades in after it: \(rising)")
        for t in stride(from: handover + 6_000_000, to: Int64(2_400_000_000), by: 7_000_000) {
            #expect(abs(at(t) - b(t)) < 1e-6, "zone B's sound at its own position: at \(t) \(at(t)), not \(b(t))")
        }
        // No click: down to the handover, up after it.
        let down = left[Int(AudioFormat.frames(forNanoseconds: handover - 6_000_000 - 1_050_000_000))...Int(AudioFormat.frames(forNanoseconds: handover - 1_050_000_000))]
        #expect(zip(down, down.dropFirst()).allSatisfy { $0 >= $1 })
    }

    @Test func aRoomOfAHouseOfOneZoneTakesAnyStream() {
        let engine = PlayoutEngine(decoder: Values())
        let zero = LocalTime(nanoseconds: 1_000_000_000)
        engine.addClockSample(ClockSample(t1: zero, t2: CoordinatorTime(nanoseconds: 1_000_000_000),
                                          t3: CoordinatorTime(nanoseconds: 1_000_000_000), t4: zero))
        engine.receive(Self.packet(0, zone: 1), at: zero)
        engine.receive(Self.packet(1, zone: 2), at: zero)
        #expect(engine.statistics.otherZones == 0)
        #expect(engine.statistics.discontinuities == 1, "another stream replaces the one held (a restarted coordinator)")
        // Named: the other streams are not its own.
        engine.follow(stream: 9)
        engine.receive(Self.packet(2, zone: 2), at: zero + 400_000_000)
        #expect(engine.statistics.otherZones == 1)
    }
}
