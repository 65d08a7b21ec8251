/// The receiver's resampler: plays the sample queue at the rate that keeps the room on
/// time. The rate is fed forward from the models: how fast coordinator time passes per
/// device frame (the clock's drift times the device's own rate against the local clock),
/// and the servo (`RateServo`, a PI controller within ±500 ppm) corrects what the latency
/// monitor still measures; the queue is read at that step by interpolation.
struct Resampler {
    private var servo = RateServo()
    /// Coordinator time per device frame, over nominal.
    private(set) var deviceRatio = 1.0
    /// Local time per device frame, over nominal (1 / 48 kHz): the device's own rate against
    /// the local clock, as the shell's timeline of it knows it.
    var deviceRate = 1.0

    /// A render with the clock's `drift`: the feed-forward term is the models' rate. (It was
    /// measured from successive renders' instants, smoothed over 20 renders: a step in the
    /// models' offsets then came through twice, as a rate and as the error the servo saw;
    /// and the smoothing lagged the device's rate when the timeline first measured it, by
    /// 0.8 s at 40 ms renders, so a room that joined on a device 100 ppm off drifted 50 µs
    /// before it caught up.)
    mutating func rendering(drift: Double) {
        deviceRatio = (1 + drift) * deviceRate
    }

    /// A new start: the servo's memory goes.
    mutating func reset() { servo.reset() }

    /// The step (stream frames per device frame) for an `error` (ns, positive: late) after
    /// `interval` seconds; `settling`: playback started a moment ago.
    mutating func ratio(error: Int64, interval: Double, settling: Bool) -> Double {
        deviceRatio * servo.update(error: Double(error) / 1e9, interval: min(interval, 0.1), settling: settling)
    }

    /// `count` frames of `queue` from `position` at `step`, into `out`.
    func resample(_ queue: SampleQueue, from position: Double, step: Double, count: Int, into out: inout [Float]) {
        queue.interpolate(from: position, step: step, count: count, into: &out)
    }
}
