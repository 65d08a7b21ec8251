import TuttiCore
import TuttiMedia

/// A local file of any format FFmpeg decodes, at its own rate, sample-exact.
final class FileSource: FrameSource {
    let decoder: MediaDecoder

    init(path: String) throws {
        decoder = try MediaDecoder(path: path)
    }

    var name: String { decoder.name }
    var isLive: Bool { false }
    var framesRead: Int64 { decoder.framesDecoded }
    var sampleRate: Int { decoder.sampleRate }
    var length: Int64? { decoder.length.map { AudioFormat.frames($0, at: decoder.sampleRate) } }
    var loudness: Loudness? { decoder.tags.loudness }
    func read(into output: inout [Float]) throws -> Int? { try decoder.read(into: &output) }
    func seek(toFrame frame: Int64) throws {
        try decoder.seek(toFrame: AudioFormat.frames(frame, at: AudioFormat.sampleRate, to: decoder.sampleRate))
    }
}
