import TuttiCore

/// Linear PCM as RFC 3190's L24: 24-bit two's complement samples, big-endian, channels
/// interleaved (left, right), no header: 6 bytes a frame.
public enum L24 {
    public static let bytesPerFrame = 6
    static let scale: Float = 8_388_608  // 2^23

    /// `frames` stereo frames from `offset` (in samples) of interleaved `pcm`, rounded to
    /// 24 bits and clipped to full scale.
    public static func encode(_ pcm: [Float], offset: Int, frames: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: frames * bytesPerFrame)
        out.withUnsafeMutableBufferPointer { bytes in
            pcm.withUnsafeBufferPointer { samples in
                for i in 0..<(frames * 2) {
                    let v = Int32(max(-scale, min(scale - 1, (samples[offset + i] * scale).rounded())))
                    bytes[i * 3] = UInt8(truncatingIfNeeded: v >> 16)
                    bytes[i * 3 + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    bytes[i * 3 + 2] = UInt8(truncatingIfNeeded: v)
                }
            }
        }
        return out
    }
}

/// Decodes L24 packets (RFC 3190) into 48 kHz interleaved stereo float; a lost packet is
/// concealed by repeating the last, fading out (`Concealment`).
public final class L24FrameDecoder: ConcealingDecoder {
    var concealment = Concealment()

    public init() {}

    public func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        guard !payload.isEmpty, payload.count % L24.bytesPerFrame == 0 else {
            throw CodecError.lossless(codec: "L24", reason: "\(payload.count) bytes is not a whole number of 6-byte frames")
        }
        let frames = payload.count / L24.bytesPerFrame
        output.reserveCapacity(output.count + frames * 2)
        payload.withUnsafeBufferPointer { bytes in
            for i in 0..<(frames * 2) {
                // The three bytes in the top of an Int32, shifted down with the sign.
                let v = Int32(bitPattern: UInt32(bytes[i * 3]) << 24 | UInt32(bytes[i * 3 + 1]) << 16 | UInt32(bytes[i * 3 + 2]) << 8) >> 8
                output.append(Float(v) / L24.scale)
            }
        }
        concealment.decoded(output, frames: frames)
        return frames
    }
}

/// A decoder for each codec a zone's stream may carry, by payload type: what a room plays.
/// FLAC's is made at its first frame, so that only a room whose zone streams FLAC loads
/// libFLAC (CFLACLoader): 0.3 MB of a follower's memory otherwise.
public func streamDecoders() throws(CodecError) -> [UInt8: any FrameDecoder] {
    [StreamCodec.opus.payloadType: try OpusFrameDecoder(), StreamCodec.pcm.payloadType: L24FrameDecoder(),
     StreamCodec.flac.payloadType: MadeOnFirstUse { () throws(CodecError) in try FLACFrameDecoder() }]
}

/// A decoder made when it is first asked to decode or conceal; until then a reset has
/// nothing to forget. A decoder that cannot be made throws at each use, as a broken frame.
final class MadeOnFirstUse: FrameDecoder {
    private let make: () throws(CodecError) -> any FrameDecoder
    private var decoder: (any FrameDecoder)?

    init(_ make: @escaping () throws(CodecError) -> any FrameDecoder) { self.make = make }

    private func made() throws(CodecError) -> any FrameDecoder {
        if let decoder { return decoder }
        let made = try make()
        decoder = made
        return made
    }

    func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        try made().decode(payload, into: &output)
    }

    func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int {
        try made().decodeFEC(from: nextPayload, frames: frames, into: &output)
    }

    func conceal(frames: Int, into output: inout [Float]) throws -> Int {
        try made().conceal(frames: frames, into: &output)
    }

    func reset() { decoder?.reset() }
}
