import Testing
@testable import TuttiCore

@Suite("Control messages and sender reports")
struct MessageTests {
    static let messages: [ControlMessage] = [
        .timeRequest(originate: 0x0102_0304_0506_0708),
        .timeResponse(originate: 99, receive: NTPTimestamp(rawValue: 1 << 40), transmit: NTPTimestamp(rawValue: (1 << 40) + 5)),
        .subscribe(rtpPort: 5004, leaseSeconds: 30),
        .subscribed(ssrc: 0xCAFE_F00D, payloadType: 96),
        .roomReport(RoomReport(name: "Kitchen — 厨房", state: "playing", interrupted: true, clockOffsetMicroseconds: -3.5,
                               outputLatencyMilliseconds: 70.2, packetsReceived: 1_000, settingsVersion: 7, epoch: 3)),
        .roomSettings(version: 9, volume: 0.4567, muted: true, outputDelayMicroseconds: 35_000),
        .epochEnd(epoch: 0xFFFF_FFFF, at: NTPTimestamp(nanoseconds: 123_456_789_000)),
    ]

    @Test(arguments: messages)
    func roundTrips(message: ControlMessage) throws {
        let bytes = message.encode()
        #expect(Array(bytes[0..<4]) == Array("TUTC".utf8))
        #expect(try ControlMessage.decode(bytes) == message)
        for cut in 0..<bytes.count {
            #expect(throws: PacketError.self) { try ControlMessage.decode(Array(bytes[0..<cut])) }
        }
    }

    @Test func sizesMatchTheProtocolDocument() throws {
        #expect(ControlMessage.timeRequest(originate: 0).encode().count == 16)
        #expect(ControlMessage.timeResponse(originate: 0, receive: .init(rawValue: 0), transmit: .init(rawValue: 0)).encode().count == 32)
        #expect(ControlMessage.subscribe(rtpPort: 1, leaseSeconds: 1).encode().count == 12)
        #expect(ControlMessage.subscribed(ssrc: 1, payloadType: 96).encode().count == 16)
        #expect(ControlMessage.roomSettings(version: 1, volume: 1, muted: false, outputDelayMicroseconds: 0).encode().count == 20)
        #expect(ControlMessage.epochEnd(epoch: 1, at: NTPTimestamp(rawValue: 0)).encode().count == 20)
        let full = RoomReport(name: String(repeating: "x", count: 64), state: "acquiring-clock", clockOffsetMicroseconds: -123_456_789.123,
                              clockUncertaintyMicroseconds: 123_456.789, roundTripMicroseconds: 1_234_567.891, bufferedPackets: 1_000,
                              outputLatencyMilliseconds: 1_234.567, packetsReceived: Int(Int32.max), packetsLost: Int(Int32.max),
                              packetsRecovered: Int(Int32.max), framesConcealed: Int(Int32.max), packetsLate: Int(Int32.max),
                              timingErrorMicroseconds: -123_456.789, settingsVersion: .max, epoch: .max, outputDelayMilliseconds: 1_000,
                              packetsMissed: Int(Int32.max), packetsRetransmitted: Int(Int32.max), steps: Int(Int32.max),
                              slews: Int(Int32.max), outages: Int(Int32.max))
        let report = ControlMessage.roomReport(full).encode()
        #expect(report.count < 1_000, "a report with a long name and every counter large still fits one datagram: \(report.count)")
        #expect(try ControlMessage.decode(report) == .roomReport(full))
        // A report from a follower older than the newer counters still reads.
        var older = full
        (older.packetsMissed, older.packetsRetransmitted, older.steps, older.slews, older.outages) = (nil, nil, nil, nil, nil)
        #expect(try ControlMessage.decode(ControlMessage.roomReport(older).encode()) == .roomReport(older))
    }

    @Test func rejectsForeignAndUnknown() {
        #expect(throws: PacketError.badMagic) { try ControlMessage.decode(Array("HELLO WORLD12345".utf8)) }
        var bytes = ControlMessage.timeRequest(originate: 1).encode()
        bytes[5] = 77
        #expect(throws: PacketError.unknownType(77)) { try ControlMessage.decode(bytes) }
        bytes[4] = 9
        #expect(throws: PacketError.badVersion(9)) { try ControlMessage.decode(bytes) }
        #expect(throws: PacketError.oversized(2000)) { try ControlMessage.decode([UInt8](repeating: 0, count: 2000)) }
        var settings = ControlMessage.roomSettings(version: 1, volume: 1, muted: false, outputDelayMicroseconds: 0).encode()
        settings[12] = 0xFF  // volume above 100 %
        #expect(throws: PacketError.self) { try ControlMessage.decode(settings) }
        var report = ControlMessage.roomReport(RoomReport(name: "A")).encode()
        report[9] = UInt8(ascii: "!")
        #expect(throws: PacketError.badPayload("room report is not valid JSON")) { try ControlMessage.decode(report) }
        // 513 brackets killed the coordinator inside Foundation's decoder; now a clear refusal.
        let deep = Array(report[0..<8]) + [UInt8](repeating: UInt8(ascii: "["), count: 513)
        #expect(throws: PacketError.badPayload("room report nests too deeply")) { try ControlMessage.decode(deep) }
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
