/// Decodes one stream's packets into 48 kHz interleaved stereo float samples.
///
/// The follower's pipeline calls it in stream order; a real implementation wraps Opus
/// (TuttiCodecs), tests may use a raw-PCM one. Each call appends to `output` and returns
/// the number of sample frames appended.
public protocol FrameDecoder: AnyObject {
    func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int
    /// Rebuilds the `frames` frames before `nextPayload` from its in-band FEC data;
    /// returns 0 when the packet carries none.
    func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int
    /// Packet loss concealment for `frames` frames.
    func conceal(frames: Int, into output: inout [Float]) throws -> Int
    /// Forgets all state, before decoding a new, unrelated stretch of stream.
    func reset()
}

extension FrameDecoder {
    /// Decodes a payload held in an array of its own.
    public func decode(_ payload: [UInt8], into output: inout [Float]) throws -> Int {
        try decode(payload[...], into: &output)
    }

    /// Rebuilds frames from the FEC data of a payload held in an array of its own.
    public func decodeFEC(from nextPayload: [UInt8], frames: Int, into output: inout [Float]) throws -> Int {
        try decodeFEC(from: nextPayload[...], frames: frames, into: &output)
    }
}
