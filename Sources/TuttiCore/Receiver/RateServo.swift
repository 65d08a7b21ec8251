/// A proportional-integral servo that turns playback timing error into a resampling
/// ratio, correcting drift continuously and inaudibly.
///
/// `error` is how late playback is, in seconds (positive: samples are heard after their
/// presentation time). The result is input frames consumed per output frame, within
/// ±`maximumCorrection` of 1.
public struct RateServo: Sendable {
    /// Proportional gain, per second: an error of 1 ms is corrected at 1 ms × gain per second.
    public var proportionalGain: Double
    /// The proportional gain while playback settles after a start, per second: the line a
    /// room started on moves by tens of microseconds in its first second (its slope comes
    /// only after a quarter second of reports), and at 1.5/s the servo took seconds to
    /// follow. Still within ±`maximumCorrection`, so no pitch change is audible.
    public var settlingGain: Double = 3
    public var integralGain: Double
    public var maximumCorrection: Double
    /// How fast the ratio may change, per second: keeps pitch changes gliding.
    public var maximumSlew: Double = 0.002
    public private(set) var integral: Double = 0
    public private(set) var ratio: Double = 1

    public init(proportionalGain: Double = 1.5, integralGain: Double = 0.5, maximumCorrection: Double = 0.0005) {
        self.proportionalGain = proportionalGain
        self.integralGain = integralGain
        self.maximumCorrection = maximumCorrection
    }

    public mutating func update(error: Double, interval: Double, settling: Bool = false) -> Double {
        integral += error * interval
        let limit = maximumCorrection / max(integralGain, 1e-9)
        integral = min(max(integral, -limit), limit)
        let correction = (settling ? settlingGain : proportionalGain) * error + integralGain * integral
        let target = 1 + min(max(correction, -maximumCorrection), maximumCorrection)
        let step = maximumSlew * max(interval, 0.001)
        ratio = min(max(target, ratio - step), ratio + step)
        return ratio
    }

    public mutating func reset() {
        integral = 0
        ratio = 1
    }
}
