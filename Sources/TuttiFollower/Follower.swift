import TuttiAudio
import TuttiCodecs
import TuttiCore
import TuttiMetrics
import TuttiNet
import TuttiSecurity
import TuttiSendspin

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
        /// How full the output is kept: the audio written at a time, and the margin kept
        /// against the playout's own lateness (`DeviceFill`).
        public var fill = DeviceFill.Configuration()
        /// Seconds between status lines (verbose) or checks for trouble (quiet).
        public var statusInterval: Double = 5
        /// The technical status line every interval; otherwise only changes and trouble.
        public var verbose = false
        /// This machine's copy of the house key (from pairing, or copied from the coordinator).
        public var houseKeyPath = StateFolder.houseKeyPath(in: StateFolder.path())
        /// The stream is sealed with SRTP (the coordinator's default); false only for a
        /// coordinator run with `--plain-rtp`.
        public var sealedStream = true
        /// Where this follower keeps its clock for its next run (a restart resumes it), or
        /// nil to lock afresh at every start.
        public var stateDirectory: String? = StateFolder.path()
        /// Where to serve Prometheus metrics (`/metrics`), or nil for nowhere.
        public var metricsListen: SocketAddress?
        /// Ask to run the playout thread ahead of ordinary processes (`System.raisePriority`).
        public var raisePriority = true
        /// Play from this Sendspin server instead of a tutti coordinator (`SendspinNetwork`).
        public var sendspin: BlockingWebSocket.Address?
        /// The codec asked of the Sendspin server: `pcm` or `opus`.
        public var sendspinCodec = "pcm"
        public init() {}
    }

    public let configuration: Configuration
    private let clock: any MonotonicClock
    private let stopFlag = StopFlag()
    let engine: PlayoutEngine
    private let rtpSocket: any DatagramSocket
    /// By unicast: asked for, or because this host could not join the multicast group.
    private let byUnicast: Bool
    private let clockSocket: any DatagramSocket
    /// The house key, and this member's own credential (it enrols when it has none).
    private let membership: ClockClient.Membership
    private let log = Log("follower")
    private let clockTrace = ClockTrace(path: System.environment("TUTTI_CLOCK_TRACE"))
    private let clockMemory: ClockMemoryKeeper?
    /// With `--sendspin`: the session the playout plays from.
    private var sendspinNetwork: SendspinNetwork?

    /// A follower on this host: its house key from its file, Opus, UDP sockets, and the clock
    /// the program keeps time by (its outputs' too).
    public convenience init(configuration: Configuration, clock: any MonotonicClock) throws {
        var engineConfig = PlayoutEngine.Configuration()
        // Stored audio comes up to the coordinator's lookahead ahead (at most 5 s: 250
        // packets of Opus's 20 ms, 1,250 of a lossless zone's 4 ms); only what comes takes memory.
        engineConfig.jitterCapacity = max(1_536, configuration.latencyMilliseconds / 4 + 64)
        if configuration.sendspin != nil {
            // A Sendspin server's PCM, as packets of its own (a server sends up to about 5 s ahead).
            let engine = PlayoutEngine(decoder: PCMFrameDecoder(), configuration: engineConfig)
            let idle = try UDPSocket()
            try idle.bind(SocketAddress(address: 0x7F00_0001, port: 0))
            self.init(configuration: configuration, membership: ClockClient.Membership(houseKey: HouseKey.generate(), member: nil,
                                                                                      name: configuration.name, keyPath: nil),
                      engine: engine, clock: clock, stream: idle, byUnicast: true, control: idle, remembers: false)
            return
        }
        let engine = PlayoutEngine(decoders: try streamDecoders(), configuration: engineConfig)
        let (stream, byUnicast) = try Self.streamSocket(configuration)
        let control = try UDPSocket()
        try control.bind(SocketAddress(address: 0, port: 0))
        let houseKey = try StateFolder.readHouseKey(path: configuration.houseKeyPath)
        let keyPath = configuration.stateDirectory.map {
            StateFolder.memberKeyPath(in: $0, name: configuration.name, house: houseKey.fingerprint)
        }
        let kept = try configuration.stateDirectory.map { folder throws(HouseKeyFileError) in
            try StateFolder.readMemberKey(in: folder, name: configuration.name, house: houseKey.fingerprint)
        }
        var membership = ClockClient.Membership(houseKey: houseKey, member: kept?.key, name: configuration.name, keyPath: keyPath)
        membership.trying = kept?.legacy
        self.init(configuration: configuration, membership: membership, engine: engine,
                      clock: clock, stream: stream, byUnicast: byUnicast, control: control)
    }

    /// A follower on the parts it is given: the tests' simulated house runs it over an
    /// in-memory network, on a manual clock, with a decoder of its own.
    init(configuration: Configuration, membership: ClockClient.Membership, engine: PlayoutEngine, clock: any MonotonicClock,
         stream: any DatagramSocket, byUnicast: Bool, control: any DatagramSocket, remembers: Bool = true) {
        self.configuration = configuration
        self.membership = membership
        self.engine = engine
        self.clock = clock
        rtpSocket = stream
        self.byUnicast = byUnicast
        clockSocket = control
        let coordinator = "\(configuration.coordinator) \(membership.houseKey.fingerprint)"
        clockMemory = !remembers ? nil : configuration.stateDirectory.map {
            ClockMemoryKeeper(path: ClockMemory.path(in: $0, room: configuration.name), coordinator: coordinator)
        }
    }

    /// The stream's socket: on the multicast group, else (asked for, or no multicast route)
    /// on the unicast port; and whether it is unicast.
    private static func streamSocket(_ configuration: Configuration) throws -> (UDPSocket, Bool) {
        let log = Log("follower")
        var socket = try UDPSocket()
        var unicast = configuration.unicast || configuration.multicastGroup == nil
        if let group = configuration.multicastGroup, !unicast {
            do {
                try socket.bind(SocketAddress(address: 0, port: group.port), reuse: true)
                try socket.joinMulticast(group: group)
            } catch {
                // No multicast route (a host with no default route, a link without
                // multicast): the stream can still come by unicast.
                log.warning("cannot receive multicast (\(error)): asking the coordinator for the stream by unicast instead")
                socket = try UDPSocket()
                unicast = true
            }
        }
        if unicast { try socket.bind(SocketAddress(address: 0, port: configuration.listenPort), reuse: false) }
        socket.setReceiveBuffer(bytes: 1 << 20)
        return (socket, unicast)
    }

    public func stop() { stopFlag.set() }

    /// Runs until `stop()`: plays through `output` on the calling thread, the follower's only
    /// thread (its playout thread). Between renders it takes what its two sockets received
    /// meanwhile and sends what its clock and room are due to send; see docs/threads.md.
    public func run(output: AudioOutput) throws {
        var listener: TextListener?
        var metrics: FollowerMetrics?
        if let address = configuration.metricsListen {
            metrics = FollowerMetrics()
            listener = try TextListener(address: address) { path in
                path == "/metrics" ? .init(contentType: HouseMetrics.contentType, body: HouseMetrics.exposition()) : nil
            }
            listener?.start(name: "tutti-metrics")
            log.info("metrics at http://\(address.host):\(listener?.port ?? 0)/metrics")
        }
        defer { listener?.stop() }
        let playout = try prepare(output: output, metrics: metrics)
        defer {
            stopFlag.set()
            let last = playout.snapshot()
            clockMemory?.keep(last.estimate, device: output.name, deviceRatePPM: last.deviceRatePPM, now: nil)
        }
        if let sendspin = configuration.sendspin {
            log.info("room '\(configuration.name)' playing from the Sendspin server \(sendspin); playing to \(output.name)")
        } else {
            log.info("room '\(configuration.name)' following \(configuration.coordinator) \(byUnicast ? "by unicast on port \((try? rtpSocket.localAddress().port) ?? 0)" : "on multicast \(configuration.multicastGroup?.description ?? "-")"); playing to \(output.name); clock port \((try? clockSocket.localAddress().port) ?? 0)")
        }
        if configuration.raisePriority { tellPriority(System.raisePriority()) }
        defer { sendspinNetwork?.stop() }
        try playout.run(output: output, stop: stopFlag)
    }

    /// The follower's loop, ready to turn (`Playout.step`), on `output`: its clock resumed
    /// from its memory, its sockets and the room's news.
    func prepare(output: AudioOutput, metrics: FollowerMetrics? = nil) throws -> Playout {
        let unicastPort = byUnicast ? try rtpSocket.localAddress().port : nil
        let remembered = clockMemory?.recall(now: LocalTime(nanoseconds: clock.nanosecondsNow()))
        if let remembered { engine.resumeClock(from: remembered.estimate) }
        let network: any PlayoutNetwork
        if let sendspin = configuration.sendspin {
            let player = SendspinNetwork(address: sendspin, codec: configuration.sendspinCodec, folder: configuration.stateDirectory,
                                         name: configuration.name,
                                         identity: SendspinPlayerIdentity.load(folder: configuration.stateDirectory, room: configuration.name),
                                         outputDelay: Int64(configuration.outputDelayMilliseconds * 1e6), clock: clock)
            sendspinNetwork = player
            network = player
        } else {
            network = FollowerNetwork(
                stream: rtpSocket, sealedStream: configuration.sealedStream, membership: membership, controlSocket: clockSocket,
                coordinator: configuration.coordinator, clock: clock, unicastPort: unicastPort, roomName: configuration.name,
                trace: clockTrace)
        }
        let news = PlayoutNews(log: log, statusInterval: Int64(configuration.statusInterval * 1e9),
                               verbose: configuration.verbose, metrics: metrics) { [clockMemory, clock, device = output.name] last in
            // A file written once a minute: on a thread of its own, never the playout's.
            guard let clockMemory else { return }
            startThread("tutti-keep") {
                clockMemory.keep(last.estimate, device: device, deviceRatePPM: last.deviceRatePPM, now: clock.nanosecondsNow())
            }
        }
        let playout = Playout(
            engine: engine, network: network, news: news,
            requests: Playout.Requests(socket: clockSocket, coordinator: configuration.coordinator),
            clock: clock, fill: Self.fill(configuration, committed: output.committedLatency), committedLatency: output.committedLatency,
            outputDelay: Int64(configuration.outputDelayMilliseconds * 1e6), timingWindow: output.timingWindow,
            settleOnRate: output.reportsTellRate, trace: TimingTrace(path: System.environment("TUTTI_TRACE")))
        if let remembered, remembered.device == output.name, let ppm = remembered.deviceRatePPM { playout.assumeDeviceRate(ppm: ppm) }
        return playout
    }
}

extension Follower {
    /// Says how the playout thread is scheduled: a thread that may be woken late keeps a
    /// wider margin when it is (`DeviceFill`), and a house's latency limits that margin.
    func tellPriority(_ scheduling: System.Scheduling) {
        switch scheduling {
        case let .realtime(priority):
            log.info("the playout thread runs at real-time priority \(priority) (round robin): it is woken on time however busy this machine is")
        case let .raised(nice):
            log.info("the playout thread runs at niceness \(nice) (real-time priority was not permitted: LimitRTPRIO= in its unit permits it)")
        case let .unchanged(reason):
            log.info("the playout thread runs at ordinary priority (\(reason)): on a busy machine it may be woken late, and then "
                     + "keeps a wider margin; LimitRTPRIO= (or LimitNICE=) in its unit lets it run ahead of ordinary processes")
        }
    }

    /// Room the house's latency leaves a live stream's packets to arrive in, beyond what the
    /// room decides ahead of hearing.
    static let networkReserve: Int64 = 10_000_000

    /// How full the room keeps its device: as configured, its floor growing no further than
    /// the house's latency allows (a room that decides its audio further ahead than a live
    /// stream's packets come would render them before they arrive, and conceal them).
    static func fill(_ configuration: Configuration, committed: Int64) -> DeviceFill.Configuration {
        var fill = configuration.fill
        let latency = Int64(configuration.latencyMilliseconds) * 1_000_000
        fill.ceiling = max(fill.floor, min(fill.ceiling, latency - committed - fill.period - networkReserve))
        return fill
    }
}

/// The follower's two sockets, used by its playout thread between renders: the stream
/// (opened with SRTP, each packet with the kernel's arrival stamp) and the house's control
/// channel (`ClockClient`: time exchanges, the room's reports, settings, epoch ends and
/// retransmissions). Nothing waits on them: both are read only for what already arrived,
/// and the kernel's stamps say when it did, so a packet read 20 ms after it came is placed
/// exactly as one read at once. Sends never wait either (a full buffer drops the datagram).
final class FollowerNetwork: PlayoutNetwork {
    private var stream: any DatagramSocket
    private let clock: any MonotonicClock
    /// Makes the stream's own socket when multicast does not come (bound to any port).
    private let makeUnicastSocket: () throws -> any DatagramSocket
    /// On multicast: whether the stream reaches this host (else it asks for unicast).
    private var multicastWatch: MulticastWatch?
    private var heardStream = false
    /// The stream's keys (the generation in use, and a newer one handed out ahead), when sealed.
    private var srtp: StreamKeys?
    private var control: ClockClient!
    private let trace: ClockTrace?
    private let log = Log("follower")
    /// What each socket handed on since the last `collect`, in arrival order.
    private var fromControl: [PlayoutInput] = []
    /// The last calibration probe logged (its seed and start).
    private var lastProbe: (UInt32, Int64)?
    private var fromStream: [PlayoutInput] = []
    /// The stream's datagrams are received into the storage of those of 64 packets before
    /// (1.3 s of 20 ms packets, more than a jitter buffer holds): no allocation per packet.
    private var streamStorage = RecycledStorage(count: 64)
    /// The playout's last snapshot: the room's reports are made of it.
    var latest = PlayoutSnapshot.starting
    /// Stream packets dropped as not sealed with the house key (or replayed), or as made by
    /// another member (this member's tag false).
    private(set) var unsealed = 0
    /// Stream packets that open with the stream's key but carry no tag for this member: sent
    /// before the coordinator knew this room plays the stream, or made by another member.
    private(set) var untagged = 0
    private var reportedUntagged = 0
    /// The stream of the room's zone, once the coordinator names one: other zones' packets
    /// are dropped before they are opened (their SSRC is in the clear), and counted.
    var zoneStream: UInt32? {
        didSet {
            ownHeard = nil
            othersOnly = false
        }
    }
    private(set) var otherZones = 0
    /// When a packet of the zone's stream last came; whether only other zones' streams
    /// come since (for 300 ms: the zone's stream may be new, the coordinator restarted).
    private var ownHeard: Int64?
    private var othersOnly = false
    private var reportedUnsealed = 0
    private var nextSummary: Int64 = 0
    /// When the room last reported early, hearing other zones' streams only.
    private var lastNudge: Int64 = .min / 2

    init(stream: any DatagramSocket, sealedStream: Bool, membership: ClockClient.Membership, controlSocket: any DatagramSocket,
         coordinator: SocketAddress,
         clock: any MonotonicClock, unicastPort: UInt16?, roomName: String, trace: ClockTrace?,
         makeUnicastSocket: @escaping () throws -> any DatagramSocket = FollowerNetwork.unicastSocket) {
        self.stream = stream
        self.clock = clock
        self.makeUnicastSocket = makeUnicastSocket
        multicastWatch = unicastPort == nil ? MulticastWatch() : nil
        // Both sockets are read up to a device period (20 ms) after their datagrams came:
        // only the kernel's stamps say when they came (the clock's exchanges, the stream's
        // trips for the estimator, the jitter buffer's arrivals and its retransmission
        // deadlines).
        if !(stream.enableReceiveTimestamps() && controlSocket.enableReceiveTimestamps()) {
            log.warning("this kernel does not stamp arriving datagrams (SO_TIMESTAMPNS_NEW, Linux 5.1): "
                        + "arrival times are read up to a device period late, and the clock is less precise")
        }
        srtp = sealedStream ? StreamKeys(membership.houseKey.stream, member: membership.member) : nil
        self.trace = trace
        let handlers = ClockClient.Handlers(
            sample: { [unowned self] sample in
                // With the estimate as it stood before this exchange (the playout takes it next).
                trace?.record(sample, latest.estimate)
                fromControl.append(.clockSample(sample))
            },
            settings: { [unowned self] version, volume, muted, delay, stream in
                fromControl.append(.settings(version: version, gain: RoomSettings.gain(volume: volume, muted: muted),
                                             outputDelay: Int64(delay) * 1_000, stream: stream == 0 ? nil : stream))
                log.info("room settings \(version): volume \((volume * 100).fixed(0))%\(muted ? " (muted)" : ""), "
                         + "output delay \((Double(delay) / 1_000).fixed(1)) ms"
                         + (stream == 0 ? "" : ", the zone's stream \(stream.hex(digits: 8))"))
            },
            epochEnd: { [unowned self] epoch, at in fromControl.append(.epochEnd(epoch, at: at)) },
            report: { [unowned self] in latest.report(name: roomName) },
            retransmission: { [unowned self] bytes, arrived in fromControl.append(.retransmission(bytes, arrived: arrived)) },
            streamKey: { [unowned self] key, generation in srtp?.take(key, generation: generation) },
            enrolled: { [unowned self] member in srtp?.enrolled(member) },
            probe: { [unowned self] probe, at in
                fromControl.append(.probe(probe, at: at))
                // Sent three times: said once.
                if lastProbe.map({ $0 != (probe.seed, at.nanoseconds) }) ?? true {
                    lastProbe = (probe.seed, at.nanoseconds)
                    log.info("calibration: a probe (level \((probe.level * 100).fixed(0))%) at \(at)")
                }
            })
        control = ClockClient(socket: controlSocket, coordinator: coordinator, clock: clock, unicastPort: unicastPort,
                              membership: membership, sealedStream: sealedStream, handlers: handlers)
    }

    /// A NACK as it goes to the coordinator: sealed (SRTCP) with the stream's key in use,
    /// when the stream is sealed; nil when it cannot be.
    func sealFeedback(_ nack: [UInt8]) -> [UInt8]? {
        srtp == nil ? nack : try? srtp!.protectRTCP(nack)
    }

    /// A UDP socket of its own for the stream, on any free port.
    static func unicastSocket() throws -> any DatagramSocket {
        let socket = try UDPSocket()
        try socket.bind(SocketAddress(address: 0, port: 0))
        socket.setReceiveBuffer(bytes: 1 << 20)
        return socket
    }

    /// Reports the room with the next turn: it now decides its audio further ahead (its
    /// device's floor grew), which the house's command lead must know at once.
    func reportSoon() { control.reportSoon() }

    /// Sends what the control channel is due to send; returns the latest time to turn again.
    /// When only other zones' streams come lately (the room's zone's stream may be new) the
    /// room reports itself at once, once a second at most, for its settings.
    func turn(lock: ClockLock) -> Int64 {
        if othersOnly {
            let now = clock.nanosecondsNow()
            if now - lastNudge > 1_000_000_000 {
                lastNudge = now
                control.reportSoon()
            }
        }
        if multicastWatch != nil {
            if multicastWatch!.check(now: clock.nanosecondsNow(), locked: lock.uncertainty != nil, heardStream: heardStream) {
                switchToUnicast()
            } else if multicastWatch!.settled {
                multicastWatch = nil
            }
            heardStream = false
        }
        return control.turn(lock: lock)
    }

    /// Multicast does not reach this host: a socket of its own for the stream, and the
    /// coordinator asked to send it there. Said once.
    private func switchToUnicast() {
        do {
            let socket = try makeUnicastSocket()
            _ = socket.enableReceiveTimestamps()
            let port = try socket.localAddress().port
            stream = socket
            control.receiveByUnicast(port: port)
            log.warning("no stream on multicast for \(multicastWatch.map { $0.silence / 1_000_000_000 } ?? 0) s while the coordinator answers "
                        + "(no multicast route, or the network drops it): asking for the stream by unicast on port \(port) instead")
        } catch {
            log.error("cannot switch to unicast: \(error)")
        }
        multicastWatch = nil
    }

    /// Hands `apply` what both sockets received since the last call, merged in the order it
    /// arrived here (the clock estimator's readings, from exchanges and from packets alike,
    /// go in in time order); the coordinator's settings and epoch ends before the stream.
    func collect(_ apply: (PlayoutInput) -> Void) {
        receiveStream()
        control.receiveWaiting()
        var s = 0, c = 0
        while s < fromStream.count || c < fromControl.count {
            if s == fromStream.count || (c < fromControl.count && (fromControl[c].stamp ?? .min) <= (fromStream[s].stamp ?? .min)) {
                apply(fromControl[c])
                c += 1
            } else {
                apply(fromStream[s])
                s += 1
            }
        }
        fromStream.removeAll(keepingCapacity: true)
        fromControl.removeAll(keepingCapacity: true)
    }

    private func receiveStream() {
        while true {
            let next: Datagram?
            var storage = streamStorage.take()
            do {
                next = try stream.receiveWaiting(reusing: &storage)
            } catch {
                streamStorage.keep(storage)
                log.error("receive: \(error)")
                return
            }
            // Consumed, so that the datagram's bytes have one owner and are opened where they lie.
            guard var datagram = consume next else {
                streamStorage.keep(storage)
                return
            }
            // Whatever becomes of it, its storage is received into again 64 datagrams on.
            defer { streamStorage.keep(datagram.bytes) }
            heardStream = true
            if let own = zoneStream, let ssrc = RTPPacket.ssrc(in: datagram.bytes), ssrc != own {
                otherZones += 1
                if ownHeard.map({ datagram.receivedAt - $0 > 300_000_000 }) ?? true { othersOnly = true }
                continue
            }
            ownHeard = datagram.receivedAt
            othersOnly = false
            if srtp != nil {
                do {
                    try srtp!.unprotectRTP(inPlace: &datagram.bytes)
                } catch .notForThisMember {
                    untagged += 1
                    continue
                } catch {
                    unsealed += 1
                    if unsealed == 1 {
                        log.warning("a stream packet not sealed with the house key, or not by the coordinator (\(error)): dropped (a "
                                    + "stranger's, a replay, another member's, or a coordinator run with --plain-rtp; such packets "
                                    + "are counted every 10 s)")
                    }
                    continue
                }
            }
            fromStream.append(.packet(datagram.bytes, arrived: LocalTime(nanoseconds: datagram.receivedAt)))
            trace?.recordStream(datagram.bytes, arrived: datagram.receivedAt)
            if datagram.receivedAt >= nextSummary {
                nextSummary = datagram.receivedAt + 10_000_000_000
                if unsealed != reportedUnsealed {
                    log.info("stream in the last 10 s: \(unsealed - reportedUnsealed) packets not sealed with the house key, or not by "
                             + "the coordinator, dropped")
                    reportedUnsealed = unsealed
                }
                if untagged != reportedUntagged {
                    log.info("stream in the last 10 s: \(untagged - reportedUntagged) packets with no tag for this member dropped "
                             + "(sent before the coordinator knew this room plays its stream, or made by another member)")
                    reportedUntagged = untagged
                }
            }
        }
    }
}

/// What the playout says about itself: the room's state, an interruption, a disproved clock
/// memory and the clock's first lock as they change; then either (verbose) the status line
/// every status interval, or (quiet, the default) a line only for an interval with trouble
/// and one when it is over (`TroubleWatch`); and, every minute while locked, the clock to
/// keep for the next run.
final class PlayoutNews {
    private let log: Log
    private let statusInterval: Int64
    private let verbose: Bool
    private let keep: (PlayoutSnapshot) -> Void
    private let metrics: FollowerMetrics?
    private var nextStatus: Int64 = 0
    private var nextKeep: Int64 = 0
    private var trouble = TroubleWatch()
    /// The room's state changed in this period: it is settling.
    private var settling = true

    init(log: Log, statusInterval: Int64, verbose: Bool, metrics: FollowerMetrics? = nil, keep: @escaping (PlayoutSnapshot) -> Void) {
        self.log = log
        self.metrics = metrics
        self.statusInterval = statusInterval
        self.verbose = verbose
        self.keep = keep
    }

    /// Tells what changed from `before` (the last snapshot) to `snapshot`.
    func tell(_ snapshot: PlayoutSnapshot, before: PlayoutSnapshot, now: Int64, unsealed: Int, untagged: Int = 0) {
        metrics?.update(snapshot, unsealed: unsealed, untagged: untagged)
        if snapshot.state != before.state {
            log.info("state: \(snapshot.state.rawValue)")
            settling = true
        }
        if snapshot.room.interrupted != before.room.interrupted {
            log.info(snapshot.room.interrupted ? "interrupted: the sound server asked this stream to pause (another stream has priority)"
                                               : "interruption over")
        }
        if snapshot.rememberedRejected, !before.rememberedRejected {
            log.info("the clock of the last run disagrees with the coordinator's answers (the coordinator restarted, or "
                     + "its clock moved): locking afresh")
        }
        if let estimate = snapshot.estimate, before.estimate == nil { log.info("clock locked: \(estimate)") }
        if snapshot.holes > before.holes {
            log.warning("hole: the sound device ran dry while the room played (\(snapshot.holes) so far); it is now written "
                        + "\(snapshot.floor / 1_000_000) ms before it would run dry")
        } else if snapshot.floor > before.floor, before.floor > 0 {
            log.warning("a write came close to the sound device running dry (this machine woke the follower late): it is now "
                        + "written \(snapshot.floor / 1_000_000) ms before it would run dry, not \(before.floor / 1_000_000) ms")
        }
        if now >= nextStatus {
            if nextStatus != 0 { status(snapshot, unsealed: unsealed) }
            nextStatus = now + statusInterval
        }
        if snapshot.estimate != nil, now >= nextKeep {
            if nextKeep != 0 { keep(snapshot) }
            nextKeep = now + 60_000_000_000
        }
    }
}

extension PlayoutNews {
    private func status(_ snapshot: PlayoutSnapshot, unsealed: Int) {
        let line = snapshot.statusLine(unsealed: unsealed)
        if verbose { return log.info(line) }
        // The counters only count while the clock is locked and the stream plays.
        guard snapshot.estimate != nil else { return }
        let seconds = (Double(statusInterval) / 1e9).fixed(statusInterval % 1_000_000_000 == 0 ? 0 : 1)
        defer { settling = false }
        switch trouble.judge(TroubleWatch.Counts(snapshot.statistics, unsealed: unsealed, holes: snapshot.holes), clockSuspect: snapshot.lock.suspect,
                             settling: settling) {
        case .quiet: break
        case let .trouble(what): log.warning("trouble in the last \(seconds) s: \(what); \(line)")
        case .recovered: log.info("no trouble in the last \(seconds) s")
        }
    }
}

extension PlayoutSnapshot {
    /// Before the playout thread has published anything.
    static let starting = PlayoutSnapshot(
        state: .acquiringClock, estimate: nil, lock: ClockLock(uncertainty: nil, suspect: false), rememberedRejected: false,
        statistics: PlayoutStatistics(), requests: RetransmissionRequester.Statistics(), playingEpoch: nil,
        room: RoomControl(settingsVersion: 0, gain: 1, outputDelay: 0, interrupted: false), outputLatency: 0, committedAhead: 0,
        deviceRatePPM: nil, deviceOffsetPPM: 0, deviceJumps: 0, floor: 0, nearMisses: 0, holes: 0)
}
