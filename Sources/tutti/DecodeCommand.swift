import ArgumentParser
import Foundation
import TuttiCore
import TuttiNode

struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode audio files of any format to raw PCM (48 kHz, stereo), one after the other without a seam: what the coordinator would play.")

    @Argument(help: "Audio files (FLAC, ALAC, AAC, Ogg Vorbis, Opus, WAV, AIFF, MP3, ...).")
    var files: [String]

    @Option(help: "Write the PCM here (default: standard output).")
    var output: String?

    @Option(help: "Sample format: s16le or f32le.")
    var format: String = "s16le"

    @Option(help: "ReplayGain: off, track or album.")
    var replaygain: ReplayGain.Mode = .off

    func validate() throws {
        if files.isEmpty { throw ValidationError("name at least one audio file") }
        if !["s16le", "f32le"].contains(format) { throw ValidationError("--format is s16le or f32le, not \(format)") }
    }

    func run() throws {
        let sink: FileHandle
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let h = FileHandle(forWritingAtPath: output) else {
                throw ValidationError("cannot write \(output)")
            }
            sink = h
        } else {
            sink = FileHandle.standardOutput
        }
        let float = format == "f32le"
        try TrackReader(replayGain: ReplayGain(mode: replaygain)).read(files) { pcm in
            sink.write(float ? pcm.withUnsafeBytes { Data($0) } : Data(PCM16.encode(pcm)))
            return true
        }
    }
}

extension ReplayGain.Mode: ExpressibleByArgument {}
