import Testing
@testable import TuttiCore

@Suite("Stream packetizer")
struct StreamPacketizerTests {
    static func make() -> StreamPacketizer {
        StreamPacketizer(ssrc: 9, initialSequence: 65_535, initialTimestamp: UInt32.max - 100,
                         origin: CoordinatorTime(nanoseconds: 1_000_000_000), codecDelay: 312)
    }

    @Test func stampsContinuousTimestampsAndPresentationTimes() {
        var p = Self.make()
        let a = p.packetize([1], frames: 960)
        let b = p.packetize([2], frames: 960)
        #expect(b.sequenceNumber == a.sequenceNumber.advanced(by: 1))
        #expect(a.timestamp.distance(to: b.timestamp) == 960)  // across the 32-bit wrap
        #expect(a.presentationTime == CoordinatorTime(nanoseconds: 1_000_000_000 - 6_500_000))
        #expect(b.presentationTime! - a.presentationTime! == 20_000_000)
    }

    @Test func skippingMovesTheTimelineButNotTheSequence() {
        var p = Self.make()
        let a = p.packetize([1], frames: 960)
        p.skip(frames: 960 * 3)
        let b = p.packetize([2], frames: 960)
        #expect(b.sequenceNumber == a.sequenceNumber.advanced(by: 1))
        #expect(a.timestamp.distance(to: b.timestamp) == 960 * 4)
        #expect(b.presentationTime! - a.presentationTime! == 80_000_000)
        #expect(b.epoch == a.epoch)
    }

    @Test func restartingCutsTheTimelineUnderANewEpoch() {
        var p = Self.make()
        let a = p.packetize([1], frames: 960)
        p.restart(at: CoordinatorTime(nanoseconds: 5_000_000_000))
        let b = p.packetize([2], frames: 960)
        #expect(b.presentationTime == CoordinatorTime(nanoseconds: 5_000_000_000))
        #expect(a.timestamp.distance(to: b.timestamp) == 960)
        #expect(b.epoch == a.epoch! &+ 1)
    }

    /// An epoch's first packet carries the marker, and only it: a room that finds it
    /// buffered knows the stream starts there (it is not joining a stream already playing).
    @Test func anEpochsFirstPacketCarriesTheMarker() {
        var p = Self.make()
        let a = p.packetize([1], frames: 960)
        p.skip(frames: 960)
        let b = p.packetize([2], frames: 960)
        p.restart(at: CoordinatorTime(nanoseconds: 5_000_000_000))
        let c = p.packetize([3], frames: 960)
        let d = p.packetize([4], frames: 960)
        #expect([a, b, c, d].map(\.marker) == [true, false, true, false])
        let decoded = try? RTPPacket.decode(c.encode())
        #expect(decoded?.marker == true)
    }
}
