import TuttiAudio
import TuttiCore
import TuttiNet
import TuttiSecurity

/// What the follower's sockets bring its playout, in arrival order.
enum PlayoutInput: Sendable {
    /// A stream packet, opened, and when the kernel received it.
    case packet([UInt8], arrived: LocalTime)
    /// A retransmission the coordinator sent in answer to a NACK (RFC 4588), opened.
    case retransmission([UInt8], arrived: LocalTime)
    case clockSample(ClockSample)
    case epochEnd(UInt32, at: CoordinatorTime)
    /// The coordinator's settings for this room; `stream`: its zone's stream (nil: any).
    case settings(version: UInt32, gain: Float, outputDelay: Int64, stream: UInt32?)

    /// When it happened here (local ns): a packet's arrival, an exchange's end; nil for
    /// the coordinator's messages, which apply as soon as they are taken.
    var stamp: Int64? {
        switch self {
        case let .packet(_, arrived), let .retransmission(_, arrived): arrived.nanoseconds
        case let .clockSample(sample): sample.t4.nanoseconds
        case .epochEnd, .settings: nil
        }
    }
}

/// What the playout thread last measured, published for the other threads: the room's
/// report, the clock's pace of exchanges, the clock memory and the log lines.
struct PlayoutSnapshot: Sendable {
    var state: RoomState
    var estimate: ClockEstimate?
    var lock: ClockLock
    /// A remembered clock the coordinator's answers disproved.
    var rememberedRejected: Bool
    var statistics: PlayoutStatistics
    var requests: RetransmissionRequester.Statistics
    var playingEpoch: UInt32?
    var room: RoomControl
    /// How far ahead of being heard the last write began (ns): the device's latency.
    var outputLatency: Int64
    /// How far ahead of being heard the room decides its audio (ns): the latency plus one
    /// write, as measured, or the full buffer as set up, whichever is more. A cut the room
    /// learns of later than this before it is due is heard late, so this is what the room
    /// reports, and what the house's command lead is made of.
    var committedAhead: Int64
    /// The device's rate against the local clock, once measured (ppm).
    var deviceRatePPM: Double?
    /// The device's rate as assumed or measured, and how often its timeline jumped.
    var deviceOffsetPPM: Double
    var deviceJumps: Int

    func report(name: String) -> RoomReport {
        let s = statistics
        return RoomReport(
            name: name, state: state, interrupted: room.interrupted,
            clockOffsetMicroseconds: Double(estimate?.offset ?? 0) / 1e3,
            clockUncertaintyMicroseconds: Double(estimate?.uncertainty ?? 0) / 1e3,
            roundTripMicroseconds: Double(estimate?.minimumRoundTrip ?? 0) / 1e3, bufferedPackets: s.buffered,
            outputLatencyMilliseconds: Double(committedAhead) / 1e6, packetsReceived: s.packetsReceived,
            packetsLost: s.lost, packetsRecovered: s.recoveredByFEC, framesConcealed: s.concealedFrames,
            packetsLate: s.late, timingErrorMicroseconds: Double(s.lastError) / 1e3,
            settingsVersion: room.settingsVersion, epoch: playingEpoch,
            outputDelayMilliseconds: Double(room.outputDelay) / 1e6, packetsMissed: requests.missed,
            packetsRetransmitted: s.retransmitted, steps: s.steps, slews: s.slews, outages: s.outages)
    }

    /// A one-line summary of the clock, buffer and loss counters; `unsealed` counts the
    /// stream's packets not sealed with the house key.
    func statusLine(unsealed: Int) -> String {
        let s = statistics, r = requests
        let clock = estimate.map { "\($0)" } ?? "not locked"
        let timing = (Double(s.lastError) / 1000).fixed(1, sign: true)
        let rate = ((s.ratio - 1) * 1e6).fixed(1, sign: true)
        return "clock: \(clock); device latency \(outputLatency / 1_000_000) ms; timing \(timing) µs, rate \(rate) ppm; "
            + "buffered \(s.buffered); received \(s.packetsReceived), missed \(r.missed), retransmitted \(s.retransmitted) "
            + "(asked \(r.requested), \(r.joining) on joining), lost \(s.lost), fec \(s.recoveredByFEC), concealed "
            + "\(s.concealedFrames) frames, late \(s.late), dropped \(s.malformed + s.foreign + s.absurd + s.duplicates), "
            + "unsealed \(unsealed)\(s.otherZones > 0 ? ", other zones' \(s.otherZones)" : ""), resyncs \(s.resyncs), steps \(s.steps), slews \(s.slews), outages \(s.outages), "
            + "device \(deviceOffsetPPM.fixed(1, sign: true)) ppm, jumps \(deviceJumps)"
    }
}

/// What the coordinator has set for this room, as applied here.
struct RoomControl: Sendable {
    var settingsVersion: UInt32
    var gain: Float
    var outputDelay: Int64
    var interrupted: Bool
}

/// The follower's real-time side, run by its only thread: the playout engine, the device's
/// timeline, the room's gain, and the sockets. It sleeps on the device's demand (in
/// PulseAudio's main loop), or until the control channel or a retransmission request is
/// due; at each wake it takes what the sockets received meanwhile (without waiting), asks
/// for what is missing, sends what the clock and the room are due to send, renders the
/// frames due and writes them. It shares nothing with another thread, so it never waits on
/// one; see docs/threads.md.
final class Playout {
    /// Sends this follower's NACKs (RFC 4585) to the coordinator on the control channel,
    /// sealed with SRTCP when the stream is sealed: a UDP send that never waits (a full
    /// socket buffer drops it).
    struct Requests {
        let socket: any DatagramSocket
        let coordinator: SocketAddress
        /// This follower's SSRC, in its NACKs.
        let ssrc = UInt32.random(in: 1...UInt32.max)
    }

    let engine: PlayoutEngine
    private let network: FollowerNetwork
    private let news: PlayoutNews
    private var requests: Requests
    private let clock: any MonotonicClock
    private let chunkFrames: Int
    private var room: RoomControl
    private var device = DeviceTimeline()
    private var gain = GainStage()
    private var outputLatency: Int64 = 0
    /// The output's latency once its buffer is full (just after a write), as set up: the
    /// least the room reports committing to (a house that took the latency measured while
    /// the buffer filled gave a start too short a lead, and the rooms lost its first 10 to
    /// 15 ms).
    private let bufferLatency: Int64
    /// What is rendered for each write, kept between turns.
    private var buffer: [Float] = []
    /// Renders until the next snapshot.
    private var rendersToSnapshot = 0
    /// Whether the output was last asked for timing at the steady pace.
    private var steadyTiming = false
    /// How often a steady device timeline asks for the device's timing (ns).
    static let steadyTimingInterval: Int64 = 100_000_000
    private let trace: TimingTrace?

    init(engine: PlayoutEngine, network: FollowerNetwork, news: PlayoutNews, requests: Requests, clock: any MonotonicClock,
         chunkFrames: Int, outputDelay: Int64, timingWindow: Int64? = nil, bufferLatency: Int64 = 0, trace: TimingTrace?) {
        if let timingWindow {
            var timeline = DeviceTimeline.Configuration()
            timeline.window = timingWindow
            device = DeviceTimeline(configuration: timeline)
        }
        self.engine = engine
        self.network = network
        self.news = news
        self.requests = requests
        self.clock = clock
        self.chunkFrames = chunkFrames
        self.bufferLatency = bufferLatency
        buffer.reserveCapacity(chunkFrames * 2)
        self.trace = trace
        room = RoomControl(settingsVersion: 0, gain: 1, outputDelay: outputDelay, interrupted: false)
    }

    /// Assumes the device runs `ppm` off the local clock until its own reports tell (an
    /// earlier run measured it).
    func assumeDeviceRate(ppm: Double) { device.assumeRate(ppm: ppm) }

    /// Plays through `output` until `stop` is set.
    func run(output: AudioOutput, stop: StopFlag) throws {
        while !stop.isSet { _ = try step(output: output) }
    }

    /// One turn of the loop: sends what the control channel is due to send, waits for the
    /// device's demand (or until the control channel or a retransmission request is due),
    /// takes what the sockets received, asks for what is missing, and renders and writes
    /// the frames due when the device wants them. Returns the local time by which it must
    /// turn again even if the device asks for nothing (a simulated house drives it so).
    @discardableResult
    func step(output: AudioOutput) throws -> Int64 {
        // It wakes for the device's demand; when the control channel is due to send (a
        // time request rides the device's wakes where it can); and when a retransmission
        // request is due (a packet overdue, or a retry: a request sent late leaves its
        // answer less time).
        let controlDue = network.turn(lock: engine.clockLock)
        let before = clock.nanosecondsNow()
        let requestDue = engine.nextRetransmissionRequest.map { max($0.nanoseconds, before + 1_000_000) } ?? .max
        let timeout = min(200_000_000, max(0, min(controlDue, requestDue) - before))
        let ready = try output.awaitDemand(frames: chunkFrames, timeout: timeout)
        let now = clock.nanosecondsNow()
        let clockChanged = takeInputs()
        askForMissing(at: LocalTime(nanoseconds: now))
        let next = min(before + timeout, engine.nextRetransmissionRequest.map { max($0.nanoseconds, now + 1_000_000) } ?? .max)
        guard ready else {
            publish(force: clockChanged, now: now)
            return next
        }
        let jumps = device.jumps
        let timing = output.takeTiming()
        if let timing { device.report(timing) }
        if device.isSteady != steadyTiming {
            steadyTiming.toggle()
            output.paceTiming(every: steadyTiming ? Self.steadyTimingInterval : nil)
        }
        let written = output.framesWritten
        let heard = device.heardAt(frame: written)
        room.interrupted = output.interrupted
        gain.target = room.interrupted ? 0 : room.gain
        if device.jumps != jumps { engine.deviceTimelineChanged() }
        engine.deviceRate = device.localPerFrame
        engine.deviceSettled = device.isSettled
        buffer.removeAll(keepingCapacity: true)
        if let heard {
            engine.render(frames: chunkFrames, heardAt: heard + room.outputDelay, into: &buffer)
            outputLatency = heard.nanoseconds + room.outputDelay - now
        } else {
            buffer.append(contentsOf: repeatElement(0, count: chunkFrames * 2))
        }
        trace?.record(now: now, timing: timing, written: written, heard: heard, engine: engine)
        gain.apply(to: &buffer)
        try output.write(buffer)
        publish(force: clockChanged, now: now)
        return next
    }

    /// Applies what the sockets received since the last wake, in arrival order. True when
    /// a clock exchange came in.
    private func takeInputs() -> Bool {
        var clockChanged = false
        network.collect { input in
            if case .clockSample = input { clockChanged = true }
            apply(input)
        }
        return clockChanged
    }

    private func apply(_ input: PlayoutInput) {
        switch input {
        case let .packet(bytes, arrived): engine.receive(bytes, at: arrived)
        case let .retransmission(bytes, arrived): engine.receiveRetransmission(bytes, at: arrived)
        case let .clockSample(sample): engine.addClockSample(sample)
        case let .epochEnd(epoch, at): engine.endEpoch(epoch, at: at)
        case let .settings(version, gain, outputDelay, stream):
            guard version != room.settingsVersion else { return }
            network.zoneStream = stream
            engine.follow(stream: stream)
            if outputDelay != room.outputDelay { engine.deviceTimelineChanged() }
            room.settingsVersion = version
            room.gain = gain
            room.outputDelay = outputDelay
        }
    }

    /// Sends the NACKs due now, in as many copies as the path's loss calls for.
    private func askForMissing(at now: LocalTime) {
        guard let due = engine.retransmissionRequests(at: now, outputLead: outputLatency > 0 ? outputLatency : 60_000_000) else { return }
        let nack = GenericNACK(senderSSRC: requests.ssrc, mediaSSRC: due.ssrc, sequences: due.sequences).encode()
        for _ in 0..<due.copies {
            // Each copy its own SRTCP index: a copy of the same would be taken for a replay.
            guard let wire = network.sealFeedback(nack) else { continue }
            try? requests.socket.send(wire, to: requests.coordinator, wait: false)
        }
    }

    /// How the playout stands now.
    func snapshot() -> PlayoutSnapshot {
        var statistics = engine.statistics
        statistics.otherZones += network.otherZones  // dropped before the engine saw them
        return PlayoutSnapshot(
            state: engine.state, estimate: engine.clockEstimate, lock: engine.clockLock,
            rememberedRejected: engine.clock.rememberedRejected, statistics: statistics,
            requests: engine.requester.statistics, playingEpoch: engine.playingEpoch, room: room, outputLatency: outputLatency,
            committedAhead: max(outputLatency + AudioFormat.nanoseconds(forFrames: Int64(chunkFrames)), bufferLatency + room.outputDelay),
            deviceRatePPM: device.hasMeasuredRate ? device.rateOffsetPPM : nil, deviceOffsetPPM: device.rateOffsetPPM,
            deviceJumps: device.jumps)
    }

    /// Takes a snapshot every 10 renders (about 100 ms), and at once after a clock
    /// exchange: the room's reports are made of it, and the log lines.
    private func publish(force: Bool, now: Int64) {
        rendersToSnapshot -= 1
        guard force || rendersToSnapshot <= 0 else { return }
        rendersToSnapshot = 10
        let latest = snapshot()
        news.tell(latest, before: network.latest, now: now, unsealed: network.unsealed)
        network.latest = latest
    }
}
