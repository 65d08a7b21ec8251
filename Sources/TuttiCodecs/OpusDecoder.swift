import COpus
import COpusShim
import TuttiCore

/// Decodes Opus packets into 48 kHz interleaved stereo float with libopus: normal
/// decoding, in-band FEC recovery of a lost packet, and packet loss concealment.
public final class OpusFrameDecoder: FrameDecoder {
    private let decoder: OpaquePointer
    /// The largest Opus frame: 120 ms.
    static let maximumFrames = 5760
    private var scratch = [Float](repeating: 0, count: maximumFrames * 2)

    public init() throws(CodecError) {
        var err: Int32 = 0
        guard let dec = opus_decoder_create(Int32(AudioFormat.sampleRate), Int32(AudioFormat.channels), &err),
              err == OPUS_OK else {
            throw .opus(operation: "decoder_create", code: err, message: OpusFrameEncoder.message(err))
        }
        decoder = dec
    }

    deinit { opus_decoder_destroy(decoder) }

    public func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        try run(payload, frames: Self.maximumFrames, fec: false, into: &output)
    }

    public func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int {
        // Only SILK and hybrid packets (TOC configurations 0-15) can carry LBRR (FEC) data.
        guard let toc = nextPayload.first, toc >> 3 < 16 else { return 0 }
        return try run(nextPayload, frames: frames, fec: true, into: &output)
    }

    public func conceal(frames: Int, into output: inout [Float]) throws -> Int {
        try run(nil, frames: frames, fec: false, into: &output)
    }

    public func reset() { _ = tutti_opus_decoder_reset(decoder) }

    private func run(_ payload: ArraySlice<UInt8>?, frames: Int, fec: Bool, into output: inout [Float]) throws(CodecError) -> Int {
        let want = Int32(min(frames, Self.maximumFrames))
        let n: Int32 = scratch.withUnsafeMutableBufferPointer { out in
            if let payload {
                return payload.withUnsafeBufferPointer { p in
                    opus_decode_float(decoder, p.baseAddress, Int32(p.count), out.baseAddress!, want, fec ? 1 : 0)
                }
            }
            return opus_decode_float(decoder, nil, 0, out.baseAddress!, want, 0)
        }
        if n < 0 { throw .opus(operation: fec ? "FEC decode" : "decode", code: n, message: OpusFrameEncoder.message(n)) }
        output.append(contentsOf: scratch[0..<Int(n) * 2])
        return Int(n)
    }
}
