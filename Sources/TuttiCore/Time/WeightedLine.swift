/// A weighted least-squares line through points, as the clock estimator and the device
/// timeline fit them: each point weighted by how quick its measurement was (`weight`), since
/// a slow answer is a late one.
struct WeightedLine {
    struct Point {
        var x: Double
        var y: Double
        var w: Double
    }

    let meanX: Double
    let meanY: Double
    /// Σw(x − x̄)², Σw(x − x̄)(y − ȳ) and Σw.
    let sxx: Double
    let sxy: Double
    let sumW: Double

    init(_ points: [Point]) {
        var sw = 0.0, sx = 0.0, sy = 0.0
        for p in points {
            sw += p.w; sx += p.w * p.x; sy += p.w * p.y
        }
        let mx = sw > 0 ? sx / sw : 0, my = sw > 0 ? sy / sw : 0
        var sxx = 0.0, sxy = 0.0
        for p in points {
            sxx += p.w * (p.x - mx) * (p.x - mx)
            sxy += p.w * (p.x - mx) * (p.y - my)
        }
        (meanX, meanY, self.sxx, self.sxy, sumW) = (mx, my, sxx, sxy, sw)
    }

    /// The weighted variance of x.
    var varianceX: Double { sumW > 0 ? sxx / sumW : 0 }

    /// The least-squares slope; 0 when x does not vary.
    var slope: Double { sxx > 0 ? sxy / sxx : 0 }

    /// The weight of a measurement that took `extra` nanoseconds longer than the quickest:
    /// 1 for the quickest, a half at `tolerance` more, a fifth at twice that.
    static func weight(extra: Int64, tolerance: Double) -> Double {
        let e = Double(extra) / tolerance
        return 1 / (1 + e * e)
    }
}
