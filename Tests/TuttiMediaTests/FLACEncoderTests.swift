import Foundation
import Testing
import TuttiCore
@testable import TuttiMedia

/// FLAC made by `FLACEncoder` (Sendspin's lossless codec) decodes back, through FFmpeg's own
/// FLAC demuxer and decoder, to exactly the samples that went in at its bit depth, one
/// block at a time.
@Suite("Media: FLAC encoding")
struct FLACEncoderTests {
    @Test(arguments: [16, 24]) func blocksDecodeBackToTheSamplesExactly(bitDepth: Int) throws {
        let encoder = try FLACEncoder(channels: 2, bitDepth: bitDepth, blockSize: 960)
        #expect(encoder.streamHeader.count == 42 && Array(encoder.streamHeader.prefix(4)) == Array("fLaC".utf8))
        // STREAMINFO: blocks of 960, 48 kHz, 2 channels, the bit depth (bits 80 to 107).
        let info = encoder.streamInfo
        #expect(info[0] == 0x03 && info[1] == 0xC0 && info[2] == 0x03 && info[3] == 0xC0)
        let rate = (Int(info[10]) << 12) | (Int(info[11]) << 4) | (Int(info[12]) >> 4)
        #expect(rate == 48_000 && Int((info[12] >> 1) & 0x07) + 1 == 2 && ((Int(info[12]) & 1) << 4 | Int(info[13]) >> 4) + 1 == bitDepth)
        let scale = Float(1 << (bitDepth - 1))
        var stream = encoder.streamHeader
        var sent: [Float] = []
        for block in 0..<25 {
            let samples = (0..<1_920).map { i -> Float in
                let t = Double(block * 960 + i / 2) / 48_000
                let phase: Double = i % 2 == 0 ? 0 : 1
                let value = Float(sin(2 * Double.pi * 440 * t + phase) * 0.6)
                return (value * scale).rounded() / scale
            }
            let frame = try encoder.encode(samples)
            #expect(frame.count > 16 && frame.count < 1_920 * bitDepth / 8, "a block of \(frame.count) bytes")
            #expect(frame[0] == 0xFF && frame[1] & 0xFE == 0xF8, "a FLAC frame's sync code")
            stream += frame
            sent += samples
        }
        let decoder = try MediaDecoder(input: MemoryInput(stream), name: "sendspin.flac", formatHint: "flac")
        var got: [Float] = []
        while try decoder.read(into: &got) > 0 {}
        #expect(got.count == sent.count)
        #expect(got == sent, "the first difference at \(zip(got, sent).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
    }

    @Test func whatItCannotMakeIsRefused() {
        #expect(throws: MediaError.self) { try FLACEncoder(channels: 2, bitDepth: 32, blockSize: 960) }
        #expect(throws: MediaError.self) { try FLACEncoder(channels: 2, bitDepth: 16, blockSize: 8) }
        #expect(throws: MediaError.self) { try FLACEncoder(channels: 0, bitDepth: 16, blockSize: 960) }
    }
}
