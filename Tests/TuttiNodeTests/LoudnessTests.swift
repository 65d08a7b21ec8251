import Foundation
import Testing
import TuttiCore
import TuttiTesting
@testable import TuttiNode

/// ReplayGain as the player applies it: before encoding, by the house's mode, never past
/// full scale.
@Suite("Even loudness in the player's chain")
struct LoudnessTests {
    static func peak(_ pcm: [Float]) -> Float { pcm.dropFirst(4_800).map { abs($0) }.max() ?? 0 }

    static func tagged(_ name: String, _ tags: [String]) throws -> String {
        let wav = GaplessTests.folder + "/\(name).source.wav"
        try MediaFixtures.writeWAV(MediaFixtures.sine(hz: 440, frames: 48_000, rate: 48_000, amplitude: 0.5), channels: 2, rate: 48_000, to: wav)
        let path = GaplessTests.folder + "/\(name).flac"
        try MediaFixtures.encode(wav, as: MediaFixtures.format("FLAC"), to: path, extra: tags.flatMap { ["-metadata", $0] })
        return path
    }

    @Test func modesPreampAndTheClippingGuard() throws {
        let path = try Self.tagged("loud", ["REPLAYGAIN_TRACK_GAIN=-6.02 dB", "REPLAYGAIN_ALBUM_GAIN=-12.04 dB",
                                            "REPLAYGAIN_TRACK_PEAK=0.5"])
        func peak(_ setting: ReplayGain) throws -> Float { Self.peak(try TrackReader.decode([path], replayGain: setting)) }
        #expect(abs(try peak(ReplayGain(mode: .off)) - 0.5) < 0.002)
        #expect(abs(try peak(ReplayGain(mode: .track)) - 0.25) < 0.002)
        #expect(abs(try peak(ReplayGain(mode: .album)) - 0.125) < 0.002)
        // +12 dB more would take the track's peak (0.5) past full scale: it stops at 1.
        #expect(abs(try peak(ReplayGain(mode: .track, preampDB: 12)) - 1) < 0.01)
        let untagged = try Self.tagged("untagged", [])
        // No peak to go by: +12 dB clips at full scale, never beyond.
        let hot = try TrackReader.decode([untagged], replayGain: ReplayGain(mode: .track, untaggedDB: 12))
        #expect(Self.peak(hot) <= 1.0001)
        #expect(abs(Self.peak(try TrackReader.decode([untagged], replayGain: ReplayGain(mode: .album, untaggedDB: -6.02))) - 0.25) < 0.002)
    }

    /// A change of setting while a track plays glides (no step, no click).
    @Test func aChangeGlides() throws {
        let path = try Self.tagged("glide", ["REPLAYGAIN_TRACK_GAIN=-6.02 dB"])
        let chain = SourceChain(replayGain: ReplayGain(mode: .off))
        let source = try FileSource(path: path)
        var pcm: [Float] = []
        while pcm.count < 9_600, let n = try chain.read(source, into: &pcm), n > 0 {}
        let before = pcm.count
        chain.replayGain.withLock { $0 = ReplayGain(mode: .track) }
        while pcm.count < before + 9_600, let n = try chain.read(source, into: &pcm), n > 0 {}
        let steps = (before / 2 - 100..<before / 2 + 600).map { abs(pcm[2 * $0] - pcm[2 * ($0 - 1)]) }
        // A 440 Hz sine at 0.5 moves at most 0.029 a frame; a step of the gain would show.
        #expect(steps.max()! < 0.035)
        let last = pcm.suffix(4_800).map { abs($0) }.max() ?? 0
        #expect(last > 0.24 && last < 0.26, "\(last)")
    }
}
