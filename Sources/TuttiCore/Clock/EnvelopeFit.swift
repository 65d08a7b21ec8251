/// One line, offset against local time, under the readings that lie above it and over those
/// that lie below it: a shared slope (the drift) and a level of its own per envelope (each
/// path's floor: its smallest delay).
///
/// The slope is two estimates, each counted by its error:
/// * the envelopes' linear program (Moon, Skelly and Towsley, "Estimation and removal of
///   clock skew from network delay measurements", 1999): the line touching every envelope
///   from its side and as close to all readings as it can. Precise when a path's floor is
///   sharp; on a blurred floor (every host and hop adds a small random cost) a few lucky
///   readings steer it. Its error is judged from how far its slopes over every fourth
///   reading part;
/// * least squares through the few quickest readings of every slice of time (2 s), which
///   queueing spared, chosen per slice so that the choice does not lean on the slope, each
///   path weighted by how tightly its readings lie, readings far above the line dropped as
///   queueing the slice did not escape. It averages a blurred floor out.
///
/// Each level is the mean of the path's few quickest readings once the slope is applied:
/// nearly the floor with many readings, and alike both ways even when one way is far more
/// jittery (an average of many readings would sit higher on that side). How densely readings
/// crowd it says how far the true floor may lie beyond it (`gaps`).
struct EnvelopeFit: Sendable {
    /// Nanoseconds of offset per second of local time.
    var slope: Double
    /// The slope's standard error, ns per s, when fitted by least squares.
    var slopeError: Double?
    /// Per envelope: its level at `reference` (nanoseconds): the line through its quickest readings.
    var intercepts: [Double]
    /// Per envelope: where (seconds from `reference`, on average) those readings lie.
    var touching: [Double]
    /// Per envelope: how far its floor may lie beyond the line (about 95 %), or nil with too
    /// few readings to tell.
    var gaps: [Double?]

    /// The quickest readings whose mean is a path's level (fewer while readings are few: one
    /// per forty).
    static let quickestForLevel = 5
    /// Slices needed before the slope is fitted near the floor rather than by the program.
    static let slicesForFit = 8
    /// Readings per slice of time that count as near the floor, and the slice (seconds).
    static let quickestPerSlice = 3
    static let slice = 2.0

    /// Fits the envelopes with x in seconds from `reference` (readings should be small
    /// numbers: an envelope keeps them relative to a base offset). The slope is clamped to
    /// ±`maximumSlope` ns/s, or fixed at `fixedSlope`.
    init?(_ envelopes: [DelayEnvelope], reference: Int64, maximumSlope: Double, fixedSlope: Double? = nil) {
        let sets = envelopes.map { $0.isEmpty ? nil : Lowered($0, reference: reference) }
        let present = sets.compactMap { $0 }
        guard !present.isEmpty else { return nil }
        var b = fixedSlope ?? Self.linearProgram(present, maximumSlope: maximumSlope)
        slopeError = nil
        if fixedSlope == nil, let fit = Self.nearFloor(present, around: b) {
            // Two estimates of the drift: the program's (precise on a sharp floor, steered by
            // lucky readings on a blurred one) and the near-floor fit's (the reverse). Each
            // counts by its error: the fit's standard error, and for the program how far its
            // slopes over every fourth reading part (lucky readings fall in one quarter or
            // another; the whole is taken to have half a quarter's variance, calibrated by
            // ClockEstimatorTests' paths).
            let quarters = (0..<4).map { k in Self.linearProgram(present.map { $0.subset(k, of: 4) }, maximumSlope: maximumSlope) }
            let mean = quarters.reduce(0, +) / 4
            let programVariance = max(quarters.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / 3 / 2, 1e-6)
            let fitVariance = max(fit.error * fit.error, 1e-6)
            let combined = (b / programVariance + fit.slope / fitVariance) / (1 / programVariance + 1 / fitVariance)
            b = min(max(combined, -maximumSlope), maximumSlope)
            slopeError = (1 / (1 / programVariance + 1 / fitVariance)).squareRoot()
        }
        slope = b
        intercepts = []
        touching = []
        gaps = []
        for s in sets {
            guard let s else {
                intercepts.append(.nan)
                touching.append(.nan)
                gaps.append(nil)
                continue
            }
            let beta = s.sign * b
            let i = s.touching(beta)
            let c = s.values[i] - beta * s.xs[i]
            let excess = s.xs.indices.map { s.values[$0] - beta * s.xs[$0] - c }
            // The level: the mean of the few quickest readings (one alone wanders with the
            // blur); what that adds over the floor is tiny with many readings, and alike both ways.
            let quickest = Self.smallest(max(Self.quickestForLevel, 9), of: excess)
            let level = quickest.prefix(max(1, min(Self.quickestForLevel, excess.count / 40)))
            intercepts.append(s.sign * (c + level.reduce(0.0) { $0 + $1.value } / Double(level.count)))
            touching.append(level.reduce(0.0) { $0 + s.xs[$1.index] } / Double(level.count))
            gaps.append(Self.floorGap(quickest.map(\.value), count: excess.count))
        }
    }

    /// How far beyond the line an envelope's true floor may lie, at about 95 %, from its
    /// readings' smallest distances from the line (ascending; `count` readings in all): with
    /// `k` readings within `r` of it, readings crowd the floor at about k / r, and the quickest
    /// misses the floor by more than 3 r / k one time in twenty. Nil with too few to tell.
    static func floorGap(_ smallest: [Double], count: Int) -> Double? {
        guard count >= 4, smallest.count >= 2 else { return nil }
        let k = min(8, count - 1, smallest.count - 1)
        return 3 * smallest[k] / Double(k)
    }

    /// The `k` smallest values and their indices, ascending (a partial selection: cheap for small `k`).
    static func smallest(_ k: Int, of values: [Double]) -> [(value: Double, index: Int)] {
        var kept: [(value: Double, index: Int)] = []
        kept.reserveCapacity(k + 1)
        for (i, v) in values.enumerated() where kept.count < k || v < kept[kept.count - 1].value {
            var at = kept.count
            while at > 0, kept[at - 1].value > v { at -= 1 }
            kept.insert((v, i), at: at)
            if kept.count > k { kept.removeLast() }
        }
        return kept
    }

    /// The slope of the smallest sum of distances from a line touching every envelope from
    /// its side: convex in the slope; its derivative, read off each hull, found by bisection.
    private static func linearProgram(_ sets: [Lowered], maximumSlope: Double) -> Double {
        func derivative(_ b: Double) -> Double { sets.reduce(0) { $0 + $1.derivative(slope: b) } }
        var lo = -maximumSlope, hi = maximumSlope
        if derivative(lo) >= 0 { return lo }
        if derivative(hi) <= 0 { return hi }
        for _ in 0..<48 {
            let mid = (lo + hi) / 2
            if derivative(mid) < 0 { lo = mid } else { hi = mid }
        }
        return (lo + hi) / 2
    }

    /// Weighted least squares through the quickest readings of every slice, with one slope
    /// and an intercept per envelope (in the turned frames, the envelopes' slopes are ±b).
    /// Nil over too little history (fewer than `slicesForFit` slices with readings).
    private static func nearFloor(_ sets: [Lowered], around b: Double) -> (slope: Double, error: Double)? {
        let sliceLength = Self.slice
        // The quickest few of each slice, judged against the provisional slope.
        var groups: [(sign: Double, xs: [Double], ys: [Double])] = sets.map { s in
            let beta = s.sign * b
            var picked: [Int] = []
            var start = 0
            while start < s.xs.count {
                let slice = (s.xs[start] / sliceLength).rounded(.down)
                var end = start
                while end < s.xs.count, (s.xs[end] / sliceLength).rounded(.down) == slice { end += 1 }
                picked += (start..<end).sorted { s.values[$0] - beta * s.xs[$0] < s.values[$1] - beta * s.xs[$1] }
                    .prefix(Self.quickestPerSlice)
                start = end
            }
            picked.sort()
            return (s.sign, picked.map { s.xs[$0] }, picked.map { s.sign * s.values[$0] })
        }
        let slices = Set(groups.flatMap { g in g.xs.map { ($0 / sliceLength).rounded(.down) } }).count
        guard slices >= Self.slicesForFit else { return nil }
        var fit = weightedFit(groups, weights: groups.map { _ in 1 })
        for _ in 0..<2 {
            guard let current = fit else { return nil }
            // Readings lying far above the line in the turned frame (queueing the slice did not
            // escape) go; each envelope then counts by how tightly its readings lie.
            var weights: [Double] = []
            for k in groups.indices {
                let g = groups[k], level = current.levels[k]
                let residuals = zip(g.xs, g.ys).map { g.sign * ($1 - level - current.slope * $0) }
                let spread = Self.robustSpread(residuals)
                var keep: [Int] = []
                for (i, r) in residuals.enumerated() where r <= 3 * spread { keep.append(i) }
                groups[k] = (g.sign, keep.map { g.xs[$0] }, keep.map { g.ys[$0] })
                weights.append(1 / (spread * spread))
            }
            fit = weightedFit(groups, weights: weights)
        }
        guard let final = fit else { return nil }
        return (final.slope, final.error)
    }

    /// A robust standard deviation: 1.4826 × the median absolute deviation (at least 1 µs).
    private static func robustSpread(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 1_000 }
        let sorted = values.sorted()
        let median = sorted[sorted.count / 2]
        let deviations = values.map { abs($0 - median) }.sorted()
        return max(1_000, 1.4826 * deviations[deviations.count / 2])
    }

    /// Weighted least squares, one slope, an intercept per group; the slope's standard error.
    private static func weightedFit(_ groups: [(sign: Double, xs: [Double], ys: [Double])], weights: [Double])
        -> (slope: Double, error: Double, levels: [Double])?
    {
        var sxx = 0.0, sxy = 0.0, points = 0
        var means: [(x: Double, y: Double)] = []
        for (g, w) in zip(groups, weights) {
            guard !g.xs.isEmpty else { means.append((0, 0)); continue }
            let n = Double(g.xs.count)
            let mx = g.xs.reduce(0, +) / n, my = g.ys.reduce(0, +) / n
            means.append((mx, my))
            for (x, y) in zip(g.xs, g.ys) {
                sxx += w * (x - mx) * (x - mx)
                sxy += w * (x - mx) * (y - my)
            }
            points += g.xs.count
        }
        guard sxx > 0, points > groups.count + 1 else { return nil }
        let slope = sxy / sxx
        var chi = 0.0
        for ((g, w), m) in zip(zip(groups, weights), means) {
            for (x, y) in zip(g.xs, g.ys) {
                let r = y - m.y - slope * (x - m.x)
                chi += w * r * r
            }
        }
        let scale = chi / Double(points - groups.count - 1)  // 1 when the weights are right
        return (slope, (max(scale, 1) / sxx).squareRoot(), means.map { $0.y - slope * $0.x })
    }

    /// An envelope turned so that its readings lie above the line (`sign` −1 flips those that
    /// lie below), with the lower convex hull of its points.
    private struct Lowered {
        let sign: Double
        let xs: [Double]
        let values: [Double]
        let sumX: Double
        /// Indices of the lower hull's vertices, left to right.
        let hull: [Int]

        init(_ e: DelayEnvelope, reference: Int64) {
            let sign: Double = e.side == .above ? 1 : -1
            self.init(sign: sign, xs: e.points.map { Double($0.x - reference) / 1e9 }, values: e.points.map { sign * Double($0.y) })
        }

        /// Every `count`-th reading, from the `k`-th.
        func subset(_ k: Int, of count: Int) -> Lowered {
            let kept = xs.indices.filter { $0 % count == k }
            return kept.isEmpty ? self : Lowered(sign: sign, xs: kept.map { xs[$0] }, values: kept.map { values[$0] })
        }

        init(sign: Double, xs: [Double], values: [Double]) {
            var h: [Int] = []
            for i in xs.indices {
                while h.count >= 2 {
                    let a = h[h.count - 2], b = h[h.count - 1]
                    // Drop b unless it lies strictly below the segment a–i.
                    let cross = (xs[b] - xs[a]) * (values[i] - values[a]) - (values[b] - values[a]) * (xs[i] - xs[a])
                    if cross <= 0 { h.removeLast() } else { break }
                }
                h.append(i)
            }
            (self.sign, self.xs, self.values, sumX, hull) = (sign, xs, values, xs.reduce(0, +), h)
        }

        /// The hull vertex a line of slope `beta` (in this envelope's turned frame) touches.
        func touching(_ beta: Double) -> Int {
            var best = hull[0]
            var bestValue = values[best] - beta * xs[best]
            for i in hull.dropFirst() {
                let v = values[i] - beta * xs[i]
                if v < bestValue { best = i; bestValue = v }
            }
            return best
        }

        /// d/db of Σ (value − line) over this envelope's points, for the shared slope `b`.
        func derivative(slope b: Double) -> Double {
            sign * (Double(xs.count) * xs[touching(sign * b)] - sumX)
        }
    }
}
