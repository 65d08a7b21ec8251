import Testing
@testable import TuttiCore

@Suite("Jitter buffer")
struct JitterBufferTests {
    func packet(_ seq: Int64) -> BufferedPacket {
        BufferedPacket(sequence: seq, timestamp: seq * 960, presentationTime: CoordinatorTime(nanoseconds: seq * 20_000_000),
                       payload: [UInt8(seq & 0xFF)])
    }

    @Test func reordersIntoSequence() {
        var jb = JitterBuffer(capacity: 16)
        for s: Int64 in [3, 1, 2, 5, 4] { #expect(jb.insert(packet(s)) == .accepted) }
        var out: [Int64] = []
        for _ in 0..<5 { if case let .packet(p) = jb.pop() { out.append(p.sequence) } }
        #expect(out == [1, 2, 3, 4, 5])
        #expect(jb.pop() == .empty(sequence: 6))
    }

    @Test func dropsDuplicatesAndLatePackets() {
        var jb = JitterBuffer(capacity: 16)
        #expect(jb.insert(packet(10)) == .accepted)
        #expect(jb.insert(packet(10)) == .duplicate)
        _ = jb.pop()
        #expect(jb.insert(packet(10)) == .late)  // already played
        #expect(jb.insert(packet(9)) == .late)
        #expect(jb.insert(packet(11)) == .accepted)
    }

    @Test func reportsLossWithTheFollowingPacketForFEC() {
        var jb = JitterBuffer(capacity: 16)
        for s: Int64 in [1, 3, 4] { _ = jb.insert(packet(s)) }
        #expect(jb.pop() == .packet(packet(1)))
        #expect(jb.pop() == .missing(sequence: 2, following: packet(3)))
        #expect(jb.pop() == .packet(packet(3)))
        // A gap of two: the first missing slot has no following packet yet.
        _ = jb.insert(packet(7))
        #expect(jb.pop() == .packet(packet(4)))
        #expect(jb.pop() == .missing(sequence: 5, following: nil))
        #expect(jb.pop() == .missing(sequence: 6, following: packet(7)))
        // A packet for a slot already passed is late.
        #expect(jb.insert(packet(5)) == .late)
    }

    @Test func boundsItsSize() {
        var jb = JitterBuffer(capacity: 4)
        for s: Int64 in 0..<4 { #expect(jb.insert(packet(s)) == .accepted) }
        #expect(jb.insert(packet(4)) == .overflow)
        #expect(jb.count == 4)
    }

    @Test func skipsForward() {
        var jb = JitterBuffer(capacity: 16)
        for s: Int64 in 0..<6 { _ = jb.insert(packet(s)) }
        jb.skip(to: 4)
        #expect(jb.pop() == .packet(packet(4)))
        #expect(jb.insert(packet(2)) == .late)
    }
}
