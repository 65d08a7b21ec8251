import CFFmpeg
import TuttiCore

/// Converts interleaved stereo float from one sample rate to another as a stream, with
/// libswresample's SoX resampler at very high quality (its own resampler, finer than its
/// default, where libsoxr is missing). The state runs on from call to call: tracks of the
/// same rate that follow each other go through one converter and come out as one signal.
/// A stretchable converter (a live input's, whose writer's clock is not the house's) uses
/// libswresample's own resampler, which alone can be stretched as it runs (`stretch`).
public final class RateConverter {
    public let inputRate: Int
    public let outputRate: Int
    /// Which engine converts: "soxr" or "swr".
    public private(set) var engine = "soxr"
    private var context: OpaquePointer?
    private var output: [Float] = []

    /// - Parameter stretchable: it may be stretched (`stretch(ppm:)`), even from a rate to
    ///   the same.
    public init(from inputRate: Int, to outputRate: Int = AudioFormat.sampleRate, stretchable: Bool = false) throws(MediaError) {
        guard inputRate >= 1_000, inputRate <= 768_000, outputRate >= 1_000, outputRate <= 768_000 else {
            throw .resampler(reason: "a rate of \(inputRate) Hz is out of range")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        if stretchable {
            try make(soxr: false)
            engine = "swr"
            return
        }
        do {
            try make(soxr: true)
        } catch {
            try make(soxr: false)
            engine = "swr"
        }
    }

    deinit { swr_free(&context) }

    private func make(soxr: Bool) throws(MediaError) {
        swr_free(&context)
        var outLayout = AVChannelLayout(), inLayout = AVChannelLayout()
        tutti_default_layout(&outLayout, 2)
        tutti_default_layout(&inLayout, 2)
        let rc = swr_alloc_set_opts2(&context, &outLayout, AV_SAMPLE_FMT_FLT, Int32(outputRate), &inLayout, AV_SAMPLE_FMT_FLT,
                                     Int32(inputRate), 0, nil)
        guard rc >= 0, let context else { throw .resampler(reason: MediaError.words(rc)) }
        let raw = UnsafeMutableRawPointer(context)
        if soxr {
            _ = av_opt_set_int(raw, "resampler", Int64(SWR_ENGINE_SOXR.rawValue), 0)
            // 28 bits: libsoxr's "very high quality" (stop band past 160 dB).
            _ = av_opt_set_double(raw, "precision", 28, 0)
        } else {
            _ = av_opt_set_int(raw, "filter_size", 64, 0)
            _ = av_opt_set_int(raw, "phase_shift", 12, 0)
            _ = av_opt_set_double(raw, "cutoff", 0.97, 0)
            _ = av_opt_set_int(raw, "filter_type", Int64(SWR_FILTER_TYPE_KAISER.rawValue), 0)
            _ = av_opt_set_int(raw, "kaiser_beta", 12, 0)
        }
        let initialized = swr_init(context)
        guard initialized >= 0 else { throw .resampler(reason: MediaError.words(initialized)) }
    }

    /// Stretches the output by `ppm` from now on, against the rate's own ratio: positive
    /// gives more frames, negative fewer. Only a stretchable converter can.
    public func stretch(ppm: Double) throws(MediaError) {
        // The stretch as frames over a distance of 2^30 output frames (6 hours at 48 kHz),
        // finer than a ppm; set again after half of it (`run`). libswresample stretches by
        // c / (1 − c) for a compensation c (delta over distance): 20,408 ppm for 2 %, as
        // good as exact at a clock's few hundred ppm, but 7 ms too much after a 350 ms growth
        // of a live input's latency. So c is what gives `ppm` exactly.
        let stretch = ppm * 1e-6
        let delta = Int32((stretch / (1 + stretch) * Double(Self.stretchDistance)).rounded())
        let rc = swr_set_compensation(context, delta, Self.stretchDistance)
        guard rc >= 0 else { throw .resampler(reason: "cannot stretch: " + MediaError.words(rc)) }
        stretched = (ppm, 0)
    }

    private static let stretchDistance: Int32 = 1 << 30
    /// The stretch in force, and the frames made since it was set.
    private var stretched: (ppm: Double, frames: Int)?

    /// Frames the converter holds, in output frames (what `flush` would give).
    public var delay: Int { Int(swr_get_delay(context, Int64(outputRate))) }

    /// Converts `input` (interleaved stereo) and appends the result to `out`; returns the
    /// frames appended. What the filter holds comes out with the next call, or `flush`.
    @discardableResult
    public func process(_ input: ArraySlice<Float>, into out: inout [Float]) throws(MediaError) -> Int {
        let frames = input.count / 2
        guard frames > 0 else { return 0 }
        return try run(input, frames: frames, into: &out)
    }

    /// Appends what the filter still holds (the end of the signal); returns the frames.
    @discardableResult
    public func flush(into out: inout [Float]) throws(MediaError) -> Int {
        try run(nil, frames: 0, into: &out)
    }

    /// Forgets what the filter holds (a seek, a new signal).
    public func reset() {
        // swr_init on an initialized context drops its state and starts again.
        _ = swr_init(context)
    }

    private func run(_ input: ArraySlice<Float>?, frames: Int, into out: inout [Float]) throws(MediaError) -> Int {
        let capacity = Int(swr_get_out_samples(context, Int32(frames))) + 16
        guard capacity > 0 else { return 0 }
        if output.count < capacity * 2 { output = [Float](repeating: 0, count: capacity * 2) }
        let made: Int32 = output.withUnsafeMutableBytes { outBytes in
            var outPointer: UnsafeMutablePointer<UInt8>? = outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard let input else { return swr_convert(context, &outPointer, Int32(capacity), nil, 0) }
            return input.withUnsafeBytes { inBytes in
                var inPointer: UnsafePointer<UInt8>? = inBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return swr_convert(context, &outPointer, Int32(capacity), &inPointer, Int32(frames))
            }
        }
        guard made >= 0 else { throw .resampler(reason: MediaError.words(made)) }
        out.append(contentsOf: output[0..<Int(made) * 2])
        if let (ppm, frames) = stretched {
            stretched = (ppm, frames + Int(made))
            if frames + Int(made) > Int(Self.stretchDistance / 2) { try stretch(ppm: ppm) }
        }
        return Int(made)
    }
}
