import ArgumentParser
import Foundation
import TuttiCodecs
import TuttiCore

struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode MP3 files to raw PCM (s16le, 48 kHz, stereo): what the coordinator would play.")

    @Argument(help: "MP3 files.")
    var files: [String]

    @Option(help: "Write the PCM here (default: standard output).")
    var output: String?

    func validate() throws {
        if files.isEmpty { throw ValidationError("name at least one MP3 file") }
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
        for file in files {
            let decoder = try MP3Decoder(path: file)
            var pcm: [Float] = []
            while try decoder.read(into: &pcm) > 0 {
                sink.write(Data(PCM16.encode(pcm)))
                pcm.removeAll(keepingCapacity: true)
            }
        }
    }
}
