/// One line, offset against local time, fitted under the readings that lie above it and over
/// those that lie below it, with a shared slope (the drift) and an intercept of its own per
/// envelope (each path's smallest delay).
///
/// For one envelope this is the linear program of Moon, Skelly and Towsley ("Estimation and
/// removal of clock skew from network delay measurements", 1999), the maximum-likelihood
/// line for exponential queueing delays: the line that touches the readings from their side
/// and lies as close to all of them as it can (the smallest sum of distances). Queueing delay
/// only ever moves a reading away from the line, so the fit rests on the quickest readings
/// and does not wander with the jitter, as a least-squares fit through all of them does. With
/// several envelopes the sum runs over all of them; it is convex in the slope, and its
/// derivative, read off each envelope's convex hull, is found by bisection.
struct EnvelopeFit: Sendable {
    /// Nanoseconds of offset per second of local time.
    var slope: Double
    /// Per envelope: the line's value at `reference` (nanoseconds), touching that envelope.
    var intercepts: [Double]
    /// Per envelope: where (seconds from `reference`) the line touches it.
    var touching: [Double]
    /// Per envelope: how far its floor may lie beyond the line (about 95 %), or nil with too
    /// few readings to tell.
    var gaps: [Double?]

    /// Fits the envelopes with x in seconds from `reference` (readings should be small
    /// numbers: an envelope keeps them relative to a base offset). The slope is searched
    /// within ±`maximumSlope` ns/s, or fixed at `fixedSlope`.
    init?(_ envelopes: [DelayEnvelope], reference: Int64, maximumSlope: Double, fixedSlope: Double? = nil) {
        let sets = envelopes.map { $0.isEmpty ? nil : Lowered($0, reference: reference) }
        let present = sets.compactMap { $0 }
        guard !present.isEmpty else { return nil }
        var b = fixedSlope ?? 0
        if fixedSlope == nil {
            func derivative(_ b: Double) -> Double { present.reduce(0) { $0 + $1.derivative(slope: b) } }
            var lo = -maximumSlope, hi = maximumSlope
            if derivative(lo) >= 0 {
                b = lo
            } else if derivative(hi) <= 0 {
                b = hi
            } else {
                for _ in 0..<48 {
                    let mid = (lo + hi) / 2
                    if derivative(mid) < 0 { lo = mid } else { hi = mid }
                }
                b = (lo + hi) / 2
            }
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
            intercepts.append(s.sign * c)
            touching.append(s.xs[i])
            gaps.append(Self.floorGap(s.xs.indices.map { s.values[$0] - beta * s.xs[$0] - c }.sorted()))
        }
    }

    /// How far beyond the line an envelope's true floor may lie, at about 95 %, from its
    /// readings' distances from the line (ascending): with `k` readings within `r` of it,
    /// readings crowd the floor at about k / r, and the quickest misses the floor by more
    /// than 3 r / k one time in twenty. Nil with too few readings to tell.
    static func floorGap(_ excesses: [Double]) -> Double? {
        guard excesses.count >= 4 else { return nil }
        let k = min(8, excesses.count - 1)
        return 3 * excesses[k] / Double(k)
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
            let xs = e.points.map { Double($0.x - reference) / 1e9 }
            let values = e.points.map { sign * Double($0.y) }
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
