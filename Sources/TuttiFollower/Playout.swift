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
    /// A calibration probe to mix in from `at`.
    case probe(CalibrationProbe, at: CoordinatorTime)
    /// The coordinator's settings for this room; `stream`: its zone's stream (nil: any).
    case settings(version: UInt32, gain: Float, outputDelay: Int64, stream: UInt32?)

    /// When it happened here (local ns): a packet's arrival, an exchange's end; nil for
    /// the coordinator's messages, which apply as soon as they are taken.
    var stamp: Int64? {
        switch self {
        case let .packet(_, arrived), let .retransmission(_, arrived): arrived.nanoseconds
        case let .clockSample(sample): sample.t4.nanoseconds
        case .epochEnd, .settings, .probe: nil
        }
    }
}

/// Where a playout's stream, clock and settings come from, and its room's news goes: the
/// house's two sockets (`FollowerNetwork`), or a Sendspin server's session
/// (`SendspinNetwork`). Used by the playout thread alone, between renders; nothing in it
/// waits.
protocol PlayoutNetwork: AnyObject {
    /// Sends what is due; returns the latest time to turn again.
    func turn(lock: ClockLock) -> Int64
    /// Hands on what came since the last call, in arrival order.
    func collect(_ apply: (PlayoutInput) -> Void)
    func reportSoon()
    /// A NACK as it goes to the coordinator (nil: none goes).
    func sealFeedback(_ nack: [UInt8]) -> [UInt8]?
    var zoneStream: UInt32? { get set }
    var otherZones: Int { get }
    var latest: PlayoutSnapshot { get set }
    var unsealed: Int { get }
    var untagged: Int { get }
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
    /// How far ahead of being heard the room decides its audio (ns): the device's own
    /// latency, its floor and a write (`DeviceFill`), or the latency plus a write as
    /// measured, whichever is more. A cut the room learns of later than this before it is
    /// due is heard late, so this is what the room reports, and what the house's command
    /// lead is made of.
    var committedAhead: Int64
    /// The device's rate against the local clock, once measured (ppm).
    var deviceRatePPM: Double?
    /// The device's rate as assumed or measured, and how often its timeline jumped.
    var deviceOffsetPPM: Double
    var deviceJumps: Int
    /// The device's margin against the playout's lateness (ns), and how often a write came
    /// close to it running dry.
    var floor: Int64
    var nearMisses: Int
    /// Times the device ran dry while the room played: holes the follower caused.
    var holes: Int
    /// The least lead a packet of the stream had when it came, over the last seconds (ns;
    /// negative: it came after its presentation time).
    var leastLead: Int64?
    /// The same of the retransmissions that made good a loss (`RetransmissionRequester.recoveries`).
    var leastRecoveryLead: Int64?

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
            packetsRetransmitted: s.retransmitted, steps: s.steps, slews: s.slews, outages: s.outages, holes: holes,
            concealments: s.concealments,
            // What the packets that came closest to their time had left once written ahead
            // (while the room plays: a device that is opening may claim a second's latency).
            headroomMilliseconds: headroom(leastLead), recoveryHeadroomMilliseconds: headroom(leastRecoveryLead))
    }

    /// What a lead had to spare once written ahead (ms), while the room plays.
    private func headroom(_ lead: Int64?) -> Double? {
        state == .playing ? lead.map { Double($0 - committedAhead) / 1e6 } : nil
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
            + "device \(deviceOffsetPPM.fixed(1, sign: true)) ppm, jumps \(deviceJumps); "
            + "floor \((Double(floor) / 1e6).fixed(1)) ms, near misses \(nearMisses), holes \(holes)"
            + (leastLead.map { lead in
                "; least lead \((Double(lead) / 1e6).fixed(1)) ms"
                    + (leastRecoveryLead.map { ", of retransmissions \((Double($0) / 1e6).fixed(1)) ms" } ?? "")
                    + ", written \((Double(committedAhead) / 1e6).fixed(1)) ms ahead"
            } ?? "")
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
/// timeline, the room's gain, and the sockets. It sleeps until its next write is due (a
/// floor before its device runs dry: `DeviceFill`), or until the control channel or a
/// retransmission request is due; at each wake it takes what the sockets received
/// meanwhile (without waiting), asks for what is missing, sends what the clock and the room
/// are due to send, and, when the write is due, renders the frames that keep the device
/// supplied until the next one and writes them. It shares nothing with another thread, so
/// it never waits on one; see docs/threads.md.
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
    private let network: any PlayoutNetwork
    private let news: PlayoutNews
    private var requests: Requests
    private let clock: any MonotonicClock
    private var room: RoomControl
    private var device = DeviceTimeline()
    private var fill: DeviceFill
    /// When the next write is due (local ns; `.min`: at once).
    private var writeDue: Int64 = .min
    /// Where the frames written so far run out, counted from the first write at the nominal
    /// rate: the device's dry point until its timeline has a report.
    private var provisionalDry: Int64?
    /// Whether the write now due was planned on the device's timeline (not on the guess).
    private var planMeasured = false
    /// The device's underruns as last seen, and those that fell while the room played.
    private var underrunsSeen = 0
    private var holes = 0
    /// When a write last found the device dry.
    private var lastDryWrite: Int64?
    /// The floor the room's reports last told of.
    private var floorReported: Int64 = 0
    private var gain = GainStage()
    private var outputLatency: Int64 = 0
    /// The output's latency once a write is made (its own, the floor and a write): the
    /// least the room reports committing to (a house that took the latency measured while
    /// the buffer filled gave a start too short a lead, and the rooms lost its first 10 to
    /// 15 ms).
    private var bufferLatency: Int64 = 0
    /// What is rendered for each write, kept between turns.
    private var buffer: [Float] = []
    /// Renders until the next snapshot.
    private var rendersToSnapshot = 0
    private let trace: TimingTrace?

    init(engine: PlayoutEngine, network: any PlayoutNetwork, news: PlayoutNews, requests: Requests, clock: any MonotonicClock,
         fill: DeviceFill.Configuration, committedLatency: Int64 = 0, outputDelay: Int64, timingWindow: Int64? = nil,
         settleOnRate: Bool = false, trace: TimingTrace?) {
        if timingWindow != nil || settleOnRate {
            var timeline = DeviceTimeline.Configuration()
            timeline.window = timingWindow ?? timeline.window
            timeline.settleOnRate = settleOnRate
            device = DeviceTimeline(configuration: timeline)
        }
        self.engine = engine
        self.network = network
        self.news = news
        self.requests = requests
        self.clock = clock
        self.fill = DeviceFill(configuration: fill)
        bufferLatency = committedLatency + self.fill.fillTarget
        floorReported = self.fill.floor
        buffer.reserveCapacity(Int(AudioFormat.frames(forNanoseconds: fill.floor + 2 * fill.period)) * 2)
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

    /// One turn of the loop: sends what the control channel is due to send, sleeps until the
    /// next write is due (or the control channel or a retransmission request is), takes
    /// what the sockets received, asks for what is missing, and, when the write is due,
    /// renders and writes what keeps the device supplied until the next one. Returns the
    /// local time by which it must turn again (a simulated house drives it so).
    @discardableResult
    func step(output: AudioOutput) throws -> Int64 {
        // It wakes for its writes; when the control channel is due to send (a time request
        // rides the writes' wakes where it can); and when a retransmission request is due (a
        // packet overdue, or a retry: a request sent late leaves its answer less time).
        let controlDue = network.turn(lock: engine.clockLock)
        let before = clock.nanosecondsNow()
        let requestDue = engine.nextRetransmissionRequest.map { max($0.nanoseconds, before + 1_000_000) } ?? .max
        let writing = output.interrupted ? Int64.max : writeDue
        try output.wait(until: max(before, min(before + 200_000_000, controlDue, requestDue, writing)))
        let now = clock.nanosecondsNow()
        let clockChanged = takeInputs()
        askForMissing(at: LocalTime(nanoseconds: now))
        if room.interrupted, !output.interrupted {
            // Back from an interruption: the server dropped what was queued and held the
            // stream's read index while it was paused, so its frames are heard on a timeline
            // of their own from now on, learnt afresh (its rate kept), and the first write
            // finds the device dry by design, not by lateness.
            device.restart()
            engine.deviceTimelineChanged()
            provisionalDry = nil
            planMeasured = false
        }
        room.interrupted = output.interrupted
        let later = min(before + 200_000_000, controlDue,
                        engine.nextRetransmissionRequest.map { max($0.nanoseconds, now + 1_000_000) } ?? .max)
        guard now >= writeDue, !room.interrupted else {
            publish(force: clockChanged, now: now)
            return min(later, room.interrupted ? .max : writeDue)
        }
        try write(to: output, now: now)
        publish(force: clockChanged, now: now)
        return min(later, writeDue)
    }

    /// How far a fresh timing report may lie from the device's line before the fill is
    /// planned from it (the line's scatter is tens of microseconds; a device that stalled or
    /// moved is tens or hundreds of milliseconds off).
    static let reportOverLine: Int64 = 20_000_000

    /// The write: the device's timing first (where it runs dry), then as many frames as
    /// keep it supplied until the next write, rendered for the instant each is heard.
    private func write(to output: AudioOutput, now: Int64) throws {
        let jumps = device.jumps
        let timing = output.takeTiming()
        if let timing { device.report(timing) }
        let written = output.framesWritten
        let heard = device.heardAt(frame: written)
        gain.target = room.interrupted ? 0 : room.gain
        if device.jumps != jumps { engine.deviceTimelineChanged() }
        engine.deviceRate = device.localPerFrame
        engine.deviceSettled = device.isSettled
        let committed = output.committedLatency
        let frameTime = 1e9 / Double(AudioFormat.sampleRate) * device.localPerFrame
        var dryAt = heard.map { $0.nanoseconds - committed } ?? provisionalDry
        var judged = planMeasured && heard != nil
        // The device's own word on how full it is, when its line does not follow it yet (it
        // stalled or moved, and the line jumps only after several reports): the fill is
        // planned from it meanwhile. Planned from a line 440 ms off, an ALSA room wrote half a
        // second at a time into a 200 ms buffer, blocked on it for as long, and so reported
        // only every 600 ms: 3 s until the line jumped, with the room silent.
        if let timing, let planned = dryAt {
            let reported = timing.heardAt.nanoseconds + Int64((Double(written - timing.frame) * frameTime).rounded()) - committed
            if abs(reported - planned) > Self.reportOverLine {
                dryAt = reported
                judged = false
            }
        }
        let (frames, event) = fill.write(at: now, dryAt: dryAt, judged: judged, frameTime: frameTime)
        planMeasured = heard != nil
        noteUnderruns(output, found: event, now: now)
        let grew = fill.floor != floorReported
        buffer.removeAll(keepingCapacity: true)
        if let heard {
            engine.render(frames: frames, heardAt: heard + room.outputDelay, into: &buffer)
            outputLatency = heard.nanoseconds + room.outputDelay - now
        } else {
            buffer.append(contentsOf: repeatElement(0, count: frames * 2))
        }
        trace?.record(now: now, timing: timing, written: written, heard: heard, engine: engine)
        gain.apply(to: &buffer)
        try output.write(buffer)
        let duration = Int64((Double(frames) * frameTime).rounded())
        provisionalDry = max(provisionalDry ?? now, now) + duration
        // Frames keep their places on a device found dry (what was due meanwhile was
        // dropped), so it now runs dry where the fill put it.
        writeDue = fill.writeDue(dryAt: (dryAt ?? now) + duration)
        bufferLatency = committed + fill.fillTarget
        if grew {
            // The room now decides its audio further ahead: the house's command lead must
            // count it from the next command on, not a report later.
            floorReported = fill.floor
            publish(force: true, now: now)
            network.reportSoon()
        }
    }

    /// Counts the device's underruns since the last write that fell while the room played
    /// (holes), and grows the floor where the writes' own margin did not see them coming (a
    /// device says so when it runs dry, or when the late write reaches it: an underrun within
    /// two periods of a write that found the device dry is that one).
    private func noteUnderruns(_ output: AudioOutput, found event: DeviceFill.Event?, now: Int64) {
        if case .ranDry = event { lastDryWrite = now }
        let underruns = output.underruns
        guard underruns != underrunsSeen else { return }
        if engine.state == .playing { holes += underruns - underrunsSeen }
        underrunsSeen = underruns
        if let seen = lastDryWrite, now - seen <= 2 * fill.configuration.period { return }
        fill.deviceRanDry()
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
        case let .probe(probe, at): engine.schedule(probe, at: at)
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
        let coordinatorNow = engine.clockEstimate?.coordinatorTime(at: LocalTime(nanoseconds: clock.nanosecondsNow())).nanoseconds
        return PlayoutSnapshot(
            state: engine.state, estimate: engine.clockEstimate, lock: engine.clockLock,
            rememberedRejected: engine.clock.rememberedRejected, statistics: statistics,
            requests: engine.requester.statistics, playingEpoch: engine.playingEpoch, room: room, outputLatency: outputLatency,
            committedAhead: max(outputLatency + fill.configuration.period, bufferLatency + room.outputDelay),
            deviceRatePPM: device.hasMeasuredRate ? device.rateOffsetPPM : nil, deviceOffsetPPM: device.rateOffsetPPM,
            deviceJumps: device.jumps, floor: fill.floor, nearMisses: fill.nearMisses, holes: holes,
            leastLead: coordinatorNow.flatMap { engine.leads.least(now: $0) },
            leastRecoveryLead: coordinatorNow.flatMap { engine.requester.recoveries.least(now: $0) })
    }

    /// Takes a snapshot every 10 renders (about 100 ms), and at once after a clock
    /// exchange: the room's reports are made of it, and the log lines.
    private func publish(force: Bool, now: Int64) {
        rendersToSnapshot -= 1
        guard force || rendersToSnapshot <= 0 else { return }
        rendersToSnapshot = 10
        let latest = snapshot()
        news.tell(latest, before: network.latest, now: now, unsealed: network.unsealed, untagged: network.untagged)
        network.latest = latest
    }
}
