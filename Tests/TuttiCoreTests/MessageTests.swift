import Testing
@testable import TuttiCore
import TuttiTesting

@Suite("Control messages and sender reports")
struct MessageTests {
    static let messages: [ControlMessage] = [
        .timeRequest(originate: 0x0102_0304_0506_0708),
        .timeResponse(originate: 99, receive: NTPTimestamp(rawValue: 1 << 40), transmit: NTPTimestamp(rawValue: (1 << 40) + 5), cookie: 0xC00C1E),
        .subscribe(rtpPort: 5004, leaseSeconds: 30),
        .subscribe(rtpPort: 5004, leaseSeconds: 30, stream: 0xDEAD_BEEF),
        .subscribed(ssrc: 0xCAFE_F00D, payloadType: 96),
        .roomReport(RoomReport(name: "Kitchen — 厨房", state: .playing, interrupted: true, clockOffsetMicroseconds: -3.5,
                               outputLatencyMilliseconds: 70.2, packetsReceived: 1_000, settingsVersion: 7, epoch: 3,
                               packetsMissed: 2, packetsRetransmitted: 1, steps: 0, slews: 3, outages: 0, holes: 1, concealments: 4)),
        .roomSettings(version: 9, volume: 0.4567, muted: true, outputDelayMicroseconds: 35_000),
        .roomSettings(version: 9, volume: 0.4567, muted: true, outputDelayMicroseconds: 35_000, stream: 0x1234_5678),
        .epochEnd(epoch: 0xFFFF_FFFF, at: NTPTimestamp(nanoseconds: 123_456_789_000)),
        .notPaired,
        .probe(seed: 0xABCD_0001, level: 0.25, at: NTPTimestamp(nanoseconds: 987_654_321_000)),
    ]

    @Test(arguments: messages)
    func roundTrips(message: ControlMessage) throws {
        let bytes = message.seal(stamp: 0x1122_3344_5566_7788, with: SumTag(key: 1))
        #expect(Array(bytes[0..<4]) == Array("TUTC".utf8))
        let opened = try ControlMessage.open(bytes, with: SumTag(key: 1))
        #expect(opened.message == message && opened.stamp == 0x1122_3344_5566_7788)
        for cut in 0..<bytes.count {
            #expect(throws: PacketError.self) { try ControlMessage.open(Array(bytes[0..<cut]), with: SumTag(key: 1)) }
        }
    }

    /// Signed with another key, or changed on the way (any byte: header, stamp, body, tag), a
    /// message is refused before its body is read; only the unsigned notice passes.
    @Test(arguments: messages)
    func anotherKeyOrAnyChangedByteIsRefused(message: ControlMessage) throws {
        let bytes = message.seal(stamp: 42, with: SumTag(key: 1))
        if message == .notPaired {
            #expect(try ControlMessage.open(bytes, with: SumTag(key: 2)).message == .notPaired)
            return
        }
        #expect(throws: PacketError.unauthenticated) { try ControlMessage.open(bytes, with: SumTag(key: 2)) }
        for i in 6..<bytes.count {
            var changed = bytes
            changed[i] ^= 0x01
            #expect(throws: PacketError.unauthenticated) { try ControlMessage.open(changed, with: SumTag(key: 1)) }
        }
    }

    @Test func sizesMatchTheProtocolDocument() throws {
        let key = SumTag(key: 3)
        // An answer is never larger than what asked for it (no amplification).
        #expect(ControlMessage.timeRequest(originate: 0).seal(stamp: 0, with: key).count == 72)
        #expect(ControlMessage.timeResponse(originate: 0, receive: .init(rawValue: 0), transmit: .init(rawValue: 0), cookie: 1)
            .seal(stamp: 0, with: key).count == 72)
        #expect(ControlMessage.subscribe(rtpPort: 1, leaseSeconds: 1).seal(stamp: 0, with: key).count == 48)
        #expect(ControlMessage.subscribed(ssrc: 1, payloadType: 96).seal(stamp: 0, with: key).count == 48)
        #expect(ControlMessage.notPaired.seal(stamp: 0, with: key).count == 40)
        #expect(ControlMessage.roomSettings(version: 1, volume: 1, muted: false, outputDelayMicroseconds: 0).seal(stamp: 0, with: key).count == 56)
        #expect(ControlMessage.epochEnd(epoch: 1, at: NTPTimestamp(rawValue: 0)).seal(stamp: 0, with: key).count == 52)
        #expect(ControlMessage.probe(seed: 1, level: 1, at: NTPTimestamp(rawValue: 0)).seal(stamp: 0, with: key).count == 56)
        let full = RoomReport(name: String(repeating: "x", count: 64), state: .acquiringClock, clockOffsetMicroseconds: -123_456_789.123,
                              clockUncertaintyMicroseconds: 123_456.789, roundTripMicroseconds: 1_234_567.891, bufferedPackets: 1_000,
                              outputLatencyMilliseconds: 1_234.567, packetsReceived: Int(Int32.max), packetsLost: Int(Int32.max),
                              packetsRecovered: Int(Int32.max), framesConcealed: Int(Int32.max), packetsLate: Int(Int32.max),
                              timingErrorMicroseconds: -123_456.789, settingsVersion: .max, epoch: .max, outputDelayMilliseconds: 1_000,
                              packetsMissed: Int(Int32.max), packetsRetransmitted: Int(Int32.max), steps: Int(Int32.max),
                              slews: Int(Int32.max), outages: Int(Int32.max), holes: Int(Int32.max), concealments: Int(Int32.max))
        let report = ControlMessage.roomReport(full).encode()
        #expect(report.count < 1_000, "a report with a long name and every counter large still fits one datagram: \(report.count)")
        #expect(try ControlMessage.decode(report).message == .roomReport(full))
    }

    /// Every figure travels as an integer of a set width: absurd ones are clamped when sent,
    /// and whatever arrives converts without a trap (1e300 ms crashed the coordinator).
    @Test func roomReportFiguresAreBoundedIntegers() throws {
        let absurd = RoomReport(name: "A", clockOffsetMicroseconds: .infinity, clockUncertaintyMicroseconds: -5,
                                roundTripMicroseconds: .nan, bufferedPackets: -3, outputLatencyMilliseconds: 1e300,
                                packetsReceived: Int.max, packetsLost: Int.min, timingErrorMicroseconds: -1e300)
        guard case let .roomReport(r) = try ControlMessage.decode(ControlMessage.roomReport(absurd).encode()).message else {
            Issue.record("not a report")
            return
        }
        #expect(r.clockOffsetMicroseconds == Double(Int64.max) / 1_000)
        #expect(r.clockUncertaintyMicroseconds == 0 && r.roundTripMicroseconds == 0 && r.bufferedPackets == 0)
        #expect(r.outputLatencyMilliseconds == Double(UInt32.max) / 1_000)
        #expect(r.packetsReceived == Int(UInt32.max) && r.packetsLost == 0)
        #expect(r.timingErrorMicroseconds == Double(Int32.min) / 1_000)
        // Any 80 bytes of figures read as some report; only flags, state and name are checked.
        for seed in 0..<200 {
            var rng = SeededRandom(seed: UInt64(seed))
            let body = (0..<80).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var bytes = ControlMessage.roomReport(RoomReport(name: "A")).encode()
            bytes.replaceSubrange(24..<104, with: body)
            bytes[24] &= 3
            bytes[25] %= 3
            guard case let .roomReport(r) = try ControlMessage.decode(bytes).message else { continue }
            #expect(r.name == "A" && r.outputLatencyMilliseconds >= 0 && r.outputLatencyMilliseconds.isFinite)
        }
    }

    /// The holes and concealments follow the name: a follower from before them sends none
    /// (read as absent), one from after them may send more (left unread).
    @Test func roomReportsOlderAndNewerThanTheHolesRead() throws {
        let report = RoomReport(name: "Hall", state: .playing, holes: 3, concealments: 5, headroomMilliseconds: -87.5,
                                recoveryHeadroomMilliseconds: 12.25)
        let bytes = ControlMessage.roomReport(report).encode()
        guard case let .roomReport(now) = try ControlMessage.decode(bytes).message else {
            Issue.record("not a report")
            return
        }
        #expect(now.holes == 3 && now.concealments == 5 && now.headroomMilliseconds == -87.5 && now.recoveryHeadroomMilliseconds == 12.25)
        // No headroom yet (no packet came) is told as none, not as 0.
        guard case let .roomReport(none) = try ControlMessage.decode(ControlMessage.roomReport(RoomReport(name: "Hall")).encode()).message else {
            Issue.record("not a report")
            return
        }
        #expect(none.headroomMilliseconds == nil && none.recoveryHeadroomMilliseconds == nil)
        // A follower from before the recoveries' headroom ends after the headroom.
        guard case let .roomReport(noRecoveries) = try ControlMessage.decode(Array(bytes.dropLast(RoomReport.headroomSize))).message else {
            Issue.record("a follower's report from before the recoveries' headroom was refused")
            return
        }
        #expect(noRecoveries.headroomMilliseconds == -87.5 && noRecoveries.recoveryHeadroomMilliseconds == nil)
        // A follower from before the headroom ends after the concealments.
        guard case let .roomReport(noHeadroom) = try ControlMessage.decode(Array(bytes.dropLast(2 * RoomReport.headroomSize))).message else {
            Issue.record("a follower's report from before the headroom was refused")
            return
        }
        #expect(noHeadroom.concealments == 5 && noHeadroom.headroomMilliseconds == nil)
        guard case let .roomReport(old) = try ControlMessage.decode(Array(bytes.dropLast(RoomReport.addedSize + 2 * RoomReport.headroomSize))).message else {
            Issue.record("an older follower's report was refused")
            return
        }
        #expect(old.name == "Hall" && old.holes == nil && old.concealments == nil)
        guard case let .roomReport(newer) = try ControlMessage.decode(bytes + [1, 2, 3, 4]).message else {
            Issue.record("a newer follower's report was refused")
            return
        }
        #expect(newer.name == "Hall" && newer.holes == 3)
        // A name that claims more than is there, or bytes that are neither the old nor the new end, are refused.
        #expect(throws: PacketError.self) { try ControlMessage.decode(Array(bytes.dropLast(3 + RoomReport.headroomSize))) }
        #expect(throws: PacketError.self) { try ControlMessage.decode(Array(bytes.dropLast(1))) }
    }

    @Test func rejectsForeignAndUnknown() throws {
        #expect(throws: PacketError.badMagic) { try ControlMessage.decode(Array("HELLO WORLD12345HELLO WO".utf8)) }
        var bytes = ControlMessage.timeRequest(originate: 1).encode()
        bytes[5] = 77
        #expect(throws: PacketError.unknownType(77)) { try ControlMessage.decode(bytes) }
        bytes[4] = 9
        #expect(throws: PacketError.badVersion(9)) { try ControlMessage.decode(bytes) }
        #expect(throws: PacketError.oversized(2000)) { try ControlMessage.decode([UInt8](repeating: 0, count: 2000)) }
        // Settings from a coordinator before zones (no stream field) name no stream.
        let zoned = ControlMessage.roomSettings(version: 4, volume: 0.5, muted: false, outputDelayMicroseconds: 7, stream: 99).encode()
        #expect(try ControlMessage.decode(Array(zoned.dropLast(4))).message
            == .roomSettings(version: 4, volume: 0.5, muted: false, outputDelayMicroseconds: 7, stream: 0))
        var settings = ControlMessage.roomSettings(version: 1, volume: 1, muted: false, outputDelayMicroseconds: 0).encode()
        settings[28] = 0xFF  // volume above 100 %
        #expect(throws: PacketError.self) { try ControlMessage.decode(settings) }
        let report = ControlMessage.roomReport(RoomReport(name: "Ab")).encode()
        var unknownState = report
        unknownState[25] = 3
        #expect(throws: PacketError.self) { try ControlMessage.decode(unknownState) }
        var longerName = report
        longerName[104] = 3
        #expect(throws: PacketError.badPayload("room report's name is not 3 bytes")) { try ControlMessage.decode(longerName) }
        var badUTF8 = report
        badUTF8[105] = 0xFF
        #expect(throws: PacketError.self) { try ControlMessage.decode(badUTF8) }
        var blank = report
        blank[105] = 0x20
        blank[106] = 0x09
        #expect(throws: PacketError.self) { try ControlMessage.decode(blank) }
        // Cut anywhere but where an older follower's report ends (before the holes, before
        // the headroom, or before the recoveries' headroom), it is refused.
        for cut in 24..<report.count where ![RoomReport.addedSize + 2 * RoomReport.headroomSize, 2 * RoomReport.headroomSize,
                                             RoomReport.headroomSize].contains(report.count - cut) {
            #expect(throws: PacketError.self) { try ControlMessage.decode(Array(report[..<cut])) }
        }
        // 513 brackets killed the coordinator inside Foundation's JSON decoder; the report is
        // binary now, and they are refused as what they are.
        let deep = Array(report[0..<16]) + [UInt8](repeating: UInt8(ascii: "["), count: 513)
        #expect(throws: PacketError.self) { try ControlMessage.decode(deep) }
    }

    @Test func jsonNestingIsMeasuredOutsideStrings() {
        #expect(JSONNesting.isShallow(#"{"a": [1, {"b": [[]]}]}"#))
        #expect(!JSONNesting.isShallow(String(repeating: "[", count: 33)))
        #expect(JSONNesting.isShallow(String(repeating: "[", count: 32)))
        #expect(JSONNesting.isShallow(#"{"name": "\#(String(repeating: "[", count: 600))"}"#), "brackets in a string")
        #expect(!JSONNesting.isShallow(#"{"n": "\\"}"# + String(repeating: "{", count: 40)), "an escaped backslash ends no string")
        #expect(JSONNesting.isShallow(#"{"n": "\"}"# + String(repeating: "{", count: 40)), "an escaped quote ends no string")
    }

    @Test func senderReportRoundTripsWithCNAME() throws {
        let sr = RTCPSenderReport(ssrc: 42, ntpTime: NTPTimestamp(nanoseconds: 7_500_000_000),
                                  rtpTimestamp: StreamTimestamp(123_456), packetCount: 10, octetCount: 3000,
                                  cname: "tutti@house")
        let bytes = sr.encode()
        #expect(bytes.count % 4 == 0)
        #expect(bytes[1] == 200)
        #expect(try RTCPSenderReport.decode(bytes) == sr)
        for cut in 0..<28 {
            #expect(throws: PacketError.self) { try RTCPSenderReport.decode(Array(bytes[0..<cut])) }
        }
    }

    @Test(arguments: [Int64(0), 1, 999_999_999, 1_000_000_000, 86_400_123_456_789, 4_000_000_000_000_000])
    func ntpTimestampKeepsNanoseconds(ns: Int64) {
        #expect(abs(NTPTimestamp(nanoseconds: ns).nanoseconds - ns) <= 1)
    }

    @Test func sessionDescriptionHasRFC7587AndRFC7273Lines() {
        let sdp = SessionDescription(sessionID: 1, originAddress: "127.0.0.1", connectionAddress: "239.255.77.77",
                                     isMulticast: true, port: 5004, frameMilliseconds: 20, mediaClockOffset: 1234).text
        #expect(sdp.contains("m=audio 5004 RTP/AVP 96\r\n"))
        #expect(sdp.contains("a=rtpmap:96 opus/48000/2\r\n"))
        #expect(sdp.contains("c=IN IP4 239.255.77.77/1\r\n"))
        #expect(sdp.contains("a=ts-refclk:local\r\n"))
        #expect(sdp.contains("a=mediaclk:direct=1234\r\n"))
        #expect(sdp.contains("useinbandfec=1"))
    }

    @Test func mediaClockOffsetMapsBackToTheStream() {
        // Timestamp 1000 is presented at 2 s: at time 0 the stream stood 96000 frames earlier.
        let offset = SessionDescription.mediaClockOffset(timestamp: StreamTimestamp(1000), presentedAt: CoordinatorTime(nanoseconds: 2_000_000_000))
        #expect(offset == UInt32(truncatingIfNeeded: 1000 - 96_000))
    }
}

@Suite("Return routability and freshness")
struct HouseLinkTests {
    @Test func aCookieIsGoodForItsAddressAndTheNextSlotOnly() {
        let cookies = ReturnRoutability(key: SumTag(key: 7))
        let here: [UInt8] = [10, 0, 0, 2, 0x13, 0x8D], there: [UInt8] = [10, 0, 0, 3, 0x13, 0x8D]
        let t: Int64 = 1_000 * ReturnRoutability.slot + 5
        let cookie = cookies.cookie(for: here, at: t)
        #expect(cookie != 0)
        #expect(cookies.isValid(cookie, for: here, at: t))
        #expect(cookies.isValid(cookie, for: here, at: t + ReturnRoutability.slot))
        #expect(!cookies.isValid(cookie, for: here, at: t + 2 * ReturnRoutability.slot))
        #expect(!cookies.isValid(cookie, for: there, at: t), "a cookie is its address's")
        #expect(!cookies.isValid(0, for: here, at: t))
        #expect(!ReturnRoutability(key: SumTag(key: 8)).isValid(cookie, for: here, at: t), "a restarted coordinator's key differs")
    }

    @Test func anAnswerCountsOnceAndOnlyForARequestOfTheLastSecond() {
        var link = CoordinatorLink()
        let t1: Int64 = 50_000_000_000
        link.sent(originate: t1)
        let at = LocalTime(nanoseconds: t1 + 3_000_000)
        let answered1 = link.answer(originate: UInt64(t1 + 1), transmit: CoordinatorTime(nanoseconds: 9), cookie: 5, arrived: at)
        #expect(!answered1, "never asked")
        let answered2 = link.answer(originate: UInt64(t1), transmit: CoordinatorTime(nanoseconds: 7_000_000_000), cookie: 5, arrived: at)
        #expect(answered2)
        #expect(link.cookie == 5)
        let answered3 = link.answer(originate: UInt64(t1), transmit: CoordinatorTime(nanoseconds: 7_000_000_000), cookie: 6, arrived: at)
        #expect(!answered3, "a replay")
        link.sent(originate: t1 + 10_000_000)
        let answered4 = link.answer(originate: UInt64(t1 + 10_000_000), transmit: CoordinatorTime(nanoseconds: 8_000_000_000), cookie: 6,
                             arrived: LocalTime(nanoseconds: t1 + 1_200_000_000))
        #expect(!answered4, "too late")
        #expect(link.cookie == 5)
    }

    @Test func otherMessagesAreFreshOnlyNearTheCoordinatorsNow() {
        var link = CoordinatorLink()
        #expect(!link.isFresh(stamp: CoordinatorTime(nanoseconds: 0), arrived: LocalTime(nanoseconds: 0)), "nothing is fresh before an answer")
        link.sent(originate: 1_000_000_000)
        // The coordinator's clock reads 100 s when the follower's reads 1.002 s.
        let answered5 = link.answer(originate: 1_000_000_000, transmit: CoordinatorTime(nanoseconds: 100_000_000_000), cookie: 1,
                            arrived: LocalTime(nanoseconds: 1_002_000_000))
        #expect(answered5)
        let later = LocalTime(nanoseconds: 61_002_000_000)  // a minute on: the coordinator reads 160 s
        #expect(link.isFresh(stamp: CoordinatorTime(nanoseconds: 159_999_000_000), arrived: later))
        #expect(!link.isFresh(stamp: CoordinatorTime(nanoseconds: 157_000_000_000), arrived: later), "3 s old: a replay")
        #expect(!link.isFresh(stamp: CoordinatorTime(nanoseconds: 163_000_000_000), arrived: later), "from a coordinator's earlier, later-running clock")
    }
}
