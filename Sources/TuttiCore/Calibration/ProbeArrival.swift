/// Where a calibration probe arrived in a recording, read from the recording's correlation
/// with the probe: the first path by which it came (the direct sound), not the strongest
/// (a wall, or a speaker that faces away, can send a reflection louder than the sound that
/// came straight), and how clearly it stands above the correlation's noise. Pure.
public struct ProbeArrival: Sendable, Equatable, Codable {
    /// The first arrival, in frames into the recording (to a fraction of a frame).
    public var frame: Double
    /// The peak of the correlation against its noise (the median of its magnitude, scaled to
    /// a standard deviation): a probe in a quiet room reads in the hundreds, one under noise
    /// as loud as itself some 50; below `heardAbove`, it was not heard.
    public var confidence: Double
    /// How much later than the first arrival the strongest came (frames; 0: the same).
    public var strongestAfter: Double
    /// The peak's width at half its height (frames): 1 to 2 for a clean path; wider when the
    /// room or the speaker smears it.
    public var width: Double

    public static let heardAbove = 12.0
    /// How far before the strongest path a first one is looked for (20 ms).
    public static let lookBack = 960
    /// A first path counts from this fraction of the strongest one's height.
    public static let firstFraction: Float = 0.3

    public var heard: Bool { confidence >= Self.heardAbove }

    public init(frame: Double, confidence: Double, strongestAfter: Double = 0, width: Double = 1) {
        self.frame = frame
        self.confidence = confidence
        self.strongestAfter = strongestAfter
        self.width = width
    }

    /// The arrival in `correlation` (its lag k: the probe starting at frame k of the
    /// recording); nil when it holds nothing.
    public static func first(in correlation: [Float]) -> ProbeArrival? {
        guard correlation.count >= 3 else { return nil }
        let magnitude = correlation.map(abs)
        var strongest = 0
        for k in magnitude.indices where magnitude[k] > magnitude[strongest] { strongest = k }
        let peak = magnitude[strongest]
        guard peak > 0 else { return nil }
        // The noise: the median magnitude of a sample of the correlation (for Gaussian
        // noise, 0.6745 of its standard deviation).
        let step = max(1, magnitude.count / 20_001)
        var sample = stride(from: 0, to: magnitude.count, by: step).map { magnitude[$0] }
        sample.sort()
        let sigma = max(Double(sample[sample.count / 2]) / 0.6745, Double(peak) * 1e-9)
        let floor = max(peak * firstFraction, Float(sigma * heardAbove / 1.5))
        var first = strongest
        for k in max(1, strongest - lookBack)..<strongest where magnitude[k] >= floor && magnitude[k] >= magnitude[k - 1] && magnitude[k] >= magnitude[k + 1] {
            first = k
            break
        }
        // To a fraction of a frame: the parabola through the peak and its neighbours.
        var fraction = 0.0
        if first > 0, first + 1 < magnitude.count {
            let a = Double(magnitude[first - 1]), b = Double(magnitude[first]), c = Double(magnitude[first + 1])
            let denominator = a - 2 * b + c
            if denominator < 0 { fraction = min(0.5, max(-0.5, 0.5 * (a - c) / denominator)) }
        }
        var left = first, right = first
        let half = magnitude[first] / 2
        while left > 0, magnitude[left - 1] >= half { left -= 1 }
        while right + 1 < magnitude.count, magnitude[right + 1] >= half { right += 1 }
        return ProbeArrival(frame: Double(first) + fraction, confidence: Double(peak) / sigma,
                            strongestAfter: Double(strongest - first), width: Double(right - left + 1))
    }
}
