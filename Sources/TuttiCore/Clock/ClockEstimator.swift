/// Turns time exchanges into a `ClockEstimate`.
///
/// Keeps a window of recent samples, trusts most those whose round trip is close to the
/// smallest seen (queueing delay makes the others asymmetric), and fits offset against
/// local time by weighted least squares, giving offset and drift. A coordinator restart (its clock
/// jumps) is detected after a few consistent outliers and the window starts again.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Samples kept.
        public var window: Int = 128
        /// A sample whose round trip exceeds the window's smallest by this much (or by a
        /// quarter of it, if more) counts half in the fit; by twice as much, a fifth.
        public var roundTripTolerance: Int64 = 25_000
        /// Fit drift only once the kept samples span this much local time.
        public var minimumDriftSpan: Int64 = 1_000_000_000
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
        let minRTT = samples.map(\.roundTrip).min()!
        let tolerance = Double(max(configuration.roundTripTolerance, minRTT / 4))
        let reference = samples.last!.localMidpoint
        let baseOffset = samples.min { $0.roundTrip < $1.roundTrip }!.offset

        // Weighted least squares of offset against local time. A sample's weight falls
        // with the square of its extra round trip: queueing made it asymmetric.
        let points = samples.map { s in
            WeightedLine.Point(x: Double(s.localMidpoint - reference) / 1e9, y: Double(s.offset - baseOffset),
                               w: WeightedLine.weight(extra: s.roundTrip - minRTT, tolerance: tolerance))
        }
        let fit = WeightedLine(points)
        let xs = points.map(\.x)
        let span = (xs.max() ?? 0) - (xs.min() ?? 0)
        var slope = 0.0  // ns per second
        if span * 1e9 >= Double(configuration.minimumDriftSpan), fit.sxx > 0, points.count >= 4 {
            let limit = configuration.maximumDrift * 1e9
            slope = min(max(fit.slope, -limit), limit)
        }
        let intercept = fit.meanY - slope * fit.meanX  // at reference (x = 0)
        var residual = 0.0
        for p in points {
            let e = p.y - (intercept + slope * (p.x))
            residual += p.w * e * e
        }
        // Effective number of samples (Kish), for the standard error.
        let effective = fit.sumW * fit.sumW / points.reduce(0) { $0 + $1.w * $1.w }
        let standardError = (residual / fit.sumW / max(1, effective - 1)).squareRoot()

        // The offset itself from each direction's least-delayed exchange, separately
        // (drift removed): forward t2 - t1 = offset + d1, backward t3 - t4 = offset - d2.
        // Their minimum delays are each far closer to the true one-way delay than any
        // single round trip is to twice it, when the path is jittery.
        var forward = Double.infinity, backward = -Double.infinity
        for s in samples {
            let x = Double(s.localMidpoint - reference) / 1e9
            forward = min(forward, Double(s.t2.nanoseconds - s.t1.nanoseconds - baseOffset) - slope * x)
            backward = max(backward, Double(s.t3.nanoseconds - s.t4.nanoseconds - baseOffset) - slope * x)
        }
        let offset = (forward + backward) / 2
        estimate = ClockEstimate(
            offset: baseOffset + Int64(offset.rounded()), reference: reference,
            drift: slope / 1e9, uncertainty: Int64(standardError.rounded()),
            minimumRoundTrip: Int64((forward - backward).rounded()), sampleCount: Int(effective.rounded()))
    }
}
