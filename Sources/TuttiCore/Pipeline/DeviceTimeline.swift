/// When the frames written to a sound device will be heard, from the device's own
/// latency reports, smoothed.
///
/// A device consumes frames at its own rate, so frame `n` (counting every frame written)
/// is heard at `anchor + n / 48 kHz` local time, where the anchor moves as the device's
/// crystal runs against the local clock. Each latency report implies an anchor
/// (`now + latency − n / 48 kHz`). The anchor is a least-squares line through the last few
/// seconds of implied anchors: its slope is the device's rate against the local clock,
/// which is not constant (PulseAudio's null sink on our build machine ran 100 to 250 ppm
/// fast, varying over tens of seconds), and the fit smooths each report's jitter. A
/// sustained jump (an underrun, a stall, a device restart) re-anchors at once.
public struct DeviceTimeline: Sendable {
    public struct Configuration: Sendable {
        /// How much history the anchor line is fitted to.
        public var window: Int64 = 3_000_000_000
        /// Fit a slope (the device's crystal against the local clock) only over this much
        /// history: over less, the reports' wander would pass for drift.
        public var minimumSlopeSpan: Int64 = 1_000_000_000
        /// Keep one implied anchor per this interval.
        public var spacing: Int64 = 20_000_000
        /// Implied anchors this far from the line, several in a row, mean a jump.
        public var jumpThreshold: Int64 = 3_000_000
        public var jumpCount = 5
        public init() {}
    }

    public let configuration: Configuration
    private var points: [(time: Int64, anchor: Int64)] = []
    private var outliers = 0
    private var lastKept: Int64?
    /// The fitted line, refitted only when the points change (not on every report).
    private var line: (reference: Int64, anchor: Double, slope: Double)?
    public private(set) var jumps = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Records a latency report: at local time `now`, a frame written now (after
    /// `framesWritten` frames) is heard `latency` nanoseconds later.
    public mutating func report(latency: Int64, now: Int64, framesWritten: Int64) {
        let implied = now + latency - AudioFormat.nanoseconds(forFrames: framesWritten)
        if let predicted = anchor(at: now), abs(implied - predicted) > configuration.jumpThreshold {
            outliers += 1
            if outliers >= configuration.jumpCount {
                reset()
                jumps += 1
            } else {
                return
            }
        } else {
            outliers = 0
        }
        if let last = lastKept, now - last < configuration.spacing, points.count > 4 { return }
        lastKept = now
        points.append((now, implied))
        while let first = points.first, now - first.time > configuration.window { points.removeFirst() }
        refit()
    }

    /// The anchor (local time at which frame 0 is heard) at local time `now`; nil before any report.
    public func anchor(at now: Int64) -> Int64? {
        guard let line else { return nil }
        return Int64((line.anchor + line.slope * Double(now - line.reference) / 1e9).rounded())
    }

    /// Least squares through the points, with x in seconds from the newest point.
    private mutating func refit() {
        guard let first = points.first, let last = points.last else { line = nil; return }
        let n = Double(points.count)
        let base = first.anchor
        var sx = 0.0, sy = 0.0
        for p in points {
            sx += Double(p.time - last.time) / 1e9
            sy += Double(p.anchor - base)
        }
        let mx = sx / n, my = sy / n
        var sxx = 0.0, sxy = 0.0
        for p in points {
            let x = Double(p.time - last.time) / 1e9 - mx
            sxx += x * x
            sxy += x * (Double(p.anchor - base) - my)
        }
        let span = Double(last.time - first.time) / 1e9
        // A slope only once there is history enough to tell drift from wander.
        let slope = span * 1e9 >= Double(configuration.minimumSlopeSpan) && sxx > 0
            ? min(max(sxy / sxx, -1_000_000), 1_000_000) : 0  // ns/s, within ±1000 ppm
        line = (last.time, Double(base) + my - slope * mx, slope)
    }

    /// The local time at which the next frame written will be heard.
    public func nextFrameHeard(at now: Int64, framesWritten: Int64) -> Int64? {
        anchor(at: now).map { $0 + AudioFormat.nanoseconds(forFrames: framesWritten) }
    }

    public mutating func reset() {
        points.removeAll()
        lastKept = nil
        outliers = 0
        line = nil
    }
}
