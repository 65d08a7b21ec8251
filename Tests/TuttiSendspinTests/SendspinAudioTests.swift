import Foundation
import Testing
@testable import TuttiSendspin

/// Sendspin's audio chunks, PCM and clock replies, held to the reference implementation's
/// packing (Python's `struct.pack(">BqI", ...)` for the header) and the spec's PCM convention.
@Suite("Sendspin audio and time")
struct SendspinAudioTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func aChunksHeaderIsTheReferences() {
        let chunk = SendspinAudioChunk(timestamp: 1_234_567_890_123, sendAhead: 150_000, payload: [0xAA, 0xBB])
        // struct.pack(">BqI", 4, 1234567890123, 150000)
        #expect(Self.hex(chunk.bytes) == "04" + "0000011f71fb04cb" + "000249f0" + "aabb")
        #expect(SendspinAudioChunk(bytes: chunk.bytes) == chunk)
        // struct.pack(">BqI", 4, -5, 0): a timestamp before the clock's zero, and a late send.
        let late = SendspinAudioChunk(timestamp: -5, sentAt: 10, payload: [])
        #expect(Self.hex(late.bytes) == "04fffffffffffffffb00000000")
        #expect(SendspinAudioChunk(timestamp: 10_000_000_000, sentAt: 0, payload: []).sendAhead == UInt32.max)
        #expect(SendspinAudioChunk(bytes: [4, 0, 0]) == nil)
        #expect(SendspinAudioChunk(bytes: [8] + [UInt8](repeating: 0, count: 12)) == nil)
    }

    @Test func pcmIsLittleEndianAndPacked() {
        // struct.pack("<3h", 0, 16384, -32768)
        #expect(Self.hex(SendspinPCM.encode([0, 0.5, -1], bitDepth: 16)) == "00000040" + "0080")
        // Clipped, and 24-bit samples in 3 bytes.
        #expect(SendspinPCM.encode([2, -2], bitDepth: 16) == [0xFF, 0x7F, 0x00, 0x80])
        #expect(SendspinPCM.encode([0.5, -0.5], bitDepth: 24) == [0x00, 0x00, 0x40, 0x00, 0x00, 0xC0])
        let samples: [Float] = (0..<480).map { sin(Float($0) * 0.05) * 0.8 }
        for depth in SendspinPCM.depths {
            let back = SendspinPCM.decode(SendspinPCM.encode(samples, bitDepth: depth), bitDepth: depth)
            let worst = zip(samples, back).map { abs($0 - $1) }.max() ?? 1
            #expect(back.count == samples.count && worst <= 1 / Float(1 << (depth - 1)), "\(depth) bits: \(worst)")
        }
        #expect(SendspinPCM.decode([1, 2, 3], bitDepth: 16).count == 1)
    }

    @Test func aClockExchangeIsAnswered() throws {
        let text = #"{"type":"client/time","payload":{"client_transmitted":123456789}}"#
        let stamp = try #require(SendspinTime.clientTransmitted(in: text))
        #expect(stamp == 123_456_789)
        #expect(SendspinTime.clientTransmitted(in: #"{"type":"client/state","payload":{}}"#) == nil)
        #expect(SendspinTime.clientTransmitted(in: "nonsense") == nil)
        let reply = SendspinTime.reply(clientTransmitted: stamp, received: 5_000, transmitted: 5_020)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])
        #expect(parsed["type"] as? String == "server/time")
        let payload = try #require(parsed["payload"] as? [String: Int])
        #expect(payload == ["client_transmitted": 123_456_789, "server_received": 5_000, "server_transmitted": 5_020])
    }
}
