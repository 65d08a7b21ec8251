import Foundation
import Testing
import TuttiCore
import TuttiMedia
import TuttiTesting
@testable import TuttiNode

/// Albums play as one signal: a continuous signal cut into tracks at odd frame counts and
/// encoded into each format comes out of the player's decoding and chain as that signal,
/// with no gap, no overlap and no click where the tracks meet.
@Suite("Gapless albums in every format")
struct GaplessTests {
    static let folder: String = {
        let dir = NSTemporaryDirectory() + "tutti-gapless-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "tutti-gapless-\(getpid())") }
        return dir
    }()

    /// Where the tracks are cut: odd frame counts, none a multiple of any codec's frame.
    static let cuts = [31_013, 27_127]

    /// The signal cut into three tracks of `format`; their paths.
    static func album(_ signal: [Float], rate: Int, format: MediaFixtures.Format) throws -> [String] {
        var bounds = [0]
        for cut in cuts { bounds.append(bounds.last! + cut) }
        bounds.append(signal.count / 2)
        var paths: [String] = []
        for i in 0..<3 {
            let piece = Array(signal[(bounds[i] * 2)..<(bounds[i + 1] * 2)])
            let wav = "\(folder)/\(format.name)-\(rate)-\(i).source.wav"
            try MediaFixtures.writeWAV(piece, channels: 2, rate: rate, to: wav)
            let path = "\(folder)/\(format.name)-\(rate)-\(i).\(format.fileExtension)"
            try MediaFixtures.encode(wav, as: format, to: path)
            paths.append(path)
        }
        return paths
    }

    @Test(arguments: MediaFixtures.formats)
    func tracksThatFollowEachOtherAreOneSignal(format: MediaFixtures.Format) throws {
        let rate = format.rate ?? 44_100
        let frames = rate * 2 + 333
        let signal = MediaFixtures.chirp(frames: frames, rate: rate, low: 200, high: 3_000)
        let played = try TrackReader.decode(try Self.album(signal, rate: rate, format: format))
        // The reference: the whole signal through the same converter, in one piece.
        var reference: [Float] = []
        if rate == AudioFormat.sampleRate {
            reference = signal
        } else {
            let converter = try RateConverter(from: rate)
            try converter.process(signal[...], into: &reference)
            try converter.flush(into: &reference)
        }
        #expect(abs(played.count - reference.count) <= 2, "\(format): \(played.count / 2) frames, \(reference.count / 2) expected")
        let left = MediaFixtures.left(played), ideal = MediaFixtures.left(reference)
        // Error in 10 ms windows: at the cuts no worse than elsewhere.
        let window = 480
        var errors: [Double] = []
        for start in stride(from: window, to: min(left.count, ideal.count) - window, by: window) {
            errors.append(MediaFixtures.rmsDifference(left, ideal, window: start..<start + window))
        }
        let typical = errors.sorted()[errors.count / 2]
        var at = 0
        for cut in Self.cuts {
            at += cut
            let boundary = Int(AudioFormat.frames(Int64(at), at: rate))
            let near = MediaFixtures.rmsDifference(left, ideal, window: boundary - window..<boundary + window)
            let limit = format.lossless ? 1e-4 : max(3 * typical, 0.004)
            #expect(near < limit, "\(format): error \(near) at the cut at \(boundary), \(typical) elsewhere")
            // No click: no step between neighbouring samples larger than the signal's own.
            let steps = (boundary - 64..<boundary + 64).map { abs(left[$0] - left[$0 - 1]) }
            let own = (boundary - 64..<boundary + 64).map { abs(ideal[$0] - ideal[$0 - 1]) }
            #expect(steps.max()! < own.max()! * 1.5 + 0.01, "\(format): a step of \(steps.max()!) at the cut at \(boundary)")
        }
    }
}
