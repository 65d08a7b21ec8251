import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("Retransmission")
struct RetransmissionTests {
    static func packet(_ sequence: UInt16, presentation: Int64 = 2_000_000_000) -> RTPPacket {
        RTPPacket(sequenceNumber: SequenceNumber(sequence), timestamp: StreamTimestamp(UInt32(sequence) * 960), ssrc: 0xABCD,
                  presentationTime: CoordinatorTime(nanoseconds: presentation), epoch: 3, payload: [1, 2, 3, UInt8(sequence & 0xFF)])
    }

    @Test func nackRoundTripsAcrossTheWrap() throws {
        let sequences: [UInt16] = [10, 11, 13, 26, 27, 65_534, 65_535, 0, 1, 17]
        let nack = GenericNACK(senderSSRC: 7, mediaSSRC: 0xABCD, sequences: sequences.map(SequenceNumber.init))
        let bytes = nack.encode()
        #expect(bytes[0] == 0x81 && bytes[1] == 205)
        #expect(GenericNACK.isFeedback(bytes) && !GenericNACK.isFeedback(Self.packet(1).encode()))
        let decoded = try GenericNACK.decode(bytes)
        #expect(decoded.senderSSRC == 7 && decoded.mediaSSRC == 0xABCD)
        #expect(Set(decoded.sequences.map(\.rawValue)) == Set(sequences))
        // 10 takes 11, 13 and 26 (within 16), 27 starts an entry; 65534 takes the wrap to 1; then 17.
        #expect(bytes.count == 12 + 4 * 4)
    }

    @Test func badFeedbackIsRefusedAndNeverCrashes() {
        let bytes = GenericNACK(senderSSRC: 1, mediaSSRC: 2, sequences: [SequenceNumber(5)]).encode()
        for cut in 0..<bytes.count {
            #expect(throws: PacketError.self) { try GenericNACK.decode(Array(bytes[0..<cut])) }
        }
        var otherFormat = bytes
        otherFormat[0] = 0x84  // FMT 4: not a generic NACK
        #expect(throws: PacketError.self) { try GenericNACK.decode(otherFormat) }
        #expect(throws: PacketError.self) { try GenericNACK.decode([UInt8](repeating: 0x81, count: 1_500)) }
        var random = SeededRandom(seed: 11)
        for _ in 0..<5_000 {
            var b = bytes + (0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            b[Int.random(in: 0..<b.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            _ = try? GenericNACK.decode(b)
        }
    }

    @Test func aRetransmissionCarriesTheOriginalBack() throws {
        var original = Self.packet(40_000)
        original.sendTime = CoordinatorTime(nanoseconds: 5)
        let rtx = original.retransmission(ssrc: 99, sequence: SequenceNumber(7))
        #expect(rtx.payloadType == 97 && rtx.ssrc == 99 && rtx.sequenceNumber.rawValue == 7)
        #expect(rtx.timestamp == original.timestamp && rtx.presentationTime == original.presentationTime && rtx.epoch == 3)
        let back = try RTPPacket.decode(rtx.encode()).originalFromRetransmission(ssrc: 0xABCD)
        #expect(back.sequenceNumber == original.sequenceNumber && back.payload == original.payload && back.payloadType == 96)
        var empty = rtx
        empty.payload = [1]
        #expect(throws: PacketError.self) { try empty.originalFromRetransmission(ssrc: 1) }
    }

    @Test func theCoordinatorResendsWhatItHoldsWithinEachPeersRate() {
        var config = Retransmitter<Int>.Configuration()
        (config.history, config.rate, config.burst) = (64, 10, 20)
        var r = Retransmitter<Int>(mediaSSRC: 0xABCD, ssrc: 55, initialSequence: 65_535, configuration: config)
        for s in 0..<100 { r.record(Self.packet(UInt16(s))) }
        let ask = { (sequences: [UInt16]) in GenericNACK(senderSSRC: 1, mediaSSRC: 0xABCD, sequences: sequences.map(SequenceNumber.init)) }
        let answer = r.answer(ask([90, 91, 10]), from: 1, now: 0)
        #expect(answer.map { try! $0.originalFromRetransmission(ssrc: 0xABCD).sequenceNumber.rawValue } == [90, 91])
        #expect(answer.map(\.sequenceNumber.rawValue) == [65_535, 0])  // its own sequence, wrapping
        #expect(r.statistics.unknown == 1)  // 10 is no longer held
        #expect(r.answer(GenericNACK(senderSSRC: 1, mediaSSRC: 1, sequences: [SequenceNumber(90)]), from: 1, now: 0).isEmpty)
        #expect(r.statistics.foreign == 1)
        // A peer gets its burst, then its rate; another peer is not affected.
        let many = ask(Array(40..<99))
        #expect(r.answer(many, from: 1, now: 0).count == 18)
        #expect(r.answer(many, from: 1, now: 500_000_000).count == 5)
        #expect(r.answer(many, from: 2, now: 500_000_000).count == 20)
        #expect(r.statistics.refused > 0)
    }

    /// A stream of 20 ms packets sent 150 ms ahead, arriving after `delay`, with some lost.
    struct Stream {
        var requester = RetransmissionRequester()
        var epoch: UInt32?
        /// How far ahead each packet is sent: the house latency, or stored audio's lookahead.
        var lead: Int64 = 150_000_000
        func presentation(_ k: Int64) -> CoordinatorTime { CoordinatorTime(nanoseconds: 10_000_000_000 + k * 20_000_000) }
        func sent(_ k: Int64) -> CoordinatorTime { presentation(k) - lead }
        mutating func arrive(_ k: Int64, delay: Int64 = 5_000_000, retransmitted: Bool = false, at: CoordinatorTime? = nil) {
            requester.arrived(ssrc: 1, sequence: SequenceNumber(UInt16(truncatingIfNeeded: k)), epoch: epoch, presentation: presentation(k),
                              sent: retransmitted ? nil : sent(k), at: at ?? sent(k) + delay, retransmitted: retransmitted)
        }

        /// Joins at packet 0 (arriving after `delay`), asks at once for those sent before it
        /// that can still be played, and receives them a round trip later: what it asked for.
        @discardableResult
        mutating func join(delay: Int64 = 5_000_000) -> [Int64] {
            arrive(0, delay: delay)
            let asked = requester.due(at: sent(0) + delay, outputLead: 60_000_000).sequences.map { Int64(Int16(bitPattern: $0.rawValue)) }
            for k in asked { arrive(k, retransmitted: true, at: sent(0) + delay + 10_000_000) }
            return asked
        }
    }

    /// A follower that joins mid-stream asks for the packets sent before the first it
    /// received whose time is still ahead (here 150 ms of lead, an output 60 ms ahead: the
    /// three before it), at once; none of that is a loss, and what does not come in time is
    /// asked for again, then dropped without counting as given up.
    @Test func joiningAsksForThePacketsAlreadyOnTheirWay() {
        var s = Stream()
        #expect(s.join() == [-3, -2, -1])
        #expect(s.requester.statistics.joining == 3 && s.requester.statistics.missed == 0)
        for k in 1..<10 as Range<Int64> { s.arrive(k) }
        #expect(s.requester.statistics.missed == 0 && s.requester.statistics.abandoned == 0)
        // Unanswered, they are asked for again 40 ms later (the coordinator may still be
        // answering a joining room's hundreds), those still in time.
        var t = Stream()
        t.arrive(0)
        #expect(t.requester.due(at: t.sent(0) + 5_000_000, outputLead: 60_000_000).sequences.count == 3)
        #expect(t.requester.due(at: t.sent(0) + 40_000_000, outputLead: 60_000_000).sequences.map(\.rawValue) == [1])  // overdue: lost
        #expect(t.requester.due(at: t.sent(0) + 45_000_000, outputLead: 60_000_000).sequences.map(\.rawValue) == [65_535])  // -3, -2: too late
        // (By then 2 and 3 are overdue too: those are losses.)
        #expect(t.requester.due(at: t.sent(0) + 70_000_000, outputLead: 60_000_000).sequences.map(\.rawValue) == [1, 2, 3])
        #expect(t.requester.statistics.joining == 3 && t.requester.statistics.abandoned == 0 && t.requester.statistics.missed == 3)
        // A packet without a send stamp says nothing of the lead: nothing is asked for.
        var u = Stream()
        u.requester.arrived(ssrc: 1, sequence: SequenceNumber(0), presentation: u.presentation(0), sent: nil, at: u.sent(0) + 5_000_000, retransmitted: false)
        #expect(u.requester.due(at: u.sent(0) + 5_000_000, outputLead: 60_000_000).sequences.isEmpty)
    }

    /// Stored audio comes 2 s ahead: a follower that joins asks for everything on its way
    /// that can still reach its output in time (2 s less the 5 ms it took to come and the
    /// output's 60 ms: 96 packets), so that it plays at once: what it plays within 200 ms
    /// at once, the rest eight times faster than real time (so that another room's first
    /// needs are not queued behind the whole lookahead).
    @Test func joiningAStreamSentALookaheadAheadAsksForAllOfIt() {
        var s = Stream(lead: 2_000_000_000)
        let asked = s.join()
        #expect(asked == Array(-96 ... -90))
        var later: [Int64] = []
        var next: Int64 = 1  // the stream goes on coming
        for ms in stride(from: Int64(10), through: 260, by: 10) {
            let now = s.sent(0) + 5_000_000 + ms * 1_000_000
            while s.sent(next) + 5_000_000 <= now {
                s.arrive(next)
                next += 1
            }
            let due = s.requester.due(at: now, outputLead: 60_000_000).sequences.map { Int64(Int16(bitPattern: $0.rawValue)) }
            for k in due { s.arrive(k, retransmitted: true, at: now + 1_000_000) }
            later += due
        }
        #expect(later == Array(-89 ... -1), "\(later)")
        #expect(s.requester.statistics.joining == 96 && s.requester.statistics.missed == 0)
    }

    /// A busy coordinator answers a joining room's requests in order, but slowly (here 8 ms a
    /// packet, 60 to 400 ms behind): nothing is asked for twice while its answers keep coming,
    /// but a packet it passed over (refused) is asked for again once an answer to a later one
    /// comes; and when the answers stop, only what is needed within 200 ms is asked again.
    @Test func aJoiningRoomWaitsForSlowAnswersAndAsksAgainOnlyForWhatWasPassedOver() {
        var s = Stream(lead: 2_000_000_000)
        let start = s.sent(0) + 5_000_000
        s.arrive(0)
        var asks: [Int64: Int] = [:]
        var queue: [(k: Int64, at: CoordinatorTime)] = []  // answers on their way, in order
        var server = start
        var next: Int64 = 1
        let refused: Int64 = -60
        var refusedAt: CoordinatorTime?, refusedAgainAt: CoordinatorTime?
        var passedOverAt: CoordinatorTime?
        func step(_ now: CoordinatorTime, answering: Bool) {
            while s.sent(next) + 5_000_000 <= now {
                s.arrive(next)
                next += 1
            }
            while answering, let first = queue.first, first.at <= now {
                queue.removeFirst()
                if first.k == refused, asks[refused] == 1 { continue }
                if first.k > refused, asks[refused] == 1, passedOverAt == nil { passedOverAt = first.at }
                s.arrive(first.k, retransmitted: true, at: first.at)
            }
            for k in s.requester.due(at: now, outputLead: 60_000_000).sequences.map({ Int64(Int16(bitPattern: $0.rawValue)) }) {
                asks[k, default: 0] += 1
                if k == refused { if asks[k] == 1 { refusedAt = now } else if asks[k] == 2 { refusedAgainAt = now } }
                server = max(server, now) + 8_000_000
                queue.append((k, server))
            }
        }
        for ms in stride(from: Int64(0), through: 800, by: 2) { step(start + ms * 1_000_000, answering: true) }
        #expect(asks.count == 96 && s.requester.statistics.joining == 96)
        #expect(asks.filter { $0.value > 1 }.map(\.key) == [refused], "asked for more than once: \(asks.filter { $0.value > 1 })")
        // (No sooner than 40 ms after it was asked for: `joinRetry`.)
        let asked = try! #require(refusedAt), passed = try! #require(passedOverAt), again = try! #require(refusedAgainAt)
        #expect(passed - asked > 40_000_000 && again >= passed && again - passed <= 2_000_000,
                "asked at \(asked), passed over at \(passed), asked again at \(again)")
        #expect(s.requester.statistics.missed == 0)

        // Another room, whose answers stop after the first few: once they have stopped for
        // 40 ms, what it needs within 200 ms is asked for again, the rest not yet.
        var t = Stream(lead: 2_000_000_000)
        t.arrive(0)
        let first = t.requester.due(at: start, outputLead: 60_000_000).sequences.map { Int64(Int16(bitPattern: $0.rawValue)) }
        t.arrive(first[0], retransmitted: true, at: start + 5_000_000)
        var later: [Int64] = []
        for ms in stride(from: Int64(10), through: 44, by: 2) {
            later += t.requester.due(at: start + ms * 1_000_000, outputLead: 60_000_000).sequences.map { Int64(Int16(bitPattern: $0.rawValue)) }
        }
        #expect(later.allSatisfy { !first.contains($0) }, "asked again while the answers were coming: \(later)")
        let again2 = t.requester.due(at: start + 46_000_000, outputLead: 60_000_000).sequences.map { Int64(Int16(bitPattern: $0.rawValue)) }
        let needed = again2.filter { first.contains($0) }
        #expect(!needed.isEmpty && needed.allSatisfy { t.presentation($0) - 60_000_000 - (start + 46_000_000) <= 200_000_000 }, "\(again2)")
        #expect(again2.allSatisfy { first.contains($0) || !later.contains($0) })
    }

    @Test func aMissingPacketIsAskedForOnceOverdueAgainAfterARoundTripAndGivenUpInTime() throws {
        var s = Stream()
        s.join(delay: 4_000_000)
        for k in 1..<10 { s.arrive(Int64(k), delay: Int64(4_000_000 + k * 100_000)) }  // worst delay 4.9 ms
        s.arrive(11)
        #expect(s.requester.statistics.missed == 1)
        let due = try #require(s.requester.nextDue)
        // Packet 10 left at sent(10); it is overdue once the worst delay (the second largest of
        // 4.0 … 4.9 and 11's 5.0 ms) and the margin have passed.
        #expect(due == s.sent(10) + 4_900_000 + 2_000_000)
        #expect(s.requester.due(at: due - 1, outputLead: 60_000_000).sequences.isEmpty)
        let first = s.requester.due(at: due, outputLead: 60_000_000)
        #expect(first.sequences == [SequenceNumber(10)] && first.copies == 1)
        // Not again until a round trip has passed.
        #expect(s.requester.due(at: due + 5_000_000, outputLead: 60_000_000).sequences.isEmpty)
        #expect(s.requester.due(at: due + 12_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(10)])
        // Once too late for the output, given up.
        s.arrive(12)
        #expect(!s.requester.due(at: s.presentation(10) - 60_000_000, outputLead: 60_000_000).sequences.contains(SequenceNumber(10)))
        #expect(s.requester.statistics.abandoned == 1)
    }

    /// A packet later than the path's worst delay (a coordinator that stalled a moment) is
    /// asked for, and the follower watches the next ones while it is missing; when it comes
    /// after all, it was no loss, and the watch ends with it (a lost one keeps it 10 s).
    @Test func aPacketThatWasOnlyLateStartsNoWatch() throws {
        var s = Stream()
        s.join()
        for k in 1..<10 as Range<Int64> { s.arrive(k) }
        #expect(s.requester.nextDue == nil)
        #expect(s.requester.due(at: s.sent(10) + 8_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(10)])
        // Missing: its next request, and the next packet's overdue moment, wake the follower.
        let watching = try #require(s.requester.nextDue)
        #expect(watching <= s.sent(11) + 7_000_000)
        s.arrive(10, at: s.sent(10) + 9_000_000)
        s.arrive(11)
        #expect(s.requester.statistics.missed == 0)
        #expect(s.requester.nextDue == nil, "a late packet kept the watch on")
        // The same packet lost (its retransmission came): watched 10 s.
        var lost = Stream()
        lost.join()
        for k in 1..<10 as Range<Int64> { lost.arrive(k) }
        #expect(lost.requester.due(at: lost.sent(10) + 8_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(10)])
        lost.arrive(10, retransmitted: true, at: lost.sent(10) + 12_000_000)
        lost.arrive(11)
        #expect(lost.requester.nextDue == lost.sent(12) + 7_000_000)
    }

    @Test func aPacketThatComesBackIsNotAskedForAgainAndALateOneIsNoLoss() {
        var s = Stream()
        s.join()
        for k in [1, 2, 4] as [Int64] { s.arrive(k) }
        #expect(s.requester.due(at: s.sent(3) + 10_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(3)])
        s.arrive(3, retransmitted: true, at: s.sent(3) + 20_000_000)
        // A round trip later 3 would be asked for again; it came, so nothing is.
        #expect(s.requester.due(at: s.sent(3) + 40_000_000, outputLead: 60_000_000).sequences.isEmpty)
        #expect(s.requester.statistics.missed == 1)
        // A packet that was only late (reordered) is no loss.
        s.arrive(6)
        #expect(s.requester.statistics.missed == 2)
        s.arrive(5)
        #expect(s.requester.statistics.missed == 1)
    }

    @Test func aPacketIsMissingOnceOverdueEvenWithNothingAfterItButNotAfterItsEpochEnded() throws {
        var s = Stream()
        s.join()
        for k in 1..<10 as Range<Int64> { s.arrive(k) }
        // Nothing after 9: packet 10 is overdue at sent(10) + worst delay (5 ms) + margin. The
        // path has lost nothing, so the follower is not woken for it; it finds it overdue when
        // it wakes anyway.
        #expect(s.requester.nextDue == nil)
        #expect(s.requester.due(at: s.sent(10) + 7_000_000 - 1, outputLead: 60_000_000).sequences.isEmpty)
        #expect(s.requester.due(at: s.sent(10) + 7_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(10)])
        #expect(s.requester.statistics.missed == 1)
        // It comes back; 11 shows the gap. On a path that loses packets the follower is woken
        // the moment the next one is overdue...
        s.arrive(10, retransmitted: true, at: s.sent(10) + 15_000_000)
        s.arrive(11)
        #expect(s.requester.nextDue == s.sent(12) + 7_000_000)
        // ...until 10 s pass without another loss.
        for k in 12..<500 as Range<Int64> { s.arrive(k) }
        #expect(s.requester.nextDue == s.sent(500) + 7_000_000)
        for k in 500..<520 as Range<Int64> { s.arrive(k) }
        #expect(s.requester.nextDue == nil)
        // A pause: the coordinator ended the epoch; nothing more of it is expected.
        var paused = Stream(epoch: 4)
        paused.join()
        for k in 1..<10 as Range<Int64> { paused.arrive(k) }
        paused.requester.ended(epoch: 4)
        #expect(paused.requester.nextDue == nil)
        #expect(paused.requester.due(at: paused.sent(20), outputLead: 60_000_000).sequences.isEmpty)
        #expect(paused.requester.statistics.missed == 0)
        // Told late (a live input whose writer paused, a source that ran dry): the packets
        // counted missing from the epoch's end on were never sent; they are neither asked for
        // again nor lost, and those before the end still are.
        var dry = Stream(epoch: 5)
        dry.join()
        for k in 1..<10 as Range<Int64> { dry.arrive(k) }
        #expect(dry.requester.due(at: dry.sent(13) + 7_000_000, outputLead: 60_000_000).sequences.map(\.rawValue) == [10, 11, 12, 13])
        dry.requester.ended(epoch: 5, at: dry.presentation(11))
        #expect(dry.requester.statistics.missed == 1)
        #expect(dry.requester.due(at: dry.sent(13) + 20_000_000, outputLead: 60_000_000).sequences.map(\.rawValue) == [10])
    }

    @Test func aLossyPathGetsMoreCopiesAndALongGapIsNotChased() {
        var s = Stream()
        var k: Int64 = 0
        var random = SeededRandom(seed: 3)
        for _ in 0..<1_000 {
            k += Double.random(in: 0..<1, using: &random) < 0.1 ? 2 : 1
            s.arrive(k)
        }
        #expect(s.requester.lossRate > 0.05)
        k += 2
        s.arrive(k)
        let due = s.requester.due(at: s.sent(k - 1) + 20_000_000, outputLead: 60_000_000)
        #expect(due.sequences.contains(SequenceNumber(UInt16(k - 1))) && due.copies == 4)
        let before = s.requester.statistics.missed
        s.requester.reset(ssrc: 1)
        s.arrive(0)
        s.arrive(500)  // a 10 s outage: only the last packets are tracked, and only those still in time asked for
        #expect(s.requester.statistics.missed - before == 499)
        var asked = Set<UInt16>()
        var now = s.sent(500) + 5_000_000
        for _ in 0..<100 {
            asked.formUnion(s.requester.due(at: now, outputLead: 60_000_000).sequences.map(\.rawValue))
            now = now + 5_000_000
        }
        let gap = asked.filter { $0 < 500 }
        #expect(!gap.isEmpty && gap.allSatisfy { $0 >= 436 }, "\(asked.sorted())")
    }

    /// What a loss's answer had to spare is kept (`recoveries`): an answer in time, and one
    /// that came after its packet was given up (how late it was); not a joining room's
    /// answers, nor a second copy of an answer, nor an answer to a packet that came itself.
    @Test func theAnswersToLossesTellHowEarlyTheyCame() throws {
        var s = Stream()
        s.join()
        let joined = s.sent(0) + 5_000_000
        #expect(s.requester.recoveries.least(now: joined.nanoseconds) == nil)
        for k in 1..<5 as Range<Int64> { s.arrive(k) }
        s.arrive(6)
        let asked = s.requester.due(at: s.sent(6) + 5_000_000, outputLead: 60_000_000).sequences
        #expect(asked == [SequenceNumber(5)])
        // Answered 30 ms after it was sent: 120 ms before it is heard.
        s.arrive(5, retransmitted: true, at: s.sent(5) + 30_000_000)
        s.arrive(5, retransmitted: true, at: s.sent(5) + 31_000_000)  // the second copy
        #expect(s.requester.recoveries.least(now: s.sent(6).nanoseconds) == 120_000_000)
        // A packet asked for that came itself (reordered), then its answer: nothing more.
        for k in 7..<9 as Range<Int64> { s.arrive(k) }
        s.arrive(10)
        #expect(s.requester.due(at: s.sent(10) + 5_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(9)])
        s.arrive(9, delay: 25_000_000)
        s.arrive(9, retransmitted: true, at: s.sent(9) + 26_000_000)
        #expect(s.requester.recoveries.least(now: s.sent(10).nanoseconds) == 120_000_000)
        // Asked for, unanswered until too late for the output (60 ms ahead): given up; its
        // answer 10 ms after its time says so.
        for k in 11..<13 as Range<Int64> { s.arrive(k) }
        s.arrive(14)
        #expect(s.requester.due(at: s.sent(14) + 5_000_000, outputLead: 60_000_000).sequences == [SequenceNumber(13)])
        for k in 15..<20 as Range<Int64> { s.arrive(k) }
        _ = s.requester.due(at: s.presentation(13) - 60_000_000, outputLead: 60_000_000)
        #expect(s.requester.statistics.abandoned == 1)
        s.arrive(13, retransmitted: true, at: s.presentation(13) + 10_000_000)
        #expect(s.requester.recoveries.least(now: s.sent(20).nanoseconds) == -10_000_000)
    }

    /// A path that brings nothing for a while (a dropout) is asked less and less often
    /// (every answer would be lost, and each costs the room's allowance at the coordinator);
    /// once a packet comes again, what is missing is asked for at once.
    @Test func aPathThatBringsNothingIsAskedLessOftenUntilItIsBack() throws {
        var s = Stream(lead: 400_000_000)
        s.join()
        for k in 1..<10 as Range<Int64> { s.arrive(k) }
        // Nothing after packet 9: 10 is overdue 7 ms after it was sent, then 11, 12...
        var asks: [Int64] = []
        var now = s.sent(10)
        while now < s.sent(10) + 200_000_000 {
            if s.requester.due(at: now, outputLead: 60_000_000).sequences.contains(SequenceNumber(10)) {
                asks.append((now - s.sent(10)) / 1_000_000)
            }
            now = now + 1_000_000
        }
        // Every round trip (12 ms) while the path may be only slow, then twice as late each
        // time once it has brought nothing for three packets' time (60 ms).
        #expect(asks.count < 8, "\(asks)")
        #expect(zip(asks.dropFirst(), asks).map { $0 - $1 }.last.map { $0 >= 48 } == true, "\(asks)")
        // The path is back (packet 21 comes): every packet asked for before is asked for at
        // once (20 is not yet overdue).
        s.arrive(21, at: now)
        let back = s.requester.due(at: now, outputLead: 60_000_000).sequences
        #expect(back.map(\.rawValue) == Array(10...19), "\(back) \(asks)")
    }

    /// A dropout's first packets are given up before the path is back, and only its last
    /// ones' answers would come: what was given up while the path brought nothing counts as
    /// answered a round trip after it came back (how much more latency it needs). A longer
    /// silence is an outage, and one that ends in another epoch a pause: they tell nothing.
    @Test func aDropoutTellsHowLateItsFirstPacketsWouldHaveBeenAnswered() throws {
        for (silence, paused) in [(200, false), (1_000, false), (200, true)] as [(Int64, Bool)] {
            var s = Stream(epoch: 1)
            s.join()
            for k in 1..<10 as Range<Int64> { s.arrive(k) }
            // Nothing from packet 10 on for `silence` ms: asked for, then given up in turn.
            let back = 10 + silence / 20
            var now = s.sent(10)
            while now < s.sent(back) + 5_000_000 {
                _ = s.requester.due(at: now, outputLead: 60_000_000)
                now = now + 1_000_000
            }
            #expect(s.requester.statistics.abandoned > 0)
            if paused { s.epoch = 2 }
            s.arrive(back)
            let least = s.requester.recoveries.least(now: (s.sent(back) + 5_000_000).nanoseconds)
            if silence == 200, !paused {
                // Packet 10, heard 150 ms after it was sent, answered 205 + 12 ms after: 67 ms late.
                #expect(least == -67_000_000, "\(String(describing: least))")
            } else {
                #expect(least == nil, "\(paused ? "a pause" : "an outage") told \(String(describing: least))")
            }
        }
    }
}
