/// Turns time exchanges into a `ClockEstimate`.
///
/// Keeps a window of recent samples, trusts only those whose round trip is close to the
/// smallest seen (queueing delay makes the others asymmetric), and fits offset against
/// local time by least squares, giving offset and drift. A coordinator restart (its clock
/// jumps) is detected after a few consistent outliers and the window starts again.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Samples kept.
        public var window: Int = 64
        /// Fraction of the window (lowest round trips) used for the fit.
        public var keepFraction: Double = 0.5
        /// Fit drift only once the kept samples span this much local time.
        public var minimumDriftSpan: Int64 = 2_000_000_000
        /// Drift is clamped to ± this (1000 ppm), far beyond real crystals.
        public var maximumDrift: Double = 0.001
        /// A sample this far from the prediction is an outlier...
        public var jumpThreshold: Int64 = 20_000_000
        /// ...and this many in a row mean the coordinator's clock jumped.
        public var jumpCount: Int = 3
        public init() {}
    }

    public let configuration: Configuration
    private var samples: [ClockSample] = []
    private var outliers: [ClockSample] = []
    public private(set) var estimate: ClockEstimate?
    public private(set) var resets = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public mutating func add(_ sample: ClockSample) {
        guard sample.roundTrip >= 0, sample.t4 >= sample.t1 else { return }
        if let estimate, samples.count >= configuration.jumpCount {
            let predicted = estimate.offset(at: sample.localMidpoint)
            if abs(sample.offset - predicted) > configuration.jumpThreshold + sample.roundTrip {
                outliers.append(sample)
                if outliers.count >= configuration.jumpCount {
                    samples = outliers
                    outliers = []
                    resets += 1
                    refit()
                }
                return
            }
        }
        outliers = []
        samples.append(sample)
        if samples.count > configuration.window { samples.removeFirst(samples.count - configuration.window) }
        refit()
    }

    public mutating func reset() {
        samples = []
        outliers = []
        estimate = nil
    }

    private mutating func refit() {
        guard !samples.isEmpty else { estimate = nil; return }
        let keep = max(min(samples.count, 4), Int(Double(samples.count) * configuration.keepFraction))
        let best = samples.sorted { $0.roundTrip < $1.roundTrip }.prefix(keep)
        let minRTT = best.first!.roundTrip
        let reference = samples.last!.localMidpoint
        let baseOffset = best.first!.offset

        // x: seconds from reference (negative), y: ns from baseOffset.
        let xs = best.map { Double($0.localMidpoint - reference) / 1e9 }
        let ys = best.map { Double($0.offset - baseOffset) }
        let n = Double(xs.count)
        let meanX = xs.reduce(0, +) / n
        let meanY = ys.reduce(0, +) / n
        var sxx = 0.0, sxy = 0.0
        for (x, y) in zip(xs, ys) {
            sxx += (x - meanX) * (x - meanX)
            sxy += (x - meanX) * (y - meanY)
        }
        let span = (xs.max() ?? 0) - (xs.min() ?? 0)
        var slope = 0.0  // ns per second
        if span * 1e9 >= Double(configuration.minimumDriftSpan), sxx > 0, xs.count >= 4 {
            slope = sxy / sxx
            let limit = configuration.maximumDrift * 1e9
            slope = min(max(slope, -limit), limit)
        }
        let intercept = meanY - slope * meanX  // at reference (x = 0)
        var residual = 0.0
        for (x, y) in zip(xs, ys) {
            let e = y - (intercept + slope * x)
            residual += e * e
        }
        let dof = max(1.0, n - (slope == 0 ? 1 : 2))
        let standardError = (residual / dof / n).squareRoot()
        estimate = ClockEstimate(
            offset: baseOffset + Int64(intercept.rounded()), reference: reference,
            drift: slope / 1e9, uncertainty: Int64(standardError.rounded()),
            minimumRoundTrip: minRTT, sampleCount: best.count)
    }
}
