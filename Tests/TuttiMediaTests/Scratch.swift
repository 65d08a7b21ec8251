import Foundation
import TuttiTesting

/// The media tests' files: one folder per test process, removed when it exits.
enum Scratch {
    static let folder: String = {
        let dir = path()
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: Scratch.path()) }
        return dir
    }()

    static func path() -> String { NSTemporaryDirectory() + "tutti-media-tests-\(getpid())" }

    /// `signal` (interleaved, `channels`) written as a float WAV and encoded as `format`
    /// under `name`; returns the file's path.
    static func file(_ name: String, _ signal: [Float], channels: Int = 2, rate: Int, format: MediaFixtures.Format,
                     extra: [String] = []) throws -> String {
        let wav = "\(folder)/\(name).source.wav"
        try MediaFixtures.writeWAV(signal, channels: channels, rate: rate, to: wav)
        let path = "\(folder)/\(name).\(format.fileExtension)"
        try MediaFixtures.encode(wav, as: format, to: path, extra: extra)
        return path
    }
}
