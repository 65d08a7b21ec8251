import Foundation
import Testing
import TuttiCore
@testable import TuttiCodecs

@Suite("Codecs: libopus")
struct CodecTests {
    static func sine(frames: Int, hz: Double) -> [Float] {
        (0..<frames).flatMap { i -> [Float] in
            let v = Float(0.5 * sin(2 * Double.pi * hz * Double(i) / 48_000))
            return [v, v]
        }
    }

    @Test(arguments: [20.0, 10.0])
    func opusRoundTripKeepsTheSignal(frameMs: Double) throws {
        var settings = OpusFrameEncoder.Settings()
        settings.frameMilliseconds = frameMs
        let encoder = try OpusFrameEncoder(settings: settings)
        let decoder = try OpusFrameDecoder()
        let n = settings.frameSize
        let input = Self.sine(frames: n * 50, hz: 440)
        var output: [Float] = []
        for k in 0..<50 {
            let packet = try encoder.encode(input, offset: k * n * 2)
            #expect(!packet.isEmpty && packet.count < 1000)
            let decoded = try decoder.decode(packet, into: &output)
            #expect(decoded == n)
        }
        // Compensate the codec delay and compare the last half.
        let delay = encoder.lookahead
        #expect(delay > 0 && delay < 960)
        var err = 0.0, sig = 0.0
        for i in (n * 25)..<(n * 49) {
            let a = Double(input[i * 2]), b = Double(output[(i + delay) * 2])
            err += (a - b) * (a - b)
            sig += a * a
        }
        let snr = 10 * log10(sig / err)
        #expect(snr > 15, "SNR \(snr) dB")
    }

    /// A mono encoder (a Sendspin player that asks for one channel) takes one sample a
    /// frame; its packets decode (to both channels) with the signal kept. Three channels are
    /// refused.
    @Test func aMonoEncoderKeepsTheSignal() throws {
        var settings = OpusFrameEncoder.Settings()
        settings.channels = 1
        settings.bitrate = 64_000
        let encoder = try OpusFrameEncoder(settings: settings)
        let decoder = try OpusFrameDecoder()
        let input = Self.sine(frames: 960 * 40, hz: 440).enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        var output: [Float] = []
        for k in 0..<40 { _ = try decoder.decode(try encoder.encode(input, offset: k * 960), into: &output) }
        var err = 0.0, sig = 0.0
        for i in (960 * 20)..<(960 * 39) {
            let a = Double(input[i]), b = Double(output[(i + encoder.lookahead) * 2])
            err += (a - b) * (a - b)
            sig += a * a
        }
        #expect(10 * log10(sig / err) > 15)
        settings.channels = 3
        #expect(throws: CodecError.self) { try OpusFrameEncoder(settings: settings) }
    }

    @Test func lossIsConcealedAndFECRecoversWhenPresent() throws {
        var settings = OpusFrameEncoder.Settings()
        settings.bitrate = 24_000  // low enough for SILK/hybrid, which carries LBRR (FEC)
        settings.expectedLossPercent = 20
        let encoder = try OpusFrameEncoder(settings: settings)
        let decoder = try OpusFrameDecoder()
        let input = Self.sine(frames: 960 * 20, hz: 300)
        var packets: [[UInt8]] = []
        for k in 0..<20 { packets.append(try encoder.encode(input, offset: k * 960 * 2)) }
        var out: [Float] = []
        for k in 0..<10 { _ = try decoder.decode(packets[k], into: &out) }
        #expect(try decoder.conceal(frames: 960, into: &out) == 960)
        let recovered = try decoder.decodeFEC(from: packets[12], frames: 960, into: &out)
        #expect(recovered == 960 || recovered == 0)
        if packets[12][0] >> 3 < 16 { #expect(recovered == 960) }
        decoder.reset()
        #expect(try decoder.decode(packets[13], into: &out) == 960)
        // A CELT packet (128 kb/s music) carries no FEC: reported as 0, not garbage.
        let celt = try OpusFrameEncoder()
        let packet = try celt.encode(Self.sine(frames: 960, hz: 440))
        #expect(packet[0] >> 3 >= 16)
        #expect(try decoder.decodeFEC(from: packet, frames: 960, into: &out) == 0)
    }

    @Test func garbagePayloadIsAnErrorNotACrash() throws {
        let decoder = try OpusFrameDecoder()
        var out: [Float] = []
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let junk = (0..<Int.random(in: 1..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? decoder.decode(junk, into: &out)
        }
    }
}
