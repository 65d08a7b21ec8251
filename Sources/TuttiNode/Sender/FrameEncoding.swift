import TuttiCodecs
import TuttiCore
import TuttiMedia

/// What the player encodes with: the zone's codec (`StreamCodec`), or a test codec.
protocol FrameEncoding: AnyObject {
    /// Frames per packet (48 kHz).
    var frameSize: Int { get }
    /// Frames the encoder delays its output by.
    var lookahead: Int { get }
    /// Encodes `frameSize` frames from `offset` (in samples) of interleaved stereo `pcm`.
    func encode(_ pcm: [Float], offset: Int) throws -> [UInt8]
    /// Forgets the signal so far (a new epoch).
    func reset()
}

extension OpusFrameEncoder: FrameEncoding {
    var frameSize: Int { settings.frameSize }
}

/// The encoder of a zone's codec.
func makeFrameEncoder(_ codec: StreamCodec, opus: OpusFrameEncoder.Settings) throws -> any FrameEncoding {
    switch codec {
    case .opus: try OpusFrameEncoder(settings: opus)
    case .pcm: L24FrameEncoder(frameSize: codec.framesPerPacket)
    case .flac: try FLACFrameEncoder(frameSize: codec.framesPerPacket)
    }
}

/// PCM as L24 (RFC 3190): the house's samples rounded to 24 bits, nothing delayed.
final class L24FrameEncoder: FrameEncoding {
    let frameSize: Int
    var lookahead: Int { 0 }

    init(frameSize: Int) { self.frameSize = frameSize }

    func encode(_ pcm: [Float], offset: Int) throws -> [UInt8] {
        L24.encode(pcm, offset: offset, frames: frameSize)
    }

    func reset() {}
}

/// FLAC frames of 24 bits, one a packet, each standing alone (FFmpeg's encoder, as the
/// Sendspin players' FLAC): lossless, about half L24's bytes for music; nothing delayed.
final class FLACFrameEncoder: FrameEncoding {
    let frameSize: Int
    var lookahead: Int { 0 }
    private let encoder: FLACEncoder
    private var block: [Float]

    init(frameSize: Int) throws {
        self.frameSize = frameSize
        encoder = try FLACEncoder(channels: AudioFormat.channels, bitDepth: 24, blockSize: frameSize)
        block = [Float](repeating: 0, count: frameSize * AudioFormat.channels)
    }

    func encode(_ pcm: [Float], offset: Int) throws -> [UInt8] {
        block.withUnsafeMutableBufferPointer { out in
            pcm.withUnsafeBufferPointer { out.baseAddress!.update(from: $0.baseAddress! + offset, count: out.count) }
        }
        return try encoder.encode(block)
    }

    func reset() {}
}
