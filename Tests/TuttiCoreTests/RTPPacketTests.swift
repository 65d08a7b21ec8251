import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("RTP packets")
struct RTPPacketTests {
    static let sample = RTPPacket(
        marker: true, sequenceNumber: SequenceNumber(65_535), timestamp: StreamTimestamp(UInt32.max - 100),
        ssrc: 0xDEAD_BEEF, presentationTime: CoordinatorTime(nanoseconds: 1_234_567_890_123), epoch: 7,
        payload: Array(0..<93))

    @Test func roundTripsWhole() throws {
        let bytes = Self.sample.encode()
        #expect(bytes.count == 12 + 4 + 16 + 93)
        #expect(bytes[0] == 0x90)  // V=2, X=1
        #expect(bytes[1] == 0x80 | 96)
        let decoded = try RTPPacket.decode(bytes)
        #expect(decoded.sequenceNumber == Self.sample.sequenceNumber)
        #expect(decoded.timestamp == Self.sample.timestamp)
        #expect(decoded.ssrc == Self.sample.ssrc)
        #expect(decoded.epoch == 7)
        #expect(decoded.payload == Self.sample.payload)
        // NTP 32.32 keeps the time to within a nanosecond.
        #expect(abs(decoded.presentationTime!.nanoseconds - Self.sample.presentationTime!.nanoseconds) <= 1)
    }

    @Test func plainPacketWithoutExtension() throws {
        var p = Self.sample
        p.presentationTime = nil
        p.epoch = nil
        let bytes = p.encode()
        #expect(bytes.count == 12 + 93)
        #expect(bytes[0] == 0x80)
        #expect(try RTPPacket.decode(bytes) == p)
    }

    @Test func everyTruncationThrowsAndNeverCrashes() {
        let bytes = Self.sample.encode()
        // Header and extension cut anywhere: an error. Payload cut: a shorter payload.
        for length in 0..<(12 + 4 + 16) {
            #expect(throws: PacketError.self) { try RTPPacket.decode(Array(bytes[0..<length])) }
        }
        for length in (12 + 4 + 16)...bytes.count {
            let p = try? RTPPacket.decode(Array(bytes[0..<length]))
            #expect(p?.payload.count == length - 32)
        }
    }

    @Test func skipsUnknownExtensionsAndCSRCs() throws {
        // V=2, X=1, CC=1; one CSRC; extension with an unknown element (id 5, 2 bytes), padding, then ours.
        var bytes: [UInt8] = [0x91, 96, 0x00, 0x01, 0, 0, 0x03, 0xE8, 0, 0, 0, 9, 0xAA, 0xBB, 0xCC, 0xDD]
        bytes += [0xBE, 0xDE, 0x00, 0x04]
        bytes += [0x51, 1, 2, 0]  // id 5, len 2, then a padding byte
        bytes += [0x17] + NTPTimestamp(nanoseconds: 5_000_000_000).rawValue.bigEndianBytes + [0, 0, 0]
        bytes += [42, 43]
        let p = try RTPPacket.decode(bytes)
        #expect(p.sequenceNumber.rawValue == 1)
        #expect(p.timestamp.rawValue == 1000)
        #expect(p.presentationTime?.nanoseconds == 5_000_000_000)
        #expect(p.payload == [42, 43])
    }

    @Test func sendTimeRoundTripsAndIsStampedInPlace() throws {
        var p = Self.sample
        p.sendTime = CoordinatorTime(nanoseconds: 1)
        var bytes = p.encode()
        #expect(bytes.count == 12 + 4 + 24 + 93)  // three elements: 9 + 5 + 9 bytes, padded to 24
        let offset = try #require(RTPPacket.sendTimeOffset(in: bytes))
        #expect(offset == 12 + 4 + 9 + 5 + 1)
        RTPPacket.stamp(&bytes, at: offset, sendTime: CoordinatorTime(nanoseconds: 9_876_543_210_123))
        let decoded = try RTPPacket.decode(bytes)
        #expect(abs(decoded.sendTime!.nanoseconds - 9_876_543_210_123) <= 1)
        #expect(decoded.presentationTime == p.presentationTime.map { NTPTimestamp($0).coordinatorTime })
        #expect(decoded.epoch == 7 && decoded.payload == p.payload)
        // No element, or no extension: nothing to stamp.
        #expect(RTPPacket.sendTimeOffset(in: Self.sample.encode()) == nil)
        var plain = Self.sample
        (plain.presentationTime, plain.epoch) = (nil, nil)
        #expect(RTPPacket.sendTimeOffset(in: plain.encode()) == nil)
        // A damaged extension header is not followed out of the packet.
        for cut in 0..<bytes.count { _ = RTPPacket.sendTimeOffset(in: Array(bytes[0..<cut])) }
    }

    @Test func rejectsWrongVersionAndBadPadding() {
        var bytes = Self.sample.encode()
        bytes[0] = 0x40 | 0x10
        #expect(throws: PacketError.badVersion(1)) { try RTPPacket.decode(bytes) }
        var padded = Self.sample.encode()
        padded[0] |= 0x20
        padded[padded.count - 1] = 255  // more padding than payload
        #expect(throws: PacketError.badPadding) { try RTPPacket.decode(padded) }
    }

    @Test func extensionElementOverrunningItsBlockIsRejected() {
        let bytes: [UInt8] = [0x90, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xBE, 0xDE, 0x00, 0x01, 0x1F, 0, 0, 0]
        #expect(throws: PacketError.self) { try RTPPacket.decode(bytes) }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func fuzzedBytesNeverCrash(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let valid = Self.sample.encode()
        for _ in 0..<5_000 {
            var bytes: [UInt8]
            if Bool.random(using: &random) {
                bytes = (0..<Int.random(in: 0..<80, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                if bytes.count > 0 { bytes[0] = (bytes[0] & 0x3F) | 0x80 }  // mostly version 2, to get past the first check
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            _ = try? RTPPacket.decode(bytes)
            _ = try? RTCPSenderReport.decode(bytes)
            _ = try? ControlMessage.decode(bytes)
        }
    }
}

extension UInt64 {
    var bigEndianBytes: [UInt8] { (0..<8).map { UInt8((self >> UInt64(56 - $0 * 8)) & 0xFF) } }
}
