import TuttiAudio
import TuttiConfig
import TuttiCore
import TuttiDiscovery
import TuttiNet
import TuttiSecurity

/// The follower's options as plain values, and what runs it: `tutti follower` reads them
/// with ArgumentParser (`FollowerCommand`), and the lean `tutti-follower` reads the usual
/// command line itself (`init(arguments:table:)`), handing anything else to ArgumentParser:
/// its parse walks every option's definition by reflection, half a megabyte of code made
/// resident at every start for a dozen options.
public struct FollowerOptions: Equatable, Sendable {
    public var coordinator: String?
    public var name: String?
    public var unicast = false
    public var port: UInt16 = 0
    public var multicast = "239.255.77.77:5004"
    public var sink: String?
    public var output = "auto"
    public var latencyMs = 150
    public var outputDelayMs: Double = 0
    public var bufferMs = 80
    public var verbose = false
    public var statusInterval: Double?
    public var key: String?
    public var metricsListen: String?
    public var plainRtp = false
    /// A Sendspin server to play from (`ws://...`) instead of a tutti coordinator.
    public var sendspin: String?
    /// What to ask a Sendspin server for: `pcm` (lossless) or `opus`.
    public var sendspinCodec = "pcm"

    public init(coordinator: String? = nil, name: String? = nil, unicast: Bool = false, port: UInt16 = 0,
                multicast: String = "239.255.77.77:5004", sink: String? = nil, output: String = "auto", latencyMs: Int = 150,
                outputDelayMs: Double = 0, bufferMs: Int = 80, verbose: Bool = false, statusInterval: Double? = nil,
                key: String? = nil, metricsListen: String? = nil, plainRtp: Bool = false, sendspin: String? = nil,
                sendspinCodec: String = "pcm") {
        self.sendspin = sendspin
        self.sendspinCodec = sendspinCodec
        self.coordinator = coordinator
        self.name = name
        self.unicast = unicast
        self.port = port
        self.multicast = multicast
        self.sink = sink
        self.output = output
        self.latencyMs = latencyMs
        self.outputDelayMs = outputDelayMs
        self.bufferMs = bufferMs
        self.verbose = verbose
        self.statusInterval = statusInterval
        self.key = key
        self.metricsListen = metricsListen
        self.plainRtp = plainRtp
    }

    /// The options of a plain command line (`--key value`, `--key=value`, `--flag`; `--config`
    /// is the settings' own), as `table` names them; nil for anything else (help, an unknown
    /// option, a value of the wrong type, a flag given a value), which ArgumentParser then
    /// reads and explains. The last of a repeated option counts, as with ArgumentParser.
    public init?(arguments: [String], table: OptionTable) {
        guard let values = table.plainValues(arguments) else { return nil }
        for (option, value) in values {
            switch option {
            case "coordinator": coordinator = value
            case "name": name = value
            case "unicast": unicast = true
            case "port": guard let port = UInt16(value) else { return nil }; self.port = port
            case "multicast": multicast = value
            case "sink": sink = value
            case "output": output = value
            case "latency-ms": guard let ms = Int(value) else { return nil }; latencyMs = ms
            case "output-delay-ms": guard let ms = Double(value), ms.isFinite else { return nil }; outputDelayMs = ms
            case "buffer-ms": guard let ms = Int(value) else { return nil }; bufferMs = ms
            case "verbose": verbose = true
            case "status-interval": guard let seconds = Double(value), seconds.isFinite else { return nil }; statusInterval = seconds
            case "key": key = value
            case "metrics-listen": metricsListen = value
            case "plain-rtp": plainRtp = true
            case "sendspin": sendspin = value
            case "sendspin-codec": sendspinCodec = value
            default: return nil  // an option this reader does not know yet: ArgumentParser's
            }
        }
    }

    /// What is wrong with a value, in the command line's words.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public func validate() throws(Invalid) {
        if !(20...5000).contains(latencyMs) { throw Invalid("--latency-ms must be between 20 and 5000") }
        if !(0...2000).contains(outputDelayMs) { throw Invalid("--output-delay-ms must be between 0 and 2000") }
        if let statusInterval, !(0.1...3600).contains(statusInterval) {
            throw Invalid("--status-interval must be between 0.1 and 3600 seconds")
        }
        if !(10...500).contains(bufferMs) { throw Invalid("--buffer-ms must be between 10 and 500") }
        if bufferMs >= latencyMs { throw Invalid("--buffer-ms must be smaller than --latency-ms") }
        _ = try parseOutput()
        if let metricsListen {
            do { _ = try SocketAddress(parsing: metricsListen, defaultPort: 9485) } catch {
                throw Invalid("--metrics-listen: \(error)")
            }
        }
        if let sendspin, sendspin != "mdns", BlockingWebSocket.Address(sendspin, defaultPort: 8927) == nil {
            throw Invalid("--sendspin must be ws://HOST[:PORT]/PATH (such as ws://192.168.1.10:8927/sendspin), or mdns")
        }
        if !["pcm", "opus"].contains(sendspinCodec) { throw Invalid("--sendspin-codec must be pcm or opus") }
        if let name, !RoomReport.isValidName(name) {
            throw Invalid("--name must be 1 to 64 characters, not blank, without control characters")
        }
    }

    enum OutputSpec { case auto, pulse(String?), alsa(String), wav(String), null }

    func parseOutput() throws(Invalid) -> OutputSpec {
        if output == "auto" { return sink == nil ? .auto : .pulse(sink) }
        if output == "pulse" { return .pulse(sink) }
        if output.hasPrefix("pulse:"), output.count > 6 { return .pulse(String(output.dropFirst(6))) }
        if output == "alsa" { return .alsa("default") }
        if output.hasPrefix("alsa:"), output.count > 5 { return .alsa(String(output.dropFirst(5))) }
        if output.hasPrefix("wav:"), output.count > 4 { return .wav(String(output.dropFirst(4))) }
        if output == "null" { return .null }
        throw Invalid("unknown --output '\(output)': use auto, pulse, pulse:SINK, alsa, alsa:DEVICE, wav:PATH or null")
    }

    /// How `--buffer-ms` is spent, and how the output is set up for it: a write of half of
    /// it (40 ms at most: the playout wakes once a write), on a sound server a quarter of it
    /// for the server's sink, and the rest kept in hand against this machine's lateness
    /// (`DeviceFill`'s floor, which grows when a write comes close to the device running
    /// dry). 80 ms: 40 ms writes, 20 ms for PulseAudio's sink, 20 ms in hand (the server, at
    /// real-time priority, keeps its own device further ahead). Straight to a sound card a
    /// write is three eighths (30 ms at most) and 50 ms are in hand: nothing else stands
    /// between a late wake and the card running dry, and a stall of this whole machine once
    /// ate a 40 ms margin (bench/NOTES.md); the room still decides its audio 80 ms ahead, so
    /// a live input's latency and a command's lead do not move. A WAV file or the null output
    /// keeps half and half (the tests' and recordings' outputs).
    struct OutputPlan: Equatable {
        var fill = DeviceFill.Configuration()
        /// The sound server's latency for the stream (ms).
        var sinkLatencyMilliseconds = 0
        /// How much the sound server asks for at a time (ms): four writes. The player writes on
        /// its own schedule, but a request that reaches its socket while it waits there for a
        /// timing answer wakes it once more; at a write's worth they came with most writes.
        var requestMilliseconds: Int { max(1, Int(fill.period / 1_000_000) * 4) }
        /// An ALSA device's buffer and period (frames).
        var alsaBufferFrames = 0, alsaPeriodFrames = 0

        init(bufferMs: Int, soundServer: Bool, card: Bool = false) {
            let buffer = Int64(bufferMs) * 1_000_000
            fill.period = card ? min(30_000_000, buffer * 3 / 8) : min(40_000_000, buffer / 2)
            if soundServer {
                sinkLatencyMilliseconds = max(1, bufferMs / 4)
                fill.floor = buffer - fill.period - Int64(sinkLatencyMilliseconds) * 1_000_000
            } else {
                fill.floor = buffer - fill.period
                // Room to grow the floor into: the device's buffer is twice the setting.
                alsaBufferFrames = 2 * bufferMs * 48 + Int(fill.period / 1_000_000) * 48
                alsaPeriodFrames = max(48, Int(fill.period / 1_000_000) * 24)
                fill.ceiling = Int64(alsaBufferFrames) * 1_000_000 / 48 - fill.period
            }
        }
    }

    /// A PulseAudio server's default sink where one runs (PipeWire's pulse server
    /// included), else ALSA's default device; the log says which, and why.
    static func automaticOutput(bufferMs: Int, clock: SystemClock, log: Log) throws -> (AudioOutput, OutputPlan) {
        let server = OutputPlan(bufferMs: bufferMs, soundServer: true)
        do {
            let pulse = try PulseOutput(sink: nil, clock: clock, sinkLatencyMilliseconds: server.sinkLatencyMilliseconds,
                                        requestMilliseconds: server.requestMilliseconds, timingMilliseconds: 25, onlyIfRunning: true)
            log.info("output: \(pulse.name) (a PulseAudio server runs here; --output alsa plays straight to ALSA)")
            return (pulse, server)
        } catch {
            let (alsa, plan) = try alsaOutput("default", bufferMs: bufferMs, clock: clock)
            log.info("output: \(alsa.name) (no PulseAudio server answers here: straight to ALSA, \(alsa.periodFrames)-frame periods in a \(alsa.bufferFrames)-frame buffer)")
            return (alsa, plan)
        }
    }

    static func alsaOutput(_ device: String, bufferMs: Int, clock: SystemClock) throws -> (AlsaOutput, OutputPlan) {
        var plan = OutputPlan(bufferMs: bufferMs, soundServer: false, card: true)
        let alsa = try AlsaOutput(device: device, clock: clock, bufferFrames: plan.alsaBufferFrames, periodFrames: plan.alsaPeriodFrames)
        // The buffer the device granted bounds how far ahead it can be filled.
        plan.fill.ceiling = max(plan.fill.floor, AudioFormat.nanoseconds(forFrames: Int64(alsa.bufferFrames)) - plan.fill.period)
        return (alsa, plan)
    }

    /// Runs the follower on `clock`, the one clock of the program (its parts' and its outputs').
    public func run(clock: SystemClock) throws {
        var config = Follower.Configuration()
        let log = Log("follower")
        if var sendspin {
            if sendspin == "mdns" {
                sendspin = try Discovery.awaitSendspinServer(notice: { log.warning($0) },
                                                             lookup: { () throws(Discovery.Failure) in
                                                                 try Discovery.browse(type: "_sendspin-server._tcp", timeout: 3, clock: clock)
                                                             })
                log.info("found a Sendspin server on the network: \(sendspin)")
            }
            config.sendspin = BlockingWebSocket.Address(sendspin, defaultPort: 8927)
            config.sendspinCodec = sendspinCodec
        } else if let coordinator {
            config.coordinator = try SocketAddress(parsing: coordinator, defaultPort: 5005)
        } else {
            let keyPath = key ?? config.houseKeyPath
            // Only a coordinator that proves it holds this house's key (docs/security.md, "Discovery").
            let key = try? StateFolder.readHouseKey(path: keyPath)
            let proof = key.map { DiscoveryProof(houseKey: $0) }
            let found = try Discovery.awaitCoordinator(houseKey: key?.fingerprint,
                                                       proven: proof.map { proof in { $0.proves("proof", with: proof.verifies) } },
                                                       notice: { log.warning($0) },
                                                       lookup: { () throws(Discovery.Failure) in try Discovery.browse(timeout: 3, clock: clock) })
            log.info("found the coordinator on the network: \(found)")
            config.coordinator = try SocketAddress(parsing: found.clockAddress, defaultPort: 5005)
        }
        config.unicast = unicast
        config.listenPort = port
        config.multicastGroup = try SocketAddress(parsing: multicast, defaultPort: 5004)
        config.latencyMilliseconds = latencyMs
        config.outputDelayMilliseconds = outputDelayMs
        config.statusInterval = statusInterval ?? 5
        config.verbose = verbose || statusInterval != nil
        if let key { config.houseKeyPath = key }
        config.sealedStream = !plainRtp
        if let metricsListen { config.metricsListen = try SocketAddress(parsing: metricsListen, defaultPort: 9485) }
        if let name { config.name = name }
        let device: AudioOutput
        var clocked: ClockedOutput?
        switch try parseOutput() {
        case .auto:
            let (automatic, plan) = try Self.automaticOutput(bufferMs: bufferMs, clock: clock, log: log)
            (device, config.fill) = (automatic, plan.fill)
        case let .alsa(name):
            let (alsa, plan) = try Self.alsaOutput(name, bufferMs: bufferMs, clock: clock)
            log.info("output: \(alsa.name) (\(alsa.periodFrames)-frame periods in a \(alsa.bufferFrames)-frame buffer)")
            (device, config.fill) = (alsa, plan.fill)
        case let .pulse(sink):
            let plan = OutputPlan(bufferMs: bufferMs, soundServer: true)
            device = try PulseOutput(sink: sink, clock: clock, sinkLatencyMilliseconds: plan.sinkLatencyMilliseconds,
                                     requestMilliseconds: plan.requestMilliseconds, timingMilliseconds: 25)
            config.fill = plan.fill
        case let .wav(path):
            clocked = try ClockedOutput(clock: clock, wavPath: path)
            device = clocked!
            config.fill = OutputPlan(bufferMs: bufferMs, soundServer: false).fill
        case .null:
            device = try ClockedOutput(clock: clock)
            config.fill = OutputPlan(bufferMs: bufferMs, soundServer: false).fill
        }
        let follower = try Follower(configuration: config, clock: clock)
        TerminationSignals.onTermination { follower.stop() }
        try follower.run(output: device)
        clocked?.close()
    }
}
