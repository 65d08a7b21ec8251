import CFFmpeg
import TuttiCore

/// Finds calibration probes (`CalibrationProbe`) in a recording: the recording correlated
/// with each probe through libavutil's real DFTs (a matched filter: the recording's
/// spectrum times the probe's conjugate, back; block by block, overlap-save), then the probe's first arrival read from
/// the correlation (`ProbeArrival.first`, pure).
public enum ProbeFinder {
    /// Where each probe (by seed) arrived in `recording` (mono, 48 kHz), or nil for one that
    /// is not heard there.
    public static func find(seeds: [UInt32], in recording: [Float]) throws(MediaError) -> [ProbeArrival?] {
        guard !recording.isEmpty else { return seeds.map { _ in nil } }
        let transform = try RealDFT(size: blockSize)
        // Overlap-save: each block of the recording gives the lags whose whole probe lies in
        // it. The recording's blocks are transformed once, for every probe.
        let step = blockSize - CalibrationProbe.length
        let blocks = try stride(from: 0, to: recording.count, by: step).map { start throws(MediaError) in
            (start, try transform.forward(Array(recording[start..<min(recording.count, start + blockSize)])))
        }
        var arrivals: [ProbeArrival?] = []
        for seed in seeds {
            let probe = try transform.forward(CalibrationProbe(seed: seed, level: 1).samples)
            var correlation = [Float](repeating: 0, count: recording.count)
            for (start, block) in blocks {
                var product = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: block.count)
                for i in 0..<block.count {
                    let a = block[i], b = probe[i]
                    product[i] = AVComplexFloat(re: a.re * b.re + a.im * b.im, im: a.im * b.re - a.re * b.im)
                }
                let lags = try transform.inverse(product)
                for k in 0..<min(step, recording.count - start) { correlation[start + k] = lags[k] }
            }
            arrivals.append(ProbeArrival.first(in: correlation))
        }
        return arrivals
    }

    /// The DFT's size: libavutil 57 transforms powers of two up to 2¹⁷ complex points fast
    /// (a real DFT of 2¹⁸ is one of them); longer ones it does naively.
    static let blockSize = 1 << 18
}

/// A forward (real to complex) and an inverse (complex to real) DFT of one size.
private final class RealDFT {
    let size: Int
    private var forwardContext: OpaquePointer?
    private var forwardFunction: av_tx_fn?
    private var inverseContext: OpaquePointer?
    private var inverseFunction: av_tx_fn?

    init(size: Int) throws(MediaError) {
        self.size = size
        var scale: Float = 1
        var inverseScale: Float = 1 / Float(size)
        let flags = UInt64(AV_TX_UNALIGNED.rawValue)
        guard av_tx_init(&forwardContext, &forwardFunction, AV_TX_FLOAT_RDFT, 0, Int32(size), &scale, flags) == 0,
              av_tx_init(&inverseContext, &inverseFunction, AV_TX_FLOAT_RDFT, 1, Int32(size), &inverseScale, flags) == 0 else {
            av_tx_uninit(&forwardContext)
            throw .resampler(reason: "libavutil has no real DFT of \(size) points")
        }
    }

    deinit {
        av_tx_uninit(&forwardContext)
        av_tx_uninit(&inverseContext)
    }

    /// The spectrum (size/2 + 1 bins) of `signal`, zero-padded to the size.
    func forward(_ signal: [Float]) throws(MediaError) -> [AVComplexFloat] {
        var input = signal + [Float](repeating: 0, count: max(0, size - signal.count))
        var output = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: size / 2 + 1)
        input.withUnsafeMutableBytes { i in
            output.withUnsafeMutableBytes { o in forwardFunction?(forwardContext, o.baseAddress, i.baseAddress, MemoryLayout<Float>.stride) }
        }
        return output
    }

    /// The signal (size points, scaled by 1/size) of a spectrum of size/2 + 1 bins.
    func inverse(_ spectrum: [AVComplexFloat]) throws(MediaError) -> [Float] {
        var input = spectrum
        var output = [Float](repeating: 0, count: size + 2)
        input.withUnsafeMutableBytes { i in
            output.withUnsafeMutableBytes { o in inverseFunction?(inverseContext, o.baseAddress, i.baseAddress, MemoryLayout<AVComplexFloat>.stride) }
        }
        return Array(output.prefix(size))
    }
}
