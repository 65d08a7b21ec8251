/// The receiver's latency monitor: how far from its presentation time the room plays, and
/// what to do about it. Each render's raw error (when its first frame is heard, minus when
/// it was due) goes through a median filter. Beyond `hardResyncThreshold` playback starts
/// again at the right position; for `settlingTime` after a start (the sound server's first
/// reports are rough) errors beyond `stepThreshold` are stepped out at once, later only
/// those beyond `lateStepThreshold` (slewing them at the servo's ±500 ppm would take
/// seconds); anything less is left to the resampler, and one beyond a sample that it brings
/// back is counted as a slew.
struct LatencyMonitor {
    struct Configuration {
        var hardResyncThreshold: Int64
        var settlingTime: Int64
        var stepThreshold: Int64
        var lateStepThreshold: Int64
        var slewThreshold: Int64
    }

    enum Verdict: Equatable {
        /// Too far off: stop, and start again where the stream is due.
        case resync
        /// Play on, first moving the position by `step` ns of stream when given (late:
        /// forward); `error` is what remains for the resampler.
        case play(step: Int64?, error: Int64)
    }

    let configuration: Configuration
    private var filter = MedianFilter(width: 9)
    /// Local time until which playback is settling; nil when not playing.
    private var settlingUntil: LocalTime?
    /// The error is beyond a sample, being slewed back.
    private(set) var slewing = false
    /// Playback is settling (`settlingTime` after a start): the servo may pull harder.
    private(set) var settling = false

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Playback stopped: it settles again from its next start.
    mutating func reset() {
        filter.reset()
        settlingUntil = nil
        slewing = false
        settling = false
    }

    /// The device's timeline moved (it restarted, underran, or began to play): settle again,
    /// stepping out the error it left rather than slewing it away slowly.
    mutating func resettle() {
        settlingUntil = nil
        filter.reset()
    }

    /// The raw error of a render at local time `now`; counts steps, slews and resyncs.
    mutating func assess(_ raw: Int64, now: LocalTime, statistics: inout PlayoutStatistics) -> Verdict {
        if abs(filter.add(raw)) > configuration.hardResyncThreshold, filter.count >= 3 {
            statistics.resyncs += 1
            return .resync
        }
        var error = filter.median
        var step: Int64?
        if settlingUntil == nil { settlingUntil = now + configuration.settlingTime }
        settling = settlingUntil.map { now < $0 } ?? false
        let threshold = settling ? configuration.stepThreshold : configuration.lateStepThreshold
        if filter.count >= 3, abs(error) > threshold {
            // Step: skip ahead when late, repeat a little when early. The filter's history
            // described the old position, so it starts again.
            step = error
            statistics.steps += 1
            filter.reset()
            error = 0
        }
        if !settling, !slewing, abs(error) > configuration.slewThreshold {
            slewing = true
            statistics.slews += 1
        } else if slewing, abs(error) < configuration.slewThreshold / 2 {
            slewing = false
        }
        statistics.lastError = error
        return .play(step: step, error: error)
    }
}
