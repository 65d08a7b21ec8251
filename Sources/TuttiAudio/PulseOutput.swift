import CPulse
import Glibc
import TuttiCore

/// Plays through a PulseAudio sink (48 kHz stereo float) with the asynchronous API, and
/// reports the server's raw timing: which frame of the stream the sink is at, and when it
/// is heard.
///
/// The output has no thread of its own: the thread that plays (the follower's playout
/// thread) runs PulseAudio's main loop itself, inside `awaitDemand`, sleeping in one
/// `poll` on the server's socket until the server asks for more. Callbacks run on that
/// thread, so nothing here takes a lock, and no other thread is woken to pass data on.
/// Every method must be called from that one thread (the one that created the output, or
/// one it handed the output to before using it).
///
/// The client library's own latency interpolation (its "smoother") is not used: it lags and
/// overshoots by hundreds of microseconds for seconds at a time. Instead each timing query
/// is answered with the server's read index, sink latency and the moment it took them; the
/// follower's `DeviceTimeline` does the smoothing. The stream has prebuffering off, so its
/// read index keeps pace with time even when it runs dry (frame indices stay on the
/// device's timeline), and it carries `media.role=music`, so PulseAudio's role policies
/// (module-role-cork) apply to it: when the server asks it to pause for another stream (a
/// phone call), the output drops what it has queued (nothing stale plays afterwards), corks,
/// and reports itself `interrupted` until the server asks it to play again.
public final class PulseOutput: AudioOutput {
    public let name: String
    private let clock: any MonotonicClock
    private let mainloop: OpaquePointer
    private let context: OpaquePointer
    private var stream: OpaquePointer?
    private static let bytesPerFrame = AudioFormat.channels * MemoryLayout<Float>.size

    private var written: Int64 = 0
    private var latest: DeviceTiming?
    private var taken = true
    private var requestedAt: Int64?
    private var corked = false
    /// Bytes the server will take now, as its write callback last said, less what was
    /// written since (what `pa_stream_writable_size` answers, without a call per turn: each
    /// call into the client library costs a system call of its own, `getpid`).
    private var writable = 0
    /// The stream failed or ended (its state callback said so).
    private var ended = false
    /// After a flush the server's write index moved; take ours from the next timing report.
    private var relearnWriteIndex = false
    /// How often to ask the server for timing (nanoseconds).
    private let timingInterval: Int64
    /// How long the player waits for a timing query's answer before it renders anyway.
    private let timingPatience: Int64 = 5_000_000
    public private(set) var underruns = 0
    /// The queue asked of the server (tlength): with `PA_STREAM_ADJUST_LATENCY` the server
    /// sizes its sink's latency so that the whole comes to about this.
    public let bufferLatency: Int64?

    /// - Parameters:
    ///   - sink: the sink to play to, or nil for the server's default.
    ///   - bufferMilliseconds: the audio the server keeps queued (tlength).
    ///   - requestMilliseconds: how much the server asks for at a time (minreq): the player
    ///     wakes about this often.
    ///   - timingMilliseconds: how often to ask the server for timing, at most (each answer
    ///     wakes the player once more).
    ///   - onlyIfRunning: connect only to a server that runs already (none is started), and
    ///     give up after 2 s rather than 10: to find out whether this host has one.
    public init(sink: String?, clock: any MonotonicClock, clientName: String = "tutti",
                streamName: String = "tutti follower", bufferMilliseconds: Int = 60, requestMilliseconds: Int = 10,
                timingMilliseconds: Int = 25, onlyIfRunning: Bool = false) throws(AudioError) {
        self.clock = clock
        timingInterval = Int64(timingMilliseconds) * 1_000_000
        bufferLatency = Int64(bufferMilliseconds) * 1_000_000
        name = "pulse:\(sink ?? "default")"
        guard let loop = pa_mainloop_new() else {
            throw .pulse(operation: "create a main loop", message: "out of memory")
        }
        mainloop = loop
        guard let ctx = pa_context_new(pa_mainloop_get_api(loop), clientName) else {
            pa_mainloop_free(loop)
            throw .pulse(operation: "create a context", message: "out of memory")
        }
        context = ctx
        guard pa_context_connect(ctx, nil, onlyIfRunning ? PA_CONTEXT_NOAUTOSPAWN : PA_CONTEXT_NOFLAGS, nil) >= 0 else {
            throw .pulse(operation: "connect", message: errorText())
        }
        let deadline = clock.nanosecondsNow() + (onlyIfRunning ? 2_000_000_000 : 10_000_000_000)
        while true {
            let state = pa_context_get_state(ctx)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
                throw .pulse(operation: "connect", message: errorText())
            }
            guard iterate(until: deadline) else { throw .pulse(operation: "connect", message: "the server did not answer in 10 s") }
        }
        try openStream(sink: sink, name: streamName, bufferMilliseconds: bufferMilliseconds, requestMilliseconds: requestMilliseconds)
    }

    deinit {
        if let stream {
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(mainloop)
    }

    /// Creates and connects the playback stream.
    private func openStream(sink: String?, name streamName: String, bufferMilliseconds: Int, requestMilliseconds: Int) throws(AudioError) {
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(AudioFormat.sampleRate),
                                  channels: UInt8(AudioFormat.channels))
        let properties = pa_proplist_new()
        defer { pa_proplist_free(properties) }
        pa_proplist_sets(properties, "media.role", "music")
        guard let s = pa_stream_new_with_proplist(context, streamName, &spec, nil, properties) else {
            throw .pulse(operation: "create a stream", message: errorText())
        }
        stream = s
        let me = Unmanaged.passUnretained(self).toOpaque()
        pa_stream_set_underflow_callback(s, { _, user in PulseOutput.from(user).underruns += 1 }, me)
        pa_stream_set_write_callback(s, { _, bytes, user in PulseOutput.from(user).writable = bytes }, me)
        pa_stream_set_state_callback(s, { s, user in
            let state = pa_stream_get_state(s)
            if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED { PulseOutput.from(user).ended = true }
        }, me)
        pa_stream_set_event_callback(s, { _, event, _, user in
            guard let event else { return }
            PulseOutput.from(user).serverAsked(String(cString: event))
        }, me)
        let bytesPerMs = UInt32(AudioFormat.sampleRate / 1000 * Self.bytesPerFrame)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: bytesPerMs * UInt32(bufferMilliseconds),
                                  prebuf: 0, minreq: bytesPerMs * UInt32(max(1, requestMilliseconds)), fragsize: UInt32.max)
        guard pa_stream_connect_playback(s, sink, &attr, PA_STREAM_ADJUST_LATENCY, nil, nil) >= 0 else {
            throw .pulse(operation: "connect to sink \(sink ?? "(default)")", message: errorText())
        }
        let deadline = clock.nanosecondsNow() + 10_000_000_000
        while true {
            let state = pa_stream_get_state(s)
            if state == PA_STREAM_READY { break }
            if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
                throw .pulse(operation: "connect to sink \(sink ?? "(default)")", message: errorText())
            }
            guard iterate(until: deadline) else {
                throw .pulse(operation: "connect to sink \(sink ?? "(default)")", message: "the server did not answer in 10 s")
            }
        }
        requestTiming()
    }

    public var framesWritten: Int64 { written }

    public var interrupted: Bool { corked }

    /// Runs the main loop (answers, requests, events) until the server will take `frames`
    /// more frames, or `timeout` passes.
    public func awaitDemand(frames: Int, timeout: Int64) throws -> Bool {
        let deadline = clock.nanosecondsNow() + timeout
        guard stream != nil else { return false }
        // A timing query still out is answered within a millisecond or so: wait for it
        // here, so that its answer is taken the moment it arrives (its round trip is its
        // error bound), not after the next render.
        while let sent = requestedAt, clock.nanosecondsNow() - sent < timingPatience {
            guard iterate(until: min(deadline, sent + timingPatience)) else { break }
        }
        while true {
            try checkStream()
            if writable >= frames * Self.bytesPerFrame { return true }
            guard iterate(until: deadline) else { return false }
        }
    }

    public func takeTiming() -> DeviceTiming? {
        guard !taken else { return nil }
        taken = true
        return latest
    }

    public func write(_ samples: [Float]) throws {
        guard let stream else { return }
        try checkStream()
        let rc = samples.withUnsafeBytes { pa_stream_write(stream, $0.baseAddress, $0.count, nil, 0, PA_SEEK_RELATIVE) }
        if rc < 0 { throw AudioError.pulse(operation: "write", message: errorText()) }
        written += Int64(samples.count / AudioFormat.channels)
        writable = max(0, writable - samples.count * MemoryLayout<Float>.size)
        if requestedAt == nil, relearnWriteIndex || clock.nanosecondsNow() - (latest?.measuredAt.nanoseconds ?? 0) >= timingInterval {
            requestTiming()
        }
    }

    // MARK: - Interruptions

    /// The server's role policy asked this stream to pause or to play again.
    private func serverAsked(_ event: String) {
        guard let stream else { return }
        if event == PA_STREAM_EVENT_REQUEST_CORK, !corked {
            corked = true
            relearnWriteIndex = true
            pa_operation_unref(pa_stream_flush(stream, nil, nil))
            pa_operation_unref(pa_stream_cork(stream, 1, nil, nil))
        } else if event == PA_STREAM_EVENT_REQUEST_UNCORK, corked {
            corked = false
            pa_operation_unref(pa_stream_cork(stream, 0, nil, nil))
            requestTiming()
        }
    }

    // MARK: - Timing

    /// Asks the server for the stream's timing; the answer arrives in `timingArrived`.
    private func requestTiming() {
        guard let stream else { return }
        requestedAt = clock.nanosecondsNow()
        let op = pa_stream_update_timing_info(stream, { s, success, user in
            PulseOutput.from(user).timingArrived(s, success: success != 0)
        }, Unmanaged.passUnretained(self).toOpaque())
        if let op { pa_operation_unref(op) } else { requestedAt = nil }
    }

    /// The server sampled its read index and the sink's latency just before it stamped its
    /// answer (wall-clock time); on this host that stamp converts to the monotonic clock.
    /// Where it cannot be trusted, the middle of the round trip stands in for it. The stamp's
    /// age is a duration of the host's clock (converted to this process's, which a test may
    /// run apart); the sink's latency is the device's time, which the device timeline
    /// converts at the rate it measures for the device.
    private func timingArrived(_ s: OpaquePointer?, success: Bool) {
        let now = clock.nanosecondsNow()
        let wall = Self.wallClock()
        defer { requestedAt = nil }
        // Until the stream plays, its read index and the sink's latency describe a start
        // still to come, and can be milliseconds off.
        guard success, let sent = requestedAt, let s, let info = pa_stream_get_timing_info(s)?.pointee else { return }
        if relearnWriteIndex, info.write_index_corrupt == 0 {
            written = info.write_index / Int64(Self.bytesPerFrame)
            relearnWriteIndex = false
        }
        guard info.read_index_corrupt == 0, info.playing != 0, !corked else { return }
        var sampled = sent + (now - sent) / 2
        if info.synchronized_clocks != 0 {
            let stampWall = Int64(info.timestamp.tv_sec) * 1_000_000_000 + Int64(info.timestamp.tv_usec) * 1_000
            let stamp = now - Int64((Double(wall - stampWall) * clock.rate).rounded())
            if stamp >= sent - 1_000, stamp <= now + 1_000 { sampled = stamp }
        }
        let latency = Int64(min(info.sink_usec, 60_000_000)) * 1_000  // no sink holds a minute
        latest = DeviceTiming(
            frame: info.read_index / Int64(Self.bytesPerFrame),
            heardAt: LocalTime(nanoseconds: sampled + latency),
            measuredAt: LocalTime(nanoseconds: now), uncertainty: now - sent, delay: latency)
        taken = false
    }

    // MARK: - Plumbing

    private static func from(_ user: UnsafeMutableRawPointer?) -> PulseOutput {
        Unmanaged<PulseOutput>.fromOpaque(user!).takeUnretainedValue()
    }

    private static func wallClock() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// One turn of the main loop, sleeping in `poll` no later than `deadline`: dispatches
    /// what arrived. False once the deadline has passed or the loop failed.
    private func iterate(until deadline: Int64) -> Bool {
        let left = deadline - clock.nanosecondsNow()
        guard left > 0 else { return false }
        guard pa_mainloop_prepare(mainloop, Int32(clamping: (left + 999) / 1_000)) >= 0,
              pa_mainloop_poll(mainloop) >= 0, pa_mainloop_dispatch(mainloop) >= 0 else { return false }
        return true
    }

    private func checkStream() throws(AudioError) {
        if ended { throw .pulse(operation: "play", message: "the stream ended: \(errorText())") }
    }

    private func errorText() -> String {
        String(cString: pa_strerror(pa_context_errno(context)))
    }
}
