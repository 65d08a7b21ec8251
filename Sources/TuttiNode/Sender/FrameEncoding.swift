import TuttiCodecs

/// What the player encodes with: Opus, or a test codec.
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
