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
        public var name = System.hostName().split(separator: ".").first.map(String.init) ?? "room"
        /// Frames rendered per write to the output.
        public var chunkFrames = 480
        public var statusInterval: Double = 5
        /// This machine's copy of the house key (from pairing, or copied from the coordinator).
        public var houseKeyPath = StateFolder.houseKeyPath(in: StateFolder.path())
        /// The stream is sealed with SRTP (the coordinator's default); false only for a
        /// coordinator run with `--plain-rtp`.
        public var sealedStream = true
        /// Where this follower keeps its clock for its next run (a restart resumes it), or
        /// nil to lock afresh at every start.
        public var stateDirectory: String? = StateFolder.path()
        public init() {}
    }

    public let configuration: Configuration
    private let clock = SystemClock()
    private let stopFlag = StopFlag()
    private let engine: PlayoutEngine
    private let rtpSocket: UDPSocket
    private let clockSocket: UDPSocket
    private let houseKey: HouseKey
    private let log = Log("follower")
    private let clockTrace = ClockTrace(path: System.environment("TUTTI_CLOCK_TRACE"))
    /// Stream packets dropped as not sealed with the house key (or replayed).
    private let unsealed = Atomic<Int>(0)
    /// Inputs dropped because the playout thread had not taken the earlier ones yet.
    private let overflow = Atomic<Int>(0)
    private let clockMemory: ClockMemoryKeeper?
    /// The receive thread's packets, and the clock thread's news, for the playout thread.
    private let streamInbox = SPSCQueue<PlayoutInput>(capacity: 1024)
    private let clockInbox = SPSCQueue<PlayoutInput>(capacity: 256)
    /// The playout thread's snapshots, for the clock thread.
    private let snapshots = SPSCQueue<PlayoutSnapshot>(capacity: 16)

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        houseKey = try StateFolder.readHouseKey(path: configuration.houseKeyPath)
        var engineConfig = PlayoutEngine.Configuration()
        engineConfig.jitterCapacity = max(64, configuration.latencyMilliseconds * 4 / 10 + 64)
        engine = PlayoutEngine(decoder: try OpusFrameDecoder(), configuration: engineConfig)
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

    /// Runs until `stop()`; plays through `output` on the calling thread (the playout
    /// thread), with a receive thread and a clock thread beside it.
    ///
    /// The playout thread owns the playout engine. The other two hand it what they receive
    /// through lock-free queues and read back its snapshots; see docs/threads.md.
    public func run(output: AudioOutput) throws {
        let unicastPort = configuration.unicast ? try rtpSocket.localAddress().port : nil
        let remembered = clockMemory?.recall(now: LocalTime(nanoseconds: clock.nanosecondsNow()))
        if let remembered { engine.resumeClock(from: remembered.estimate) }
        let playout = Playout(
            engine: engine, inbox: Playout.Inbox(stream: streamInbox, clock: clockInbox), outbox: snapshots,
            requests: Playout.Requests(socket: clockSocket, coordinator: configuration.coordinator,
                                       sealer: configuration.sealedStream ? SRTPContext(houseKey.stream) : nil),
            clock: clock, chunkFrames: configuration.chunkFrames, outputDelay: Int64(configuration.outputDelayMilliseconds * 1e6),
            trace: TimingTrace(path: System.environment("TUTTI_TRACE")))
        if let remembered, remembered.device == output.name, let ppm = remembered.deviceRatePPM { playout.assumeDeviceRate(ppm: ppm) }
        let clientClock = ClockClient(socket: clockSocket, coordinator: configuration.coordinator, clock: clock,
                                      stopFlag: stopFlag, unicastPort: unicastPort, houseKey: houseKey,
                                      sealedStream: configuration.sealedStream, handlers: clockHandlers(deviceName: output.name))
        startThread("tutti-clock") { clientClock.run() }
        startThread("tutti-receive") { [self] in receiveLoop() }
        defer {
            stopFlag.set()
            let last = playout.snapshot()
            clockMemory?.keep(last.estimate, device: output.name, deviceRatePPM: last.deviceRatePPM, now: nil)
        }
        log.info("room '\(configuration.name)' following \(configuration.coordinator) \(configuration.unicast ? "by unicast on port \(unicastPort ?? 0)" : "on multicast \(configuration.multicastGroup?.description ?? "-")"); playing to \(output.name); clock port \((try? clockSocket.localAddress().port) ?? 0)")
        try playout.run(output: output, stop: stopFlag)
    }

    /// Hands something to the playout thread; counts it when the thread has no room for it.
    private func hand(_ input: PlayoutInput, to inbox: SPSCQueue<PlayoutInput>) {
        if !inbox.push(input) { overflow.add(1, ordering: .relaxed) }
    }

    /// The clock thread's side: what the clock client receives goes to the playout thread;
    /// what the playout thread publishes becomes the room's reports, the pace of the
    /// exchanges, the kept clock and the log lines.
    private func clockHandlers(deviceName: String) -> ClockClient.Handlers {
        let news = PlayoutNews(log: log, name: configuration.name, statusInterval: Int64(configuration.statusInterval * 1e9))
        let clockInbox = self.clockInbox, snapshots = self.snapshots, clockMemory = self.clockMemory, clock = self.clock
        let clockTrace = self.clockTrace, log = self.log
        let hand: @Sendable (PlayoutInput) -> Void = { [self] in self.hand($0, to: clockInbox) }
        let idle: @Sendable () -> Void = { [self] in
            guard let last = news.take(snapshots, now: clock.nanosecondsNow(), unsealed: unsealed.load(ordering: .relaxed),
                                       overflow: overflow.load(ordering: .relaxed)) else { return }
            clockMemory?.keep(last.estimate, device: deviceName, deviceRatePPM: last.deviceRatePPM, now: clock.nanosecondsNow())
        }
        return ClockClient.Handlers(
            sample: { sample in
                hand(.clockSample(sample))
                // The estimate as the playout thread last published it (before this exchange).
                let last = news.latest
                clockTrace?.record(sample, last?.estimate)
                return last?.lock ?? ClockLock(uncertainty: nil, suspect: false)
            },
            settings: { version, volume, muted, delay in
                hand(.settings(version: version, gain: RoomSettings.gain(volume: volume, muted: muted), outputDelay: Int64(delay) * 1_000))
                log.info("room settings \(version): volume \((volume * 100).fixed(0))%\(muted ? " (muted)" : ""), "
                         + "output delay \((Double(delay) / 1_000).fixed(1)) ms")
            },
            epochEnd: { epoch, at in hand(.epochEnd(epoch, at: at)) },
            report: { [name = configuration.name] in
                idle()
                return news.latest?.report(name: name) ?? PlayoutSnapshot.starting.report(name: name)
            },
            retransmission: { bytes, at in hand(.retransmission(bytes, arrived: LocalTime(nanoseconds: at))) },
            idle: idle)
    }

    /// Receives the stream, opens it, and hands each packet to the playout thread with the
    /// kernel's arrival stamp. It sleeps in `recvmsg` on the socket (one call per packet).
    private func receiveLoop() {
        // Opens the stream's packets (SRTP).
        var srtp = configuration.sealedStream ? SRTPContext(houseKey.stream) : nil
        var reported = 0
        var nextSummary: Int64 = 0
        while !stopFlag.isSet {
            do {
                guard var datagram = try rtpSocket.receiveBlocking(timeoutMilliseconds: 250) else { continue }
                if srtp != nil {
                    do {
                        datagram.bytes = try srtp!.unprotectRTP(datagram.bytes)
                    } catch {
                        if unsealed.add(1, ordering: .relaxed).newValue == 1 {
                            log.warning("a stream packet not sealed with the house key (\(error)): dropped (a stranger's, a replay, or "
                                        + "a coordinator run with --plain-rtp; such packets are counted every 10 s)")
                        }
                        continue
                    }
                }
                hand(.packet(datagram.bytes, arrived: LocalTime(nanoseconds: datagram.receivedAt)), to: streamInbox)
                clockTrace?.recordStream(datagram.bytes, arrived: datagram.receivedAt)
                if datagram.receivedAt >= nextSummary {
                    nextSummary = datagram.receivedAt + 10_000_000_000
                    let count = unsealed.load(ordering: .relaxed)
                    if count != reported {
                        log.info("stream in the last 10 s: \(count - reported) packets not sealed with the house key dropped")
                        reported = count
                    }
                }
            } catch {
                log.error("receive: \(error)")
                System.sleep(nanoseconds: 100_000_000)
            }
        }
    }
}

/// The clock thread's view of the playout thread: it takes the snapshots, keeps the
/// latest, and logs what changed (the room's state, an interruption, a disproved clock
/// memory) and, every status interval, the status line.
final class PlayoutNews: Sendable {
    private struct Seen {
        var latest: PlayoutSnapshot?
        var nextStatus: Int64 = 0
    }

    private let seen = Mutex(Seen())
    private let log: Log
    private let name: String
    private let statusInterval: Int64

    init(log: Log, name: String, statusInterval: Int64) {
        self.log = log
        self.name = name
        self.statusInterval = statusInterval
    }

    var latest: PlayoutSnapshot? { seen.withLock { $0.latest } }

    /// Takes the snapshots published since the last call (from the clock thread only: the
    /// queue has one consumer); returns the newest, if there was one.
    func take(_ snapshots: SPSCQueue<PlayoutSnapshot>, now: Int64, unsealed: Int, overflow: Int) -> PlayoutSnapshot? {
        var newest: PlayoutSnapshot?
        snapshots.drain { snapshot in
            let before = latest ?? .starting
            if snapshot.state != before.state { log.info("state: \(snapshot.state.rawValue)") }
            if snapshot.room.interrupted != before.room.interrupted {
                log.info(snapshot.room.interrupted ? "interrupted: the sound server asked this stream to pause (another stream has priority)"
                                                   : "interruption over")
            }
            if snapshot.rememberedRejected, !before.rememberedRejected {
                log.info("the clock of the last run disagrees with the coordinator's answers (the coordinator restarted, or "
                         + "its clock moved): locking afresh")
            }
            seen.withLock { $0.latest = snapshot }
            newest = snapshot
        }
        let status = seen.withLock { s -> PlayoutSnapshot? in
            guard now >= s.nextStatus, let latest = s.latest else { return nil }
            let first = s.nextStatus == 0
            s.nextStatus = now + statusInterval
            return first ? nil : latest
        }
        if let status { log.info(status.statusLine(unsealed: unsealed, overflow: overflow)) }
        return newest
    }
}

extension PlayoutSnapshot {
    /// Before the playout thread has published anything.
    static let starting = PlayoutSnapshot(
        state: .acquiringClock, estimate: nil, lock: ClockLock(uncertainty: nil, suspect: false), rememberedRejected: false,
        statistics: PlayoutStatistics(), requests: RetransmissionRequester.Statistics(), playingEpoch: nil,
        room: RoomControl(settingsVersion: 0, gain: 1, outputDelay: 0, interrupted: false), outputLatency: 0, committedAhead: 0,
        deviceRatePPM: nil, deviceOffsetPPM: 0, deviceJumps: 0)
}
