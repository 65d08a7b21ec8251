/// The receiver's resampler: plays the sample queue at the rate that keeps the room on
/// time. The rate is fed forward from how fast coordinator time passes per device frame
/// (the clock's drift and the device's own rate together, measured from successive renders
/// and smoothed), and the servo (`RateServo`, a PI controller within ±500 ppm) corrects
/// what the latency monitor still measures; the queue is read at that step by
/// interpolation.
struct Resampler {
    private var servo = RateServo()
    /// Coordinator time per device frame, over nominal.
    private(set) var deviceRatio = 1.0
    /// Local time per device frame, over nominal (1 / 48 kHz): the device's own rate against
    /// the local clock, as the shell's timeline of it knows it. Seeds `deviceRatio` until
    /// renders measure it.
    var deviceRate = 1.0
    /// The coordinator time the previous render's first frame is heard at, and its length.
    private var lastHeard: (time: CoordinatorTime, frames: Int)?

    /// A render of `frames` frames whose first is heard at coordinator time `heard`, with the
    /// clock's `drift`: measures the device ratio from the render before.
    mutating func rendering(_ frames: Int, heard: CoordinatorTime, drift: Double) {
        if let last = lastHeard {
            let measured = Double(heard - last.time) / Double(AudioFormat.nanoseconds(forFrames: Int64(last.frames)))
            if abs(measured - 1) < 0.001 { deviceRatio += (measured - deviceRatio) * 0.05 }  // jumps are not rates
        } else {
            // Until successive renders measure it, the rate the models give: the clock's drift
            // times the device's rate (known once the device's reports span a quarter second,
            // or remembered from an earlier run). From 1.0, a restarted follower on a device
            // 200 ppm off lagged it by some 40 µs before the smoothing caught up.
            deviceRatio = (1 + drift) * deviceRate
        }
        lastHeard = (heard, frames)
    }

    /// A new start: the servo's memory goes.
    mutating func reset() { servo.reset() }

    /// The step (stream frames per device frame) for an `error` (ns, positive: late) after
    /// `interval` seconds.
    mutating func ratio(error: Int64, interval: Double) -> Double {
        deviceRatio * servo.update(error: Double(error) / 1e9, interval: min(interval, 0.1))
    }

    /// `count` frames of `queue` from `position` at `step`, into `out`.
    func resample(_ queue: SampleQueue, from position: Double, step: Double, count: Int, into out: inout [Float]) {
        queue.interpolate(from: position, step: step, count: count, into: &out)
    }
}
