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
    var length: MediaFrames? { decoder.length?.media }
    var loudness: Loudness? { decoder.tags.loudness }
    func read(into output: inout [Float]) throws -> Int? { try decoder.read(into: &output) }
    func seek(to position: MediaFrames) throws {
        try decoder.seek(to: TrackFrames(position, rate: decoder.sampleRate))
    }
}
