import Foundation
import Testing
import TuttiCore
import TuttiTesting
@testable import TuttiMedia

@Suite("Media: every format, sample-exact")
struct DecoderTests {
    static func decodeAll(_ decoder: MediaDecoder) throws -> [Float] {
        var pcm: [Float] = []
        while try decoder.read(into: &pcm) > 0 {}
        return pcm
    }

    /// Each format gives back exactly the frames that went in, in their place: no encoder
    /// delay before them, no padding after.
    @Test(arguments: MediaFixtures.formats)
    func decodesExactlyWhatWentIn(format: MediaFixtures.Format) throws {
        let rate = format.rate ?? 44_100
        let frames = 44_100 + 1_237
        let signal = MediaFixtures.chirp(frames: frames, rate: rate)
        let path = try Scratch.file("exact-\(format.name)", signal, rate: rate, format: format)
        let decoder = try MediaDecoder(path: path)
        #expect(decoder.sampleRate == rate)
        let pcm = try Self.decodeAll(decoder)
        #expect(pcm.count / 2 == frames, "\(format): \(pcm.count / 2) frames decoded, \(frames) went in")
        let (lag, rms) = MediaFixtures.align(MediaFixtures.left(signal), MediaFixtures.left(pcm), window: 2_000..<40_000)
        #expect(lag == 0, "\(format): off by \(lag) frames")
        #expect(rms < (format.lossless ? 1e-4 : 0.02), "\(format): RMS difference \(rms)")
        let length = decoder.length?.count ?? -1
        if decoder.lengthIsExact { #expect(length == Int64(frames), "\(format): length \(length)") }
        #expect(abs(length - Int64(frames)) < 2_400, "\(format): length \(length)")
    }
}

extension DecoderTests {
    /// A seek lands on the very frame a straight decode reaches there (lossless), or within
    /// the codec's noise of it (lossy, which decodes a little before to settle); the straight
    /// decode is where the source is (`decodesExactlyWhatWentIn`).
    @Test(arguments: MediaFixtures.formats)
    func seeksToTheFrame(format: MediaFixtures.Format) throws {
        let rate = format.rate ?? 44_100
        let frames = 3 * rate + 777
        let signal = MediaFixtures.chirp(frames: frames, rate: rate)
        let path = try Scratch.file("seek-\(format.name)", signal, rate: rate, format: format)
        let whole = try Self.decodeAll(MediaDecoder(path: path))
        for target in [0, 1, 4_099, rate + 13, 2 * rate + 2_048] {
            let decoder = try MediaDecoder(path: path)
            try decoder.seek(to: TrackFrames(Int64(target), rate: decoder.sampleRate))
            #expect(decoder.position.count == Int64(target))
            var part: [Float] = []
            while part.count < 4_000, try decoder.read(into: &part) > 0 {}
            let expected = Array(whole[target * 2..<target * 2 + 2_000])
            let worst = zip(part.prefix(2_000), expected).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < (format.lossless ? 1e-6 : 0.05), "\(format): seek to \(target) off by \(worst)")
        }
    }

    /// Any rate and depth, mono or more channels, comes out as stereo at its own rate:
    /// mono on both sides at full level, 5.1 mixed down.
    @Test(arguments: [(44_100, 1, "s16"), (48_000, 2, "s32"), (88_200, 2, "s32"), (96_000, 2, "s32"), (192_000, 2, "s16"),
                      (22_050, 1, "s16"), (48_000, 6, "s16")])
    func anyRateDepthAndLayout(rate: Int, channels: Int, depth: String) throws {
        let frames = rate / 2 + 11
        let signal = MediaFixtures.chirp(frames: frames, rate: rate, channels: channels)
        let format = MediaFixtures.Format("FLAC \(depth)", "flac", ["-c:a", "flac", "-sample_fmt", depth], lossless: true)
        let path = try Scratch.file("layout-\(rate)-\(channels)-\(depth)", signal, channels: channels, rate: rate, format: format)
        let decoder = try MediaDecoder(path: path)
        #expect(decoder.sampleRate == rate)
        let pcm = try Self.decodeAll(decoder)
        #expect(pcm.count == frames * 2)
        let left = MediaFixtures.left(pcm)
        let right = stride(from: 1, to: pcm.count, by: 2).map { pcm[$0] }
        let source = stride(from: 0, to: signal.count, by: channels).map { signal[$0] }
        if channels == 1 {
            #expect(MediaFixtures.rmsDifference(left, source, window: 0..<frames) < 1e-4)
            #expect(left == right)
        } else if channels == 2 {
            #expect(MediaFixtures.rmsDifference(left, source, window: 0..<frames) < 1e-4)
        } else {
            #expect((left.map { abs($0) }.max() ?? 0) > 0.05, "the downmix carries the signal")
            #expect((left.map { abs($0) }.max() ?? 2) <= 1)
        }
    }

    /// An AAC file with iTunes' gapless tag and no edit list (as iTunes writes them) is
    /// trimmed by the tag.
    @Test func iTunesGaplessTag() throws {
        let frames = 44_100 + 1_237
        let signal = MediaFixtures.chirp(frames: frames, rate: 44_100)
        let aac = MediaFixtures.format("AAC")
        let plain = try Scratch.file("itunes", signal, rate: 44_100, format: aac, extra: ["-use_editlist", "0", "-metadata", "title=x"])
        let tagged = plain + ".tagged.m4a"
        let smpb = " 00000000 00000400 \(String(format: "%08X", 2_048 - (frames % 1_024))) \(String(format: "%016llX", frames))"
        try MP4Edit.addFreeformTag(named: "iTunSMPB", value: smpb, from: plain, to: tagged)
        let decoder = try MediaDecoder(path: tagged)
        #expect(decoder.length?.count == Int64(frames))
        let pcm = try Self.decodeAll(decoder)
        #expect(pcm.count / 2 == frames)
        let (lag, rms) = MediaFixtures.align(MediaFixtures.left(signal), MediaFixtures.left(pcm), window: 2_000..<40_000)
        #expect(lag == 0)
        #expect(rms < 0.02)
    }
}
