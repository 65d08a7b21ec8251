import CALSA
import TuttiNet
import TuttiCore

/// Plays straight to an ALSA device (`hw:0`, `plughw:1`, `default`, `pulse:SINK` through
/// ALSA's pulse plugin), for a room with no sound server (a Raspberry Pi running Raspberry
/// Pi OS Lite), and reports the device's own timing: the status ALSA takes of the stream
/// (its delay, and the instant it was taken, on CLOCK_MONOTONIC), which the follower's
/// `DeviceTimeline` smooths and fits (the slope is the device's crystal against the local
/// clock).
///
/// Like the PulseAudio output it has no thread of its own: the playout thread sleeps until
/// its next write (`wait`), which `DeviceFill` times from the device's timeline, not from
/// the device's periods; the buffer only bounds how far ahead it can be filled. The
/// stream never stops on an underrun (its stop threshold is the boundary, and ALSA fills
/// what it played with silence): a writer that fell behind skips the frames whose time has
/// passed and counts them as written (and the underrun), so frame indices stay on the
/// device's timeline, as with PulseAudio's read index, and sync is kept through an xrun.
/// A device that stops anyway (suspended, or a plugin that stops on an xrun) is prepared
/// again, its frames counted from where the timeline says, and the follower steps to it.
/// Every method must be called from the one thread that plays.
public final class AlsaOutput: AudioOutput {
    public let name: String
    private let clock: any MonotonicClock
    private var pcm: OpaquePointer?
    private let status: OpaquePointer
    private var descriptors: [pollfd] = []
    /// The sample format the device took: float, else 32- or 16-bit integers (converted here).
    private let format: snd_pcm_format_t
    private var converted: [Int32] = []
    private var converted16: [Int16] = []
    /// Frames the device's buffer holds, and how many it asks for at a time.
    public let bufferFrames: Int
    public let periodFrames: Int
    private var written: Int64 = 0
    private var latest: DeviceTiming?
    /// Frames skipped because their time passed before they were written, and times the
    /// device stopped and was started again.
    public private(set) var skipped: Int64 = 0
    public private(set) var restarts = 0
    /// Times the writer found the device had run dry (its frames skipped) or stopped.
    public private(set) var underruns = 0
    /// How far ahead of hearing the device takes what was written (ns): its delay beyond
    /// the frames still in its buffer (a sound card's FIFO; through a plugin, what the
    /// plugin has passed on), the most a status has shown.
    public private(set) var committedLatency: Int64 = 0
    public let interrupted = false
    /// ALSA's delay is the device's own where a driver reports it, but a plugin may smooth
    /// it: the pulse plugin's comes from the client library's interpolation, which wanders
    /// ±300 µs over seconds. A line through 30 s of reports averages that out (a sound
    /// card's crystal is steady over far longer).
    public let timingWindow: Int64? = 30_000_000_000
    /// A driver reports its position as it is (through ALSA's pulse plugin the reports
    /// wander, but waiting a quarter second for the rate costs that plugin nothing more).
    public let reportsTellRate = true

    /// - Parameters:
    ///   - device: an ALSA PCM name (`default`, `hw:0`, `plughw:1,0`, `pulse:roomA`).
    ///   - bufferFrames: the device's buffer: the most that can be written ahead.
    ///   - periodFrames: the device's period (how often its pointer moves, on some cards).
    public init(device: String, clock: any MonotonicClock, bufferFrames: Int = 7_680, periodFrames: Int = 960) throws(AudioError) {
        self.clock = clock
        name = "alsa:\(device)"
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard rc >= 0, let handle else { throw .alsa(device: device, operation: "open", message: Self.text(rc)) }
        pcm = handle
        var statusPointer: OpaquePointer?
        snd_pcm_status_malloc(&statusPointer)
        guard let statusPointer else {
            snd_pcm_close(handle)
            throw .alsa(device: device, operation: "open", message: "out of memory")
        }
        status = statusPointer
        do throws(AudioError) {
            (format, self.bufferFrames, self.periodFrames) = try Self.configureHardware(handle, device: device, bufferFrames: bufferFrames,
                                                                                  periodFrames: periodFrames)
            try Self.configureSoftware(handle, device: device, bufferFrames: self.bufferFrames, periodFrames: self.periodFrames)
            rc = snd_pcm_prepare(handle)
            guard rc >= 0 else { throw .alsa(device: device, operation: "prepare", message: Self.text(rc)) }
            let count = Int(snd_pcm_poll_descriptors_count(handle))
            descriptors = [pollfd](repeating: pollfd(), count: max(0, count))
            rc = snd_pcm_poll_descriptors(handle, &descriptors, UInt32(count))
            guard rc >= 0 else { throw .alsa(device: device, operation: "poll", message: Self.text(rc)) }
        } catch {
            snd_pcm_status_free(statusPointer)
            snd_pcm_close(handle)
            throw error
        }
    }

    deinit {
        snd_pcm_status_free(status)
        if let pcm { snd_pcm_close(pcm) }
    }

    /// 48 kHz stereo, interleaved; float if the device takes it, else 32- or 16-bit
    /// integers. A device that cannot play 48 kHz exactly is refused (its `plughw:` form
    /// converts).
    private static func configureHardware(_ pcm: OpaquePointer, device: String, bufferFrames: Int,
                                          periodFrames: Int) throws(AudioError) -> (snd_pcm_format_t, Int, Int) {
        var params: OpaquePointer?
        snd_pcm_hw_params_malloc(&params)
        guard let params else { throw .alsa(device: device, operation: "configure", message: "out of memory") }
        defer { snd_pcm_hw_params_free(params) }
        func check(_ rc: Int32, _ what: String) throws(AudioError) { try Self.check(rc, device, what) }
        try check(snd_pcm_hw_params_any(pcm, params), "read its abilities")
        try check(snd_pcm_hw_params_set_rate_resample(pcm, params, 0), "turn ALSA's resampling off")
        try check(snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED), "use interleaved writes")
        guard let format = [SND_PCM_FORMAT_FLOAT_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_S16_LE]
            .first(where: { snd_pcm_hw_params_test_format(pcm, params, $0) == 0 }) else {
            throw .alsa(device: device, operation: "choose a sample format", message: "it takes neither float, 32- nor 16-bit samples (try plughw:)")
        }
        try check(snd_pcm_hw_params_set_format(pcm, params, format), "set the sample format")
        try check(snd_pcm_hw_params_set_channels(pcm, params, UInt32(AudioFormat.channels)),
                  "set 2 channels (a device that cannot: try plughw:)")
        guard snd_pcm_hw_params_set_rate(pcm, params, UInt32(AudioFormat.sampleRate), 0) == 0 else {
            throw .alsa(device: device, operation: "set 48 kHz", message: "the device cannot play 48 kHz as it is (try plughw:, which converts)")
        }
        var period = snd_pcm_uframes_t(periodFrames)
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_period_size_near(pcm, params, &period, &direction), "set the period")
        var buffer = snd_pcm_uframes_t(max(bufferFrames, Int(period) * 2))
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, params, &buffer), "set the buffer")
        try check(snd_pcm_hw_params(pcm, params), "apply its settings")
        snd_pcm_hw_params_get_period_size(params, &period, &direction)
        snd_pcm_hw_params_get_buffer_size(params, &buffer)
        return (format, Int(buffer), Int(period))
    }

    /// Starts on the first write, never stops on an underrun (silence fills what was not
    /// written), and stamps its status on CLOCK_MONOTONIC.
    private static func configureSoftware(_ pcm: OpaquePointer, device: String, bufferFrames: Int, periodFrames: Int) throws(AudioError) {
        var params: OpaquePointer?
        snd_pcm_sw_params_malloc(&params)
        guard let params else { throw .alsa(device: device, operation: "configure", message: "out of memory") }
        defer { snd_pcm_sw_params_free(params) }
        func check(_ rc: Int32, _ what: String) throws(AudioError) { try Self.check(rc, device, what) }
        try check(snd_pcm_sw_params_current(pcm, params), "read its settings")
        var boundary: snd_pcm_uframes_t = 0
        try check(snd_pcm_sw_params_get_boundary(params, &boundary), "read its boundary")
        try check(snd_pcm_sw_params_set_start_threshold(pcm, params, 1), "start on the first write")
        try check(snd_pcm_sw_params_set_stop_threshold(pcm, params, boundary), "keep playing through underruns")
        try check(snd_pcm_sw_params_set_silence_threshold(pcm, params, 0), "fill with silence")
        try check(snd_pcm_sw_params_set_silence_size(pcm, params, boundary), "fill with silence")
        try check(snd_pcm_sw_params_set_avail_min(pcm, params, snd_pcm_uframes_t(periodFrames)), "wake a period at a time")
        try check(snd_pcm_sw_params_set_tstamp_mode(pcm, params, SND_PCM_TSTAMP_ENABLE), "stamp its status")
        try check(snd_pcm_sw_params_set_tstamp_type(pcm, params, SND_PCM_TSTAMP_TYPE_MONOTONIC), "stamp on CLOCK_MONOTONIC")
        try check(snd_pcm_sw_params(pcm, params), "apply its settings")
    }

    public var framesWritten: Int64 { written }

    public func wait(until deadline: Int64) throws {
        System.sleep(nanoseconds: deadline - clock.nanosecondsNow())
    }

    /// Sleeps in `poll` on the device until it can take `frames` more, or `timeout` passes
    /// (a write that found the buffer full).
    private func awaitRoom(_ pcm: OpaquePointer, frames: Int, timeout: Int64) throws {
        let deadline = clock.nanosecondsNow() + timeout
        while try availableFrames(pcm) < frames {
            let left = deadline - clock.nanosecondsNow()
            guard left > 0 else { return }
            do {
                try System.poll(&descriptors, timeoutMilliseconds: Int32(clamping: (left + 999_999) / 1_000_000))
            } catch {
                throw AudioError.alsa(device: name, operation: "poll", message: "\(error)")
            }
            var events: UInt16 = 0
            snd_pcm_poll_descriptors_revents(pcm, &descriptors, UInt32(descriptors.count), &events)
        }
    }

    /// The device's status, taken now: its delay (frames from the next one written to the
    /// one heard now) at the instant it stamped, converted to the local clock. A writer
    /// that fell behind skips the frames whose time passed first.
    public func takeTiming() -> DeviceTiming? {
        guard let pcm else { return nil }
        _ = try? availableFrames(pcm)
        let before = clock.nanosecondsNow()
        guard snd_pcm_status(pcm, status) >= 0 else { return nil }
        let now = clock.nanosecondsNow()
        let hostNow = SystemClock.hostNanoseconds()
        let state = snd_pcm_status_get_state(status)
        guard state == SND_PCM_STATE_RUNNING else { return nil }
        var stamp = snd_htimestamp_t()
        snd_pcm_status_get_htstamp(status, &stamp)
        let stampHost = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
        // The stamp is the host's CLOCK_MONOTONIC; a test clock of this process's runs apart.
        var sampled = now - Int64((Double(hostNow - stampHost) * clock.rate).rounded())
        if sampled < before - 1_000_000 || sampled > now + 1_000 { sampled = before + (now - before) / 2 }
        let delay = Int64(snd_pcm_status_get_delay(status))
        let queued = Int64(bufferFrames) - Int64(snd_pcm_status_get_avail(status))
        if delay - queued >= 0, delay - queued < Int64(bufferFrames) {
            committedLatency = max(committedLatency, AudioFormat.nanoseconds(forFrames: delay - queued))
        }
        // `delay` counts from the application pointer, which is `written` (frames skipped are
        // counted in both). It is frames of the device's: its time, which the device
        // timeline converts at the rate it measures.
        let delayTime = AudioFormat.nanoseconds(forFrames: delay)
        latest = DeviceTiming(frame: written, heardAt: LocalTime(nanoseconds: sampled + delayTime),
                              measuredAt: LocalTime(nanoseconds: now), uncertainty: now - before, delay: delayTime)
        return latest
    }

    public func write(_ samples: [Float]) throws {
        guard let pcm else { return }
        _ = try availableFrames(pcm)  // skips what fell behind first
        let frames = samples.count / AudioFormat.channels
        var done = 0
        while done < frames {
            let rc: snd_pcm_sframes_t = writeFrames(pcm, samples, from: done, count: frames - done)
            if rc == -snd_pcm_sframes_t(EAGAIN) {  // full: wait for the room it needs
                try awaitRoom(pcm, frames: min(periodFrames, frames - done), timeout: 50_000_000)
                continue
            }
            if rc < 0 {
                try recover(pcm, Int32(rc), "write")
                continue
            }
            done += Int(rc)
        }
        written += Int64(frames)
    }

    /// Frames the device can take now. A writer that fell behind (its frames' time passed:
    /// the device played silence) moves past them, counting them as written.
    private func availableFrames(_ pcm: OpaquePointer) throws -> Int {
        var available = snd_pcm_avail_update(pcm)
        if available < 0 {
            try recover(pcm, Int32(available), "check the buffer")
            available = snd_pcm_avail_update(pcm)
            if available < 0 { return 0 }
        }
        if available > bufferFrames {
            let behind = snd_pcm_uframes_t(Int(available) - bufferFrames)
            let moved = snd_pcm_forward(pcm, behind)
            if moved > 0 {
                underruns += 1
                written += Int64(moved)
                skipped += Int64(moved)
                available -= moved
            }
        }
        return Int(available)
    }

    /// A device that stopped (an xrun where the plugin stops anyway, a suspend) is started
    /// again; the frames its stop cost are counted from the time that passed, so the next
    /// timing report sits on the same timeline (the follower steps to it if it moved).
    private func recover(_ pcm: OpaquePointer, _ rc: Int32, _ what: String) throws {
        restarts += 1
        underruns += 1
        let stoppedAt = latest
        if snd_pcm_recover(pcm, rc, 1) < 0 {
            throw AudioError.alsa(device: name, operation: what, message: Self.text(rc))
        }
        if let stoppedAt {
            let gone = clock.nanosecondsNow() - stoppedAt.heardAt.nanoseconds
            if gone > 0 { written = max(written, stoppedAt.frame + AudioFormat.frames(forNanoseconds: gone)) }
        }
    }

    private func writeFrames(_ pcm: OpaquePointer, _ samples: [Float], from: Int, count: Int) -> snd_pcm_sframes_t {
        let start = from * AudioFormat.channels, n = count * AudioFormat.channels
        switch format {
        case SND_PCM_FORMAT_FLOAT_LE:
            return samples.withUnsafeBufferPointer { snd_pcm_writei(pcm, $0.baseAddress! + start, snd_pcm_uframes_t(count)) }
        case SND_PCM_FORMAT_S32_LE:
            converted.removeAll(keepingCapacity: true)
            for i in start..<start + n { converted.append(Int32(max(-1, min(1, samples[i])) * 2_147_483_392)) }
            return converted.withUnsafeBufferPointer { snd_pcm_writei(pcm, $0.baseAddress!, snd_pcm_uframes_t(count)) }
        default:
            converted16.removeAll(keepingCapacity: true)
            for i in start..<start + n { converted16.append(Int16(max(-1, min(1, samples[i])) * 32_767)) }
            return converted16.withUnsafeBufferPointer { snd_pcm_writei(pcm, $0.baseAddress!, snd_pcm_uframes_t(count)) }
        }
    }

    static func text(_ rc: Int32) -> String { String(cString: snd_strerror(rc)) }

    /// A negative return of ALSA's is an error naming the device and what was being done.
    private static func check(_ rc: Int32, _ device: String, _ what: String) throws(AudioError) {
        if rc < 0 { throw .alsa(device: device, operation: what, message: text(rc)) }
    }
}
