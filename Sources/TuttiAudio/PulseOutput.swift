import TuttiCore
import TuttiNet

/// Plays through a PulseAudio sink (48 kHz stereo float), speaking the server's native
/// protocol on its socket itself (`PulseProtocol`), and reports the server's raw timing:
/// which frame of the stream the sink is at, and when it is heard. PulseAudio's client
/// library is not used: with it came 25 libraries (X11, libsndfile and its codecs,
/// libsystemd and its compressors), some 2 MB of a follower's resident memory, and a
/// system call of its own in most of its calls.
///
/// The output has no thread of its own: the thread that plays (the follower's playout
/// thread) reads the server's socket itself, inside `wait`, and sleeps there until its
/// next write (`DeviceFill` decides when, from the device's timeline), waking early only
/// for the answer to a timing query or, while the server has the stream paused, for its
/// word to play again. The server's requests for data are read but do not wake it: their
/// size follows the sink's blocks, and a writer that waited for them ran the stream dry
/// (bench/NOTES.md, "Holes"). Nothing here takes a lock, and no other thread is woken to
/// pass data on. Every method must be called from that one thread (the one that created
/// the output, or one it handed the output to before using it).
///
/// Each timing query is answered with the server's read index, sink latency and the moment
/// it took them; the follower's `DeviceTimeline` does the smoothing (the client library's
/// own interpolation lagged and overshot by hundreds of microseconds). The stream has
/// prebuffering off, so its read index keeps pace with time even when it runs dry (frame
/// indices stay on the device's timeline), and it carries `media.role=music`, so
/// PulseAudio's role policies (module-role-cork) apply to it: when the server asks it to
/// pause for another stream (a phone call), the output drops what it has queued (nothing
/// stale plays afterwards), corks, and reports itself `interrupted` until the server asks
/// it to play again.
///
/// The server is found as PulseAudio's clients find it (`PULSE_SERVER`, the user's runtime
/// folder, the system-wide socket) and accepts the client by its cookie or, on its own
/// machine, by the process's user (`PulseServerLocation`); audio goes inline on the
/// socket, not through shared memory. None is started when none runs.
public final class PulseOutput: AudioOutput {
    public let name: String
    private let clock: any MonotonicClock
    private let socket: LocalStreamSocket
    private var incoming = PulseFrameReader()
    /// What is sent next, its storage reused.
    private var outgoing: [UInt8] = []
    private var nextTag: UInt32 = 0
    /// The stream's channel on the connection (0 until it is created).
    private var channel: UInt32 = 0
    private static let bytesPerFrame = AudioFormat.channels * MemoryLayout<Float>.size

    private var written: Int64 = 0
    private var latest: DeviceTiming?
    private var taken = true
    /// The timing query out: its tag, when it was sent, the frames written and the flushes
    /// made by then.
    private var query: Query?
    private struct Query {
        var tag: UInt32
        /// When it was sent, on this process's clock and on the host's wall clock (the
        /// server stamps its answer with the latter).
        var sentAt: Int64
        var sentWall: Int64
        var written: Int64
        var flushes: Int
    }
    /// The reply a setup step waits for: its tag, and the answer once it came.
    private var awaited: (tag: UInt32, reply: PulseTagReader?, error: String?)?
    private var flushes = 0
    private var corked = false
    /// Why the stream or the connection ended, once it did.
    private var ended: String?
    /// After a flush the server's write index moved; take ours from the next timing report.
    private var relearnWriteIndex = false
    /// How often to ask the server for timing, at most (nanoseconds): a query goes out after
    /// a write once this long has passed since the last answer (with a write every 40 ms, at
    /// every write: asked every 100 ms instead, the two rooms' lines of one sink drew further
    /// apart; bench/NOTES.md, "Holes").
    private let timingInterval: Int64
    /// How long the player waits for a timing query's answer before it renders anyway.
    private let timingPatience: Int64 = 5_000_000
    public private(set) var underruns = 0
    /// Whether anything was written since the stream opened or was flushed (the server says
    /// it ran dry only once it had something).
    private var fed = false
    /// The sink's latency as the server configured it for this stream (ns): how far ahead
    /// of hearing the sink takes audio from the stream, at most.
    public private(set) var configuredSinkLatency: Int64
    /// The largest sink latency a timing answer has reported (ns).
    private var reportedSinkLatency: Int64 = 0

    /// - Parameters:
    ///   - sink: the sink to play to, or nil for the server's default.
    ///   - sinkLatencyMilliseconds: how far ahead of hearing the sink may take audio from
    ///     the stream (the server's latency for it).
    ///   - requestMilliseconds: how much the server asks for at a time (minreq); its
    ///     requests do not wake the player, which writes on its own schedule.
    ///   - timingMilliseconds: how often to ask the server for timing, at most (each answer
    ///     wakes the player once more).
    ///   - onlyIfRunning: give up after 2 s rather than 10 (to find out whether this host
    ///     has a server).
    public convenience init(sink: String?, clock: any MonotonicClock, clientName: String = "tutti",
                            streamName: String = "tutti follower", sinkLatencyMilliseconds: Int = 20, requestMilliseconds: Int = 40,
                            timingMilliseconds: Int = 25, onlyIfRunning: Bool = false) throws(AudioError) {
        try self.init(sink: sink, clock: clock, clientName: clientName, streamName: streamName, sinkLatencyMilliseconds: sinkLatencyMilliseconds,
                      requestMilliseconds: requestMilliseconds, timingMilliseconds: timingMilliseconds, onlyIfRunning: onlyIfRunning,
                      environment: System.environment)
    }

    /// `environment` says where the server is (`PulseServerLocation`).
    init(sink: String?, clock: any MonotonicClock, clientName: String, streamName: String, sinkLatencyMilliseconds: Int,
         requestMilliseconds: Int, timingMilliseconds: Int, onlyIfRunning: Bool, environment: (String) -> String?) throws(AudioError) {
        self.clock = clock
        timingInterval = Int64(timingMilliseconds) * 1_000_000
        configuredSinkLatency = Int64(sinkLatencyMilliseconds) * 1_000_000
        name = "pulse:\(sink ?? "default")"
        let sockets = PulseServerLocation.sockets(environment: environment)
        var failures: [String] = []
        var connected: LocalStreamSocket?
        for path in sockets {
            do {
                connected = try LocalStreamSocket(connectingTo: path)
                break
            } catch {
                failures.append(error.description)
            }
        }
        guard let connected else {
            throw .pulse(operation: "connect", message: failures.isEmpty ? "PULSE_SERVER names no local server (unix:PATH)" : failures.joined(separator: "; "))
        }
        socket = connected
        outgoing.reserveCapacity(PulseProtocol.descriptorSize + 960 * Self.bytesPerFrame)
        let deadline = clock.nanosecondsNow() + (onlyIfRunning ? 2_000_000_000 : 10_000_000_000)
        try authenticate(clientName: clientName, environment: environment, deadline: deadline)
        try openStream(sink: sink, name: streamName, sinkLatencyMilliseconds: sinkLatencyMilliseconds,
                       requestMilliseconds: requestMilliseconds, deadline: deadline)
    }

    /// Introduces this client: the protocol's version, the cookie (with this process's
    /// credentials beside it), and its name.
    private func authenticate(clientName: String, environment: (String) -> String?, deadline: Int64) throws(AudioError) {
        let files = PulseServerLocation.cookieFiles(environment: environment, home: System.homeOfUser())
        let cookie = files.lazy.compactMap { Files.read($0, limit: 4_096) }.first { $0.count >= PulseProtocol.cookieLength }
        var auth = command(.auth)
        auth.u32(PulseProtocol.version)
        auth.arbitrary(cookie.map { Array($0.prefix(PulseProtocol.cookieLength)) } ?? [UInt8](repeating: 0, count: PulseProtocol.cookieLength))
        var reply = try call(auth, credentials: true, deadline: deadline, operation: "connect")
        let version = (try? reply.u32()).map { $0 & 0xFFFF } ?? 0
        // The stream's request below carries the fields of version 21; an older server
        // would take the rest for garbage.
        guard version >= 21 else {
            throw .pulse(operation: "connect", message: "the server speaks protocol version \(version); 21 (PulseAudio 1.0) or later is needed")
        }
        var hello = command(.setClientName)
        hello.properties([("application.name", clientName)])
        _ = try call(hello, deadline: deadline, operation: "connect")
    }

    /// Creates the playback stream. With the latency adjusted, the server gives the sink
    /// half of what the queue (tlength) holds beyond two requests, so the queue asked for is
    /// twice the sink's latency and two requests; the player fills it as it sees fit.
    private func openStream(sink: String?, name streamName: String, sinkLatencyMilliseconds: Int, requestMilliseconds: Int,
                            deadline: Int64) throws(AudioError) {
        let bytesPerMs = UInt32(AudioFormat.sampleRate / 1000 * Self.bytesPerFrame)
        let request = max(1, requestMilliseconds)
        let queue = 2 * max(1, sinkLatencyMilliseconds) + 2 * request
        var create = command(.createPlaybackStream)
        create.sampleSpec(format: 5, channels: UInt8(AudioFormat.channels), rate: UInt32(AudioFormat.sampleRate))  // float32le
        create.channelMap([1, 2])  // front left, front right
        create.u32(0xFFFF_FFFF)  // the sink by name, or the default
        create.string(sink)
        create.u32(0xFFFF_FFFF)  // maxlength: the server's
        create.bool(false)  // corked
        create.u32(bytesPerMs * UInt32(queue))  // tlength
        create.u32(0)  // prebuf: play at once, and keep the read index moving when dry
        create.u32(bytesPerMs * UInt32(request))  // minreq
        create.u32(0)  // sync group
        create.volumes([0x10000, 0x10000])
        for _ in 0..<7 { create.bool(false) }  // no remap, no remix, fix format, rate, channels, no move, variable rate
        create.bool(false)  // muted
        create.bool(true)  // adjust latency
        create.properties([("media.name", streamName), ("media.role", "music")])
        create.bool(false)  // volume set
        create.bool(false)  // early requests
        create.bool(false)  // muted set
        create.bool(false)  // don't inhibit auto suspend
        create.bool(false)  // fail on suspend
        create.bool(false)  // relative volume
        create.bool(false)  // passthrough
        create.u8(0)  // formats: none, the sample spec stands
        let operation = "connect to sink \(sink ?? "(default)")"
        var reply = try call(create, deadline: deadline, operation: operation)
        do throws(PulseProtocolError) {
            channel = try reply.u32()
            _ = try reply.u32()  // the sink input
            _ = try reply.u32()  // the bytes requested: the player writes on its own schedule
        } catch {
            throw .pulse(operation: operation, message: error.description)
        }
        // The buffer as granted, the sink, and the latency the server configured for the
        // stream (protocol 13 on); a server that leaves them out leaves the one asked for.
        do throws(PulseProtocolError) {
            for _ in 0..<7 { try reply.skip() }  // maxlength, tlength, prebuf, minreq, sample spec, channel map, sink index
            _ = try reply.string()  // the sink's name
            _ = try reply.bool()  // suspended
            configuredSinkLatency = Int64(min(try reply.u64(), 10_000_000)) * 1_000
        } catch {}
        requestTiming()
    }

    public var framesWritten: Int64 { written }

    public var interrupted: Bool { corked }

    /// How far ahead of hearing the sink takes audio from the stream, at most: as the
    /// server configured it, or as its answers have shown, whichever is more. Another
    /// stream on the sink can only lower it (a sink runs at its most demanding stream's
    /// latency), so a notification's sound does not take the stream's margin.
    public var committedLatency: Int64 { max(configuredSinkLatency, reportedSinkLatency) }

    /// Reads what the server said meanwhile (answers, requests, events) and sleeps until
    /// `deadline`. A timing query still out is answered within a millisecond or so: its
    /// answer is waited for in `poll`, so that it is taken the moment it arrives (its round
    /// trip is its error bound); so is the server's word to play again while it has the
    /// stream paused. Otherwise the socket does not wake the player.
    public func wait(until deadline: Int64) throws {
        _ = iterate(until: clock.nanosecondsNow())  // what has come already
        while let sent = query?.sentAt, clock.nanosecondsNow() - sent < timingPatience {
            guard iterate(until: min(deadline, sent + timingPatience)) else { break }
        }
        while corked, iterate(until: deadline) {}
        try checkStream()
        System.sleep(nanoseconds: deadline - clock.nanosecondsNow())
        _ = iterate(until: clock.nanosecondsNow())
        try checkStream()
    }

    public func takeTiming() -> DeviceTiming? {
        guard !taken else { return nil }
        taken = true
        return latest
    }

    public func write(_ samples: [Float]) throws {
        try checkStream()
        var offset = 0
        let total = samples.count * MemoryLayout<Float>.size
        while offset < total {
            let n = min(PulseProtocol.largestBlock, total - offset)
            outgoing.removeAll(keepingCapacity: true)
            PulseFrameReader.appendDescriptor(length: n, channel: channel, to: &outgoing)
            samples.withUnsafeBytes { outgoing.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
            try sendOutgoing(operation: "write")
            offset += n
        }
        written += Int64(samples.count / AudioFormat.channels)
        fed = true
        if query == nil, relearnWriteIndex || clock.nanosecondsNow() - (latest?.measuredAt.nanoseconds ?? 0) >= timingInterval {
            requestTiming()
        }
    }

    // MARK: - Interruptions

    /// The server's role policy asked this stream to pause or to play again.
    private func serverAsked(_ event: String) {
        if event == "request-cork", !corked {
            corked = true
            relearnWriteIndex = true
            flushes += 1
            fed = false
            var flush = command(.flushPlaybackStream)
            flush.u32(channel)
            send(flush)
            send(cork(true))
        } else if event == "request-uncork", corked {
            corked = false
            send(cork(false))
            requestTiming()
        }
    }

    private func cork(_ on: Bool) -> PulseTagWriter {
        var cork = command(.corkPlaybackStream)
        cork.u32(channel)
        cork.bool(on)
        return cork
    }

    // MARK: - Timing

    /// Asks the server for the stream's timing; the answer arrives in `timingArrived`.
    private func requestTiming() {
        guard ended == nil else { return }
        let tag = nextTag
        var ask = command(.getPlaybackLatency)
        ask.u32(channel)
        let (sentAt, wall) = SystemClock.readWithWallClock(clock)
        ask.timeval(seconds: UInt32(truncatingIfNeeded: wall / 1_000_000_000), microseconds: UInt32(wall % 1_000_000_000 / 1_000))
        query = Query(tag: tag, sentAt: sentAt, sentWall: wall, written: written, flushes: flushes)
        send(ask)
    }

    /// The server sampled its read index and the sink's latency just before it stamped its
    /// answer (wall-clock time); on this host that stamp converts to the monotonic clock.
    /// Where it cannot be trusted, the middle of the round trip stands in for it. The stamp's
    /// age is a duration of the host's clock (converted to this process's, which a test may
    /// run apart); the sink's latency is the device's time, which the device timeline
    /// converts at the rate it measures for the device.
    private func timingArrived(_ reply: inout PulseTagReader, asked: Query) throws(PulseProtocolError) {
        let (now, wall) = SystemClock.readWithWallClock(clock)
        let sinkMicroseconds = try reply.u64()
        _ = try reply.u64()  // the source's latency: none for playback
        let playing = try reply.bool()
        let local = try reply.timeval()
        let remote = try reply.timeval()
        let writeIndex = try reply.s64()
        let readIndex = try reply.s64()
        // An answer to a query sent before a flush describes the queue the flush dropped.
        guard asked.flushes == flushes else { return }
        if relearnWriteIndex {
            written = writeIndex / Int64(Self.bytesPerFrame) + (written - asked.written)
            relearnWriteIndex = false
        }
        // Until the stream plays, its read index and the sink's latency describe a start
        // still to come, and can be milliseconds off.
        guard playing, !corked else { return }
        var sampled = asked.sentAt + (now - asked.sentAt) / 2
        let localMicroseconds = Int64(local.seconds) * 1_000_000 + Int64(local.microseconds)
        let remoteMicroseconds = Int64(remote.seconds) * 1_000_000 + Int64(remote.microseconds)
        if localMicroseconds <= remoteMicroseconds, remoteMicroseconds <= wall / 1_000 {
            // The stamp's distance from the query's own wall-clock time, as a duration of this
            // process's clock (a test may run it apart from the host's).
            let stamp = asked.sentAt + Int64((Double(remoteMicroseconds * 1_000 - asked.sentWall) * clock.rate).rounded())
            if stamp >= asked.sentAt - 1_000, stamp <= now + 1_000 {
                sampled = stamp
            }
        }
        let latency = Int64(min(sinkMicroseconds, 60_000_000)) * 1_000  // no sink holds a minute
        if latency <= 2 * configuredSinkLatency { reportedSinkLatency = max(reportedSinkLatency, latency) }
        latest = DeviceTiming(
            frame: readIndex / Int64(Self.bytesPerFrame),
            heardAt: LocalTime(nanoseconds: sampled + latency),
            measuredAt: LocalTime(nanoseconds: now), uncertainty: now - asked.sentAt, delay: latency)
        taken = false
    }

    // MARK: - The connection

    /// A command with the next tag.
    private func command(_ c: PulseProtocol.Command) -> PulseTagWriter {
        defer { nextTag &+= 1 }
        return PulseTagWriter(command: c, tag: nextTag)
    }

    /// Sends a setup command and waits for its answer (its tag is the last one made).
    private func call(_ request: PulseTagWriter, credentials: Bool = false, deadline: Int64, operation: String) throws(AudioError) -> PulseTagReader {
        awaited = (nextTag &- 1, nil, nil)
        defer { awaited = nil }
        frame(request)
        try sendOutgoing(operation: operation, credentials: credentials)
        while true {
            if let reply = awaited?.reply { return reply }
            if let error = awaited?.error { throw .pulse(operation: operation, message: error) }
            if let ended { throw .pulse(operation: operation, message: ended) }
            guard iterate(until: deadline) else {
                throw .pulse(operation: operation, message: ended ?? "the server did not answer in time")
            }
        }
    }

    /// Sends a command whose answer nobody waits for; a failure ends the stream.
    private func send(_ request: PulseTagWriter) {
        frame(request)
        do { try sendOutgoing(operation: "send") } catch { ended = ended ?? error.description }
    }

    /// Puts `request` in `outgoing`, framed as a command.
    private func frame(_ request: PulseTagWriter) {
        outgoing.removeAll(keepingCapacity: true)
        PulseFrameReader.appendDescriptor(length: request.bytes.count, channel: PulseProtocol.commandChannel, to: &outgoing)
        outgoing += request.bytes
    }

    private func sendOutgoing(operation: String, credentials: Bool = false) throws(AudioError) {
        let failure = outgoing.withUnsafeBytes { bytes -> SystemError? in
            do throws(SystemError) {
                try socket.send(bytes, credentials: credentials)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            ended = ended ?? "the connection failed (\(failure))"
            throw .pulse(operation: operation, message: failure.description)
        }
    }

    /// Sleeps until the server says something or `deadline` passes, then handles what came
    /// (a deadline already past: only what has come). False once the deadline has passed or
    /// the connection ended.
    private func iterate(until deadline: Int64) -> Bool {
        let left = deadline - clock.nanosecondsNow()
        guard ended == nil else { return false }
        guard socket.waitReadable(nanoseconds: max(0, left)) else { return left > 0 }
        do {
            _ = try socket.receive { incoming.append($0) }
            while let frame = try incoming.next() {
                try handle(frame)
            }
        } catch {
            ended = "the connection to the server ended (\(error))"
        }
        return ended == nil
    }

    /// One frame from the server: an answer, a request for audio, or news of the stream.
    private func handle(_ frame: PulseFrameReader.Frame) throws(PulseProtocolError) {
        guard frame.channel == PulseProtocol.commandChannel else { return }  // audio: only record streams get it
        var t = PulseTagReader(frame.payload)
        let code = try t.u32()
        let tag = try t.u32()
        guard let command = PulseProtocol.Command(rawValue: code) else { return }
        switch command {
        case .reply, .error:
            if let a = awaited, a.tag == tag {
                if command == .reply { awaited?.reply = t } else { awaited?.error = PulseProtocol.describe(error: (try? t.u32()) ?? 20) }
            } else if let asked = query, asked.tag == tag {
                query = nil
                if command == .reply { try timingArrived(&t, asked: asked) }
            }
        // Answers to a flush or a cork need nothing done.
        case .request:
            break  // the player writes on its own schedule
        case .underflow:
            // The sink found the stream empty: a hole, unless nothing was written yet, or
            // the stream is paused.
            if try t.u32() == channel, fed, !corked { underruns += 1 }
        case .playbackBufferAttrChanged:
            // The stream moved to another sink, or its sink's latency range changed.
            if try t.u32() == channel {
                for _ in 0..<4 { _ = try t.u32() }
                configuredSinkLatency = Int64(min(try t.u64(), 10_000_000)) * 1_000
            }
        case .playbackStreamKilled:
            if try t.u32() == channel { ended = "the server ended the stream" }
        case .playbackStreamEvent:
            if try t.u32() == channel, let event = try t.string() { serverAsked(event) }
        default:
            break  // started, overflow, suspended, moved, new buffer sizes: nothing to do
        }
    }

    private func checkStream() throws(AudioError) {
        if let ended { throw .pulse(operation: "play", message: ended) }
    }
}
