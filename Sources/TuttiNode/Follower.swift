import Foundation
import Synchronization
import TuttiAudio
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiSecurity

/// A follower: locks its clock to the coordinator's, receives the stream, and plays each
/// sample at its presentation time through its output.
public final class Follower: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var coordinator = SocketAddress(address: 0x7F00_0001, port: 5005)
        /// The UDP port to receive RTP on (0: any free port, with --unicast).
        public var listenPort: UInt16 = 5004
        /// The multicast group to join, or nil to receive unicast only.
        public var multicastGroup: SocketAddress? = try? SocketAddress(host: "239.255.77.77", port: 5004)
        /// Ask the coordinator to send the stream by unicast.
        public var unicast = false
        /// The house latency this follower expects; sizes its jitter buffer.
        public var latencyMilliseconds = 150
        /// Extra delay of the device after PulseAudio (HDMI, Bluetooth), milliseconds, until
        /// the coordinator's room settings say otherwise.
        public var outputDelayMilliseconds = 0.0
        /// The room's name: its key on the coordinator.
        public var name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "room"
        /// Frames rendered per write to the output.
        public var chunkFrames = 480
        public var statusInterval: Double = 5
        /// This machine's copy of the house key (from pairing, or copied from the coordinator).
        public var houseKeyPath = StateStore.houseKeyPath(in: StateStore.defaultDirectory())
        /// The stream is sealed with SRTP (the coordinator's default); false only for a
        /// coordinator run with `--plain-rtp`.
        public var sealedStream = true
        /// Where this follower keeps its clock for its next run (a restart resumes it), or
        /// nil to lock afresh at every start.
        public var stateDirectory: String? = StateStore.defaultDirectory()
        public init() {}
    }

    public let configuration: Configuration
    private let clock = SystemClock()
    private let stopFlag = StopFlag()
    private let engine: SharedEngine
    private let rtpSocket: UDPSocket
    private let clockSocket: UDPSocket
    private let houseKey: HouseKey
    private let log = Log("follower")
    private let clockTrace = ClockTrace(path: ProcessInfo.processInfo.environment["TUTTI_CLOCK_TRACE"])
    /// Stream packets dropped as not sealed with the house key (or replayed).
    private let unsealed = Atomic<Int>(0)
    private let clockMemory: ClockMemoryKeeper?

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        houseKey = try StateStore.readHouseKey(path: configuration.houseKeyPath)
        var engineConfig = PlayoutEngine.Configuration()
        engineConfig.jitterCapacity = max(64, configuration.latencyMilliseconds * 4 / 10 + 64)
        engine = SharedEngine(PlayoutEngine(decoder: try OpusFrameDecoder(), configuration: engineConfig),
                              outputDelay: Int64(configuration.outputDelayMilliseconds * 1e6))
        rtpSocket = try UDPSocket()
        rtpSocket.setReceiveBuffer(bytes: 1 << 20)
        if let group = configuration.multicastGroup, !configuration.unicast {
            try rtpSocket.bind(SocketAddress(address: 0, port: group.port), reuse: true)
            try rtpSocket.joinMulticast(group: group)
        } else {
            try rtpSocket.bind(SocketAddress(address: 0, port: configuration.listenPort), reuse: false)
        }
        clockSocket = try UDPSocket()
        try clockSocket.bind(SocketAddress(address: 0, port: 0))
        clockSocket.enableReceiveTimestamps()
        let coordinator = "\(configuration.coordinator) \(houseKey.fingerprint)"
        clockMemory = configuration.stateDirectory.map {
            ClockMemoryKeeper(path: ClockMemory.path(in: $0, room: configuration.name), coordinator: coordinator)
        }
    }

    public func stop() { stopFlag.set() }

    /// Runs until `stop()`; plays through `output`.
    public func run(output: AudioOutput) throws {
        let unicastPort = configuration.unicast ? try rtpSocket.localAddress().port : nil
        let engine = self.engine
        let clockTrace = self.clockTrace
        let name = configuration.name
        let log = self.log
        let clockMemory = self.clockMemory
        let remembered = clockMemory?.recall(now: LocalTime(nanoseconds: clock.nanosecondsNow()))
        if let remembered { engine.withLock { $0.engine.resumeClock(from: remembered.estimate) } }
        let deviceName = output.name
        let handlers = ClockClient.Handlers(
            sample: { sample in
                let (lock, estimate, deviceRate, rejected) = engine.withLock { box in
                    let rejected = box.engine.clock.rememberedRejected
                    box.engine.addClockSample(sample)
                    clockTrace?.record(sample, box.engine.clockEstimate)
                    return (ClockLock(box.engine.clock), box.engine.clockEstimate, box.deviceRatePPM,
                            !rejected && box.engine.clock.rememberedRejected)
                }
                if rejected {
                    log.info("the clock of the last run disagrees with the coordinator's answers (the coordinator restarted, or "
                             + "its clock moved): locking afresh")
                }
                clockMemory?.keep(estimate, device: deviceName, deviceRatePPM: deviceRate, now: sample.t4.nanoseconds)
                return lock
            },
            settings: { version, volume, muted, delay in
                engine.withLock { box in
                    guard box.room.settingsVersion != version else { return }
                    box.room = RoomControl(settingsVersion: version, gain: RoomSettings.gain(volume: volume, muted: muted),
                                           outputDelay: Int64(delay) * 1_000, interrupted: box.room.interrupted)
                }
                log.info(String(format: "room settings %u: volume %.0f%%%@, output delay %.1f ms", version, volume * 100,
                                muted ? " (muted)" : "", Double(delay) / 1_000))
            },
            epochEnd: { epoch, at in engine.withLock { $0.engine.endEpoch(epoch, at: at) } },
            report: { engine.withLock { $0.report(name: name) } },
            retransmission: { bytes, at in engine.withLock { $0.engine.receiveRetransmission(bytes, at: LocalTime(nanoseconds: at)) } })
        let clientClock = ClockClient(socket: clockSocket, coordinator: configuration.coordinator, clock: clock,
                                      stopFlag: stopFlag, unicastPort: unicastPort, houseKey: houseKey,
                                      sealedStream: configuration.sealedStream, handlers: handlers)
        startThread("tutti-clock") { clientClock.run() }
        startThread("tutti-receive") { [self] in receiveLoop() }
        defer {
            stopFlag.set()
            let (estimate, deviceRate) = engine.withLock { ($0.engine.clockEstimate, $0.deviceRatePPM) }
            clockMemory?.keep(estimate, device: deviceName, deviceRatePPM: deviceRate, now: nil)
        }
        log.info("room '\(name)' following \(configuration.coordinator) \(configuration.unicast ? "by unicast on port \(unicastPort ?? 0)" : "on multicast \(configuration.multicastGroup?.description ?? "-")"); playing to \(output.name); clock port \((try? clockSocket.localAddress().port) ?? 0)")
        try playoutLoop(output, deviceRatePPM: remembered.flatMap { $0.device == deviceName ? $0.deviceRatePPM : nil })
    }

    /// Receives the stream, and asks for what it is missing (RFC 4585 generic NACKs to the
    /// coordinator's clock port, in as many copies as the path's loss calls for); it wakes
    /// when the next request is due.
    private func receiveLoop() {
        let ssrc = UInt32.random(in: 1...UInt32.max)  // this follower's, in its NACKs
        var due: LocalTime?
        // Opens the stream's packets and seals this follower's NACKs (SRTP, SRTCP).
        var srtp = configuration.sealedStream ? SRTPContext(houseKey.stream) : nil
        var reported = 0
        var nextSummary: Int64 = 0
        while !stopFlag.isSet {
            do {
                let wait = due.map { max(1, min(200, ($0.nanoseconds - clock.nanosecondsNow()) / 1_000_000 + 1)) } ?? 200
                var datagram = try rtpSocket.receive(timeoutMilliseconds: Int32(wait))
                if let sealed = datagram?.bytes, srtp != nil {
                    do {
                        datagram!.bytes = try srtp!.unprotectRTP(sealed)
                    } catch {
                        datagram = nil
                        if unsealed.add(1, ordering: .relaxed).newValue == 1 {
                            log.warning("a stream packet not sealed with the house key (\(error)): dropped (a stranger's, a replay, or "
                                        + "a coordinator run with --plain-rtp; such packets are counted every 10 s)")
                        }
                    }
                }
                let now = LocalTime(nanoseconds: clock.nanosecondsNow())
                if now.nanoseconds >= nextSummary {
                    nextSummary = now.nanoseconds + 10_000_000_000
                    let count = unsealed.load(ordering: .relaxed)
                    if count != reported {
                        log.info("stream in the last 10 s: \(count - reported) packets not sealed with the house key dropped")
                        reported = count
                    }
                }
                let request = engine.withLock { box in
                    if let datagram { box.engine.receive(datagram.bytes, at: LocalTime(nanoseconds: datagram.receivedAt)) }
                    defer { due = box.engine.nextRetransmissionRequest }
                    return box.engine.retransmissionRequests(at: now, outputLead: box.outputLatency > 0 ? box.outputLatency : 60_000_000)
                }
                // Outside the lock: the trace parses the packet again and writes a file.
                if let datagram { clockTrace?.recordStream(datagram.bytes, arrived: datagram.receivedAt) }
                if let request {
                    let nack = GenericNACK(senderSSRC: ssrc, mediaSSRC: request.ssrc, sequences: request.sequences).encode()
                    for _ in 0..<request.copies {
                        // Each copy its own SRTCP index: a copy of the same would be taken for a replay.
                        guard let wire = srtp == nil ? nack : try? srtp!.protectRTCP(nack) else { continue }
                        try? clockSocket.send(wire, to: configuration.coordinator)
                    }
                }
            } catch {
                log.error("receive: \(error)")
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// Renders and writes the stream to `output`; `deviceRatePPM` is the device's rate as an
    /// earlier run measured it, assumed until its own reports tell.
    private func playoutLoop(_ output: AudioOutput, deviceRatePPM: Double?) throws {
        var buffer: [Float] = []
        buffer.reserveCapacity(configuration.chunkFrames * 2)
        var nextStatus = clock.nanosecondsNow() + Int64(configuration.statusInterval * 1e9)
        var lastState = PlayoutEngine.State.acquiringClock
        var device = DeviceTimeline()
        if let deviceRatePPM { device.assumeRate(ppm: deviceRatePPM) }
        var gain = GainStage()
        var delay = Int64(configuration.outputDelayMilliseconds * 1e6)
        var interrupted = false
        let trace = TimingTrace(path: ProcessInfo.processInfo.environment["TUTTI_TRACE"])
        while !stopFlag.isSet {
            guard try output.awaitDemand(frames: configuration.chunkFrames, timeout: 200_000_000) else { continue }
            let now = clock.nanosecondsNow()
            let jumps = device.jumps
            let timing = output.takeTiming()
            if let timing { device.report(timing) }
            let written = output.framesWritten
            let heard = device.heardAt(frame: written)
            if output.interrupted != interrupted {
                interrupted.toggle()
                log.info(interrupted ? "interrupted: the sound server asked this stream to pause (another stream has priority)" : "interruption over")
            }
            buffer.removeAll(keepingCapacity: true)
            let state = engine.withLock { box in
                box.room.interrupted = interrupted
                if box.room.outputDelay != delay {
                    delay = box.room.outputDelay
                    box.engine.deviceTimelineChanged()
                }
                gain.target = interrupted ? 0 : box.room.gain
                if device.jumps != jumps { box.engine.deviceTimelineChanged() }
                box.engine.deviceRate = device.localPerFrame
                box.deviceRatePPM = device.hasMeasuredRate ? device.rateOffsetPPM : nil
                if let heard {
                    box.engine.render(frames: configuration.chunkFrames, heardAt: heard + delay, into: &buffer)
                    box.outputLatency = heard.nanoseconds + delay - now
                } else {
                    buffer.append(contentsOf: repeatElement(0, count: configuration.chunkFrames * 2))
                }
                trace?.record(now: now, timing: timing, written: written, heard: heard, engine: box.engine)
                return box.engine.state
            }
            gain.apply(to: &buffer)
            if state != lastState {
                log.info("state: \(state.rawValue)")
                lastState = state
            }
            try output.write(buffer)
            if now >= nextStatus {
                nextStatus = now + Int64(configuration.statusInterval * 1e9)
                let latency = heard.map { $0.nanoseconds - now } ?? 0
                log.info(status(latency: latency) + String(format: ", device %+.1f ppm, jumps %d", device.rateOffsetPPM, device.jumps))
            }
        }
    }

    /// A one-line summary of the clock, buffer and loss counters.
    public func status(latency: Int64) -> String {
        engine.withLock { box in
            let e = box.engine
            let s = e.statistics
            let clock = e.clockEstimate.map { "\($0)" } ?? "not locked"
            let r = e.requester.statistics
            return "clock: \(clock); device latency \(latency / 1_000_000) ms; timing \(String(format: "%+.1f", Double(s.lastError) / 1000)) µs, rate \(String(format: "%+.1f", (s.ratio - 1) * 1e6)) ppm; buffered \(s.buffered); received \(s.packetsReceived), missed \(r.missed), retransmitted \(s.retransmitted) (asked \(r.requested), \(r.joining) on joining), lost \(s.lost), fec \(s.recoveredByFEC), concealed \(s.concealedFrames) frames, late \(s.late), dropped \(s.malformed + s.foreign + s.absurd + s.duplicates), unsealed \(unsealed.load(ordering: .relaxed)), resyncs \(s.resyncs), steps \(s.steps), slews \(s.slews), outages \(s.outages)"
        }
    }
}

/// The playout engine and the room's control state behind a lock: the receive, clock and
/// playout threads share them.
final class SharedEngine: @unchecked Sendable {
    private let lock = NSLock()
    private let box: Box

    init(_ engine: PlayoutEngine, outputDelay: Int64) {
        box = Box(engine: engine, room: RoomControl(settingsVersion: 0, gain: 1, outputDelay: outputDelay, interrupted: false))
    }

    func withLock<T>(_ body: (Box) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(box)
    }

    final class Box {
        let engine: PlayoutEngine
        var room: RoomControl
        /// How far ahead of being heard the last frames were written (ns).
        var outputLatency: Int64 = 0
        /// The device's rate against the local clock, once measured (for the clock memory).
        var deviceRatePPM: Double?
        init(engine: PlayoutEngine, room: RoomControl) {
            self.engine = engine
            self.room = room
        }

        func report(name: String) -> RoomReport {
            let s = engine.statistics
            let e = engine.clockEstimate
            return RoomReport(
                name: name, state: engine.state, interrupted: room.interrupted,
                clockOffsetMicroseconds: Double(e?.offset ?? 0) / 1e3, clockUncertaintyMicroseconds: Double(e?.uncertainty ?? 0) / 1e3,
                roundTripMicroseconds: Double(e?.minimumRoundTrip ?? 0) / 1e3, bufferedPackets: s.buffered,
                outputLatencyMilliseconds: Double(outputLatency) / 1e6, packetsReceived: s.packetsReceived,
                packetsLost: s.lost, packetsRecovered: s.recoveredByFEC, framesConcealed: s.concealedFrames,
                packetsLate: s.late, timingErrorMicroseconds: Double(s.lastError) / 1e3,
                settingsVersion: room.settingsVersion, epoch: engine.playingEpoch,
                outputDelayMilliseconds: Double(room.outputDelay) / 1e6, packetsMissed: engine.requester.statistics.missed,
                packetsRetransmitted: s.retransmitted, steps: s.steps, slews: s.slews, outages: s.outages)
        }
    }
}

/// What the coordinator has set for this room, as applied here.
struct RoomControl {
    var settingsVersion: UInt32
    var gain: Float
    var outputDelay: Int64
    var interrupted: Bool
}
