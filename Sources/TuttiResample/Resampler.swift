import CSampleRate
import TuttiCore

/// Converts interleaved stereo float from one sample rate to another, as a stream (state
/// carried from call to call), with libsamplerate's band-limited sinc converter: for live
/// inputs at 44.1 kHz, brought to the house's 48 kHz. The only importer of libsamplerate.
public final class Resampler {
    public let inputRate: Int
    public let outputRate: Int
    private let state: OpaquePointer
    private var output = [Float]()

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(from inputRate: Int, to outputRate: Int = AudioFormat.sampleRate) throws(Failure) {
        guard inputRate > 0, outputRate > 0 else { throw Failure(description: "sample rates must be positive") }
        self.inputRate = inputRate
        self.outputRate = outputRate
        var error: Int32 = 0
        guard let s = src_new(Int32(SRC_SINC_MEDIUM_QUALITY), 2, &error) else {
            throw Failure(description: "cannot make a resampler: \(String(cString: src_strerror(error)))")
        }
        state = s
    }

    deinit { src_delete(state) }

    /// Forgets the frames the filter holds (after a seek).
    public func reset() { src_reset(state) }

    /// Converts `input` (interleaved stereo frames at `inputRate`) and appends the result to
    /// `into`; returns the frames appended. Frames the filter still holds come out with the
    /// next call.
    @discardableResult
    public func process(_ input: ArraySlice<Float>, into out: inout [Float]) throws(Failure) -> Int {
        let frames = input.count / 2
        guard frames > 0 else { return 0 }
        let ratio = Double(outputRate) / Double(inputRate)
        let capacity = Int((Double(frames) * ratio).rounded(.up)) + 64
        if output.count < capacity * 2 { output = [Float](repeating: 0, count: capacity * 2) }
        var consumed = 0, produced = 0
        while consumed < frames {
            let (used, made, code): (Int, Int, Int32) = input.withUnsafeBufferPointer { inBuffer in
                output.withUnsafeMutableBufferPointer { outBuffer in
                    var data = SRC_DATA(
                        data_in: inBuffer.baseAddress! + consumed * 2, data_out: outBuffer.baseAddress! + produced * 2,
                        input_frames: frames - consumed, output_frames: capacity - produced,
                        input_frames_used: 0, output_frames_gen: 0, end_of_input: 0, src_ratio: ratio)
                    let code = src_process(state, &data)
                    return (data.input_frames_used, data.output_frames_gen, code)
                }
            }
            if code != 0 { throw Failure(description: "resampling failed: \(String(cString: src_strerror(code)))") }
            consumed += used
            produced += made
            if used == 0 && made == 0 { break }
        }
        out.append(contentsOf: output[0..<(produced * 2)])
        return produced
    }
}
