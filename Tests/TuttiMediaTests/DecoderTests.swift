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
        if decoder.lengthIsExact { #expect(decoder.length == Int64(frames), "\(format): length \(decoder.length ?? -1)") }
        #expect(abs((decoder.length ?? 0) - Int64(frames)) < 2_400, "\(format): length \(decoder.length ?? -1)")
    }
}
