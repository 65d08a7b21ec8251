import Testing
import TuttiCodecs
import TuttiCore
@testable import TuttiNode

/// The lossless codecs of a zone's stream: L24 and FLAC frames, encoded as the coordinator
/// does and decoded as a follower does, sample for sample.
@Suite("Lossless stream codecs")
struct LosslessCodecTests {
    /// Noise at full scale, clipped beyond it, as interleaved stereo.
    static func noise(frames: Int, seed: UInt64 = 7) -> [Float] {
        var rng = seed
        return (0..<(frames * 2)).map { _ in
            rng = rng &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(Int64(bitPattern: rng) >> 40) / Float(1 << 23) * 1.1
        }
    }

    /// What 24 bits keep of a sample.
    static func quantized(_ x: Float) -> Float { max(-8_388_608, min(8_388_607, (x * 8_388_608).rounded())) / 8_388_608 }

    @Test func l24IsBigEndianTwentyFourBitsAndRoundTrips() throws {
        let bytes = L24.encode([0.5, -1, 1, -0.5 / 8_388_608 * 3], offset: 0, frames: 2)
        #expect(bytes == [0x40, 0x00, 0x00, 0x80, 0x00, 0x00, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE])
        let pcm = Self.noise(frames: 192)
        let encoder = L24FrameEncoder(frameSize: 192)
        let payload = try encoder.encode([0, 0] + pcm, offset: 2)
        #expect(payload.count == 1_152)
        var out: [Float] = []
        let decoder = L24FrameDecoder()
        #expect(try decoder.decode(payload[...], into: &out) == 192)
        #expect(out == pcm.map(Self.quantized))
        #expect(throws: CodecError.self) { try decoder.decode(payload.dropLast(), into: &out) }
        #expect(throws: CodecError.self) { try decoder.decode([], into: &out) }
    }

    /// Each FLAC frame stands alone: decoded in any order, each gives back exactly the 24
    /// bits that went in.
    @Test func flacFramesDecodeLosslesslyInAnyOrder() throws {
        let pcm = Self.noise(frames: 192 * 4, seed: 11).enumerated().map { i, x in i < 384 ? x * 0.01 : x }  // quiet, then loud
        let encoder = try FLACFrameEncoder(frameSize: 192)
        let frames = try (0..<4).map { try encoder.encode(pcm, offset: $0 * 384) }
        #expect(frames[0].count < frames[3].count)  // quiet music takes fewer bytes
        let decoder = try FLACFrameDecoder()
        for k in [2, 0, 3, 1, 1] {
            var out: [Float] = []
            #expect(try decoder.decode(frames[k][...], into: &out) == 192)
            #expect(out == pcm[(k * 384)..<(k * 384 + 384)].map(Self.quantized), "frame \(k)")
        }
    }

    /// A room's decoders: FLAC's is made at its first frame (libFLAC is loaded then, not at
    /// every room's start), and a reset before it forgets nothing; it then decodes as its own.
    @Test func aRoomsFLACDecoderIsMadeAtItsFirstFrame() throws {
        let pcm = Self.noise(frames: 192, seed: 5)
        let frame = try FLACFrameEncoder(frameSize: 192).encode(pcm, offset: 0)
        let decoder = try #require(try streamDecoders()[StreamCodec.flac.payloadType])
        decoder.reset()
        var out: [Float] = []
        #expect(try decoder.decode(frame[...], into: &out) == 192)
        #expect(out == pcm.map(Self.quantized))
        #expect(try decoder.conceal(frames: 96, into: &out) == 96)
        decoder.reset()
        #expect(try decoder.decode(frame[...], into: &out) == 192)
    }

    /// A broken packet throws (and is concealed by the caller); the next good one decodes
    /// as if nothing had happened; a packet of two frames gives its first only.
    @Test func aBrokenFLACPacketThrowsAndTheNextDecodes() throws {
        let pcm = Self.noise(frames: 384, seed: 3)
        let encoder = try FLACFrameEncoder(frameSize: 192)
        let a = try encoder.encode(pcm, offset: 0), b = try encoder.encode(pcm, offset: 384)
        let decoder = try FLACFrameDecoder()
        var flipped = a
        flipped[a.count / 2] ^= 0x10
        let garbage = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        for broken in [flipped, Array(a.prefix(a.count - 3)), Array(a.prefix(4)), garbage, [0xFF, 0xF8]] {
            var out: [Float] = []
            #expect(throws: CodecError.self) { try decoder.decode(broken[...], into: &out) }
            #expect(try decoder.decode(b[...], into: &out) == 192)
            #expect(Array(out.suffix(384)) == pcm[384...].map(Self.quantized))
        }
        var out: [Float] = []
        #expect(try decoder.decode((a + b)[...], into: &out) == 192)
        out.removeAll()
        #expect(try decoder.decode(b[...], into: &out) == 192)
        #expect(out == pcm[384...].map(Self.quantized))
    }

    /// A lost packet: the last one again, fading to silence over 20 ms across losses in a
    /// row; a packet decoded brings the level back.
    @Test func aLostLosslessPacketIsTheLastOneFadingOut() throws {
        let decoder = L24FrameDecoder()
        var out: [Float] = []
        var silent: [Float] = []
        #expect(try decoder.conceal(frames: 192, into: &silent) == 192)
        #expect(silent.allSatisfy { $0 == 0 })  // nothing decoded yet: silence
        let ones = [Float](repeating: 0.5, count: 384)
        _ = try decoder.decode(L24.encode(ones, offset: 0, frames: 192)[...], into: &out)
        out.removeAll()
        for _ in 0..<6 { _ = try decoder.conceal(frames: 192, into: &out) }
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        #expect(left[0] == 0.5 && left[480] == 0.25 && left[959] > 0 && left[960...].allSatisfy { $0 == 0 })
        #expect(zip(left, left.dropFirst()).allSatisfy { $1 <= $0 })
        out.removeAll()
        _ = try decoder.decode(L24.encode(ones, offset: 0, frames: 192)[...], into: &out)
        _ = try decoder.conceal(frames: 1, into: &out)
        #expect(out.last == 0.5)
    }

    /// A zone's codec makes its player's packets: payload type, frames a packet, size.
    @Test func aPlayerSendsItsZonesCodec() throws {
        for codec in StreamCodec.allCases {
            let encoder = try makeFrameEncoder(codec, opus: .init())
            #expect(encoder.frameSize == codec.framesPerPacket)
            #expect((encoder.lookahead == 0) == (codec != .opus))
            let payload = try encoder.encode(Self.noise(frames: encoder.frameSize), offset: 0)
            #expect(codec != .pcm || payload.count == 1_152)
            #expect(codec != .flac || (payload.count < 1_200 && payload.prefix(2) == [0xFF, 0xF8]))
        }
    }
}
