/// When the frames written to a sound device will be heard, from the device's own timing
/// reports, smoothed.
///
/// A device consumes frames at its own rate, so frame `n` is heard at `anchor + n / 48 kHz`
/// local time, where the anchor moves as the device's clock runs against the local one.
/// Each report implies an anchor (`DeviceTiming.anchor`) at the instant its frame is heard.
/// The timeline keeps the quickest report of every `spacing` interval and fits a line of
/// anchor against that instant through the last few seconds of them, weighting each by how
/// quick it was: a slow query was answered late, and its anchor is late by about as much.
/// A frame is heard when the anchor *then* plus its own offset comes round (the anchor is
/// read at the frame's own instant, not at the time of asking: a device 200 ppm off the
/// local clock would otherwise carry 200 ppm of the output's lead, 12 µs at 60 ms, as error).
/// The line's slope is the device's rate against the local clock (a sound card's crystal;
/// PulseAudio's null sink, which rounds each block to whole microseconds, runs up to a few
/// hundred ppm off, by an amount that changes whenever its block size does). The delay a
/// report holds (the device's latency, in the device's own time) is converted to local time
/// at that rate, for the same reason. A sustained jump (the stream moved, the device
/// restarted) starts a new line.
public struct DeviceTimeline: Sendable {
    public struct Configuration: Sendable {
        /// How much history the anchor line is fitted to.
        public var window: Int64 = 5_000_000_000
        /// Fit a slope only over this much history: over less, the reports' wander would pass
        /// for drift. Without a slope the line's end lags a device off the local clock by half
        /// the history times its rate: after a follower started, the null sink's 100 ppm put
        /// the line 50 to 60 µs off by the end of its first second (three traces, replayed),
        /// and 0.25 s of reports already tell the slope to within that.
        public var minimumSlopeSpan: Int64 = 250_000_000
        /// Keep the quickest report of each interval this long.
        public var spacing: Int64 = 50_000_000
        /// A report whose round trip exceeds the quickest kept by this much counts half.
        public var roundTripTolerance: Int64 = 50_000
        /// A report whose anchor is further than this (plus its own round trip) from the
        /// line is an outlier and is not kept; several in a row mean a jump.
        public var jumpThreshold: Int64 = 500_000
        public var jumpCount = 5
        /// A room places its first sound on the line only once the line holds this many
        /// reports (kept, one per `spacing`: some 200 ms of them), or an exact one. On its
        /// first report alone, answered slowly by a server busy opening the stream (400 to
        /// 700 µs), a room that joined played 20 to 60 µs off (bench/sync traces). (Waiting
        /// also for the device's rate, a quarter second of reports, was tried: on the rig's
        /// PulseAudio the slope through the first, scattered reports moved the line by up
        /// to 32 µs after the first sound; bench/NOTES.md.)
        public var settledPoints = 3
        /// A room waits also for the device's rate (`hasMeasuredRate`, a quarter second of
        /// reports, or one remembered) before its first sound: for a device whose reports
        /// are its own position to a few microseconds (a sound card's driver), whose line
        /// moves when its slope comes. A joining room on a sound card 150 ppm fast, placed
        /// on the line before its slope, played 47 µs early and slewed it out over half a
        /// second (bench/sync --device vcard; on the rig's PulseAudio, whose first reports
        /// scatter, waiting did not help: see `settledPoints`).
        public var settleOnRate = false
        /// The line is steady once its reports span this long with none out of line since
        /// (`isSteady`): a player may then ask for reports less often.
        public var steadySpan: Int64 = 2_000_000_000
        public init() {}
    }

    private struct Point {
        /// When the report's frame is heard (local time), its delay counted as local time.
        var time: Int64
        var anchor: Int64
        /// The device's own time within `time` (`DeviceTiming.delay`), converted at each fit.
        var delay: Int64
        var uncertainty: Int64

        /// The point with its delay converted for a device taking `localPerFrame` of local
        /// time per nominal frame time.
        func converted(_ localPerFrame: Double) -> Point {
            guard delay != 0 else { return self }
            let correction = Int64((Double(delay) * (localPerFrame - 1)).rounded())
            return Point(time: time + correction, anchor: anchor + correction, delay: delay, uncertainty: uncertainty)
        }
    }

    public let configuration: Configuration
    private var points: [Point] = []
    /// The quickest report of the interval in progress, kept once the interval closes.
    private var pending: Point?
    private var pendingSince: Int64 = 0
    private var outliers = 0
    /// The fitted line, refitted only when the points change.
    private var line: (reference: Int64, anchor: Double, slope: Double)?
    public private(set) var jumps = 0
    /// The slope to assume (ns/s) until the reports span `minimumSlopeSpan`: what an earlier
    /// run measured on the same device (`assumeRate(ppm:)`), else none.
    private var priorSlope = 0.0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Records a timing report.
    public mutating func report(_ timing: DeviceTiming) {
        let point = Point(time: timing.heardAt.nanoseconds, anchor: timing.anchor.nanoseconds, delay: timing.delay,
                          uncertainty: max(0, timing.uncertainty))
        let converted = point.converted(localPerFrame)
        let now = converted.time
        if let predicted = anchor(at: now),
           abs(converted.anchor - predicted) > configuration.jumpThreshold + point.uncertainty {
            outliers += 1
            guard outliers >= configuration.jumpCount else { return }
            // The stream moved, not the device's crystal: the new line starts from the rate
            // the old one measured.
            if let line, hasMeasuredRate { priorSlope = line.slope; rateAssumed = true }
            reset()
            jumps += 1
        }
        outliers = 0
        if let p = pending, now - pendingSince >= configuration.spacing {
            keep(p)
            pending = nil
        }
        if pending == nil { pendingSince = now }
        if pending == nil || point.uncertainty < pending!.uncertainty { pending = point }
        if line == nil { keep(pending!); pending = nil }  // the first report anchors at once
    }

    /// The anchor (local time at which frame 0 would be heard) for frames heard at local
    /// time `time`; nil before any report.
    public func anchor(at time: Int64) -> Int64? {
        guard let line else { return nil }
        return Int64((line.anchor + line.slope * Double(time - line.reference) / 1e9).rounded())
    }

    /// The local time at which frame `frame` will be heard: the instant `t` at which
    /// `anchor(at: t) + frame / 48 kHz = t`.
    public func heardAt(frame: Int64) -> LocalTime? {
        guard let line else { return nil }
        let u = (line.anchor + Double(AudioFormat.nanoseconds(forFrames: frame)) - Double(line.reference)) / (1 - line.slope / 1e9)
        return LocalTime(nanoseconds: line.reference + Int64(u.rounded()))
    }

    /// The device's rate against the local clock, in parts per million (positive: slow).
    public var rateOffsetPPM: Double { (line?.slope ?? priorSlope) / 1_000 }

    /// Local time per frame over nominal: how much longer than 1 / 48 kHz the device takes.
    public var localPerFrame: Double { 1 / (1 - (line?.slope ?? priorSlope) / 1e9) }

    /// Whether the line is good enough to place a room's first sound on: it holds
    /// `settledPoints` reports (and, with `settleOnRate`, knows the device's rate), or an
    /// exact one (a clocked output's).
    public var isSettled: Bool {
        if points.last?.uncertainty == 0 { return true }
        return points.count >= configuration.settledPoints && (!configuration.settleOnRate || hasMeasuredRate || rateAssumed)
    }

    /// Whether a rate was assumed (`assumeRate(ppm:)`: measured on an earlier run).
    private var rateAssumed = false

    /// Whether the line is steady: its reports span `steadySpan` since it last started
    /// (the stream's start, a jump) and the newest is not out of line. Then it tells the
    /// device's rate and offset well enough that reports a tenth of a second apart keep it:
    /// between two of them a device 500 ppm off the local clock moves 50 µs, which the
    /// line's slope carries.
    public var isSteady: Bool {
        guard outliers == 0, let first = points.first, let last = points.last else { return false }
        return last.time - first.time >= configuration.steadySpan
    }

    /// Whether the rate is the device's own, measured (not assumed).
    public var hasMeasuredRate: Bool {
        guard let first = points.first, let last = points.last else { return false }
        return spansSlope(from: first, to: last)
    }

    /// Whether the points from `first` to `last` are history enough to tell drift from wander.
    private func spansSlope(from first: Point, to last: Point) -> Bool {
        last.time - first.time >= configuration.minimumSlopeSpan
    }

    /// Assumes the device runs `ppm` off the local clock (as `rateOffsetPPM` read it on an
    /// earlier run) until its own reports tell: a follower that restarts does not lag a
    /// device 200 ppm off by 50 µs in its first quarter second.
    public mutating func assumeRate(ppm: Double) {
        priorSlope = min(max(ppm, -1_000), 1_000) * 1_000
        rateAssumed = true
        if line != nil { refit() }
    }

    /// The stream's frames are heard on another timeline from now on (it was paused and
    /// flushed): the line starts again from the rate the old one measured, which the pause
    /// did not change.
    public mutating func restart() {
        if let line, hasMeasuredRate { priorSlope = line.slope; rateAssumed = true }
        reset()
        jumps += 1
    }

    public mutating func reset() {
        points.removeAll(keepingCapacity: true)
        pending = nil
        outliers = 0
        line = nil
    }

    private mutating func keep(_ point: Point) {
        points.append(point)
        let horizon = point.time - configuration.window
        if let stale = points.firstIndex(where: { $0.time >= horizon }), stale > 0 {
            points.removeFirst(stale)
        }
        refit()
    }

    /// Weighted least squares through the points, with x in seconds from the newest point.
    /// Each point's delay is converted at the device's rate as last fitted; when this fit
    /// moves the rate by more than a part per million, once more at the new one (a 60 ms
    /// delay then carries under 0.06 ns of the difference).
    private mutating func refit() {
        guard !points.isEmpty else { line = nil; return }
        for _ in 0..<2 {
            let slope = line?.slope ?? priorSlope
            fit(localPerFrame: localPerFrame)
            guard let fitted = line?.slope, abs(fitted - slope) > 1_000 else { return }
        }
    }

    private mutating func fit(localPerFrame: Double) {
        guard let first = points.first?.converted(localPerFrame), let last = points.last?.converted(localPerFrame) else {
            line = nil
            return
        }
        let quickest = points.lazy.map(\.uncertainty).min() ?? 0
        let tolerance = Double(max(configuration.roundTripTolerance, 1))
        let fit = WeightedLine(points.map { raw in
            let p = raw.converted(localPerFrame)
            return WeightedLine.Point(x: Double(p.time - last.time) / 1e9, y: Double(p.anchor - first.anchor),
                                      w: WeightedLine.weight(extra: p.uncertainty - quickest, tolerance: tolerance))
        })
        // A slope only once there is history enough to tell drift from wander.
        let slope = spansSlope(from: first, to: last) && fit.varianceX > 1e-9
            ? min(max(fit.slope, -1_000_000), 1_000_000) : priorSlope  // ns/s, within ±1000 ppm
        line = (last.time, Double(first.anchor) + fit.meanY - slope * fit.meanX, slope)
    }
}
