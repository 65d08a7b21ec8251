import ArgumentParser
import TuttiConfig
import TuttiNet

/// `tutti follower` and `tutti-follower`: the follower's command line.
public struct FollowerCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "follower",
        abstract: "Play the coordinator's stream in this room, in sync with every other room.")

    @Option(help: "The coordinator's clock service, HOST[:PORT] (default: the coordinator announced on the network, found through avahi-daemon; it waits for one to be announced).")
    var coordinator: String?

    @Option(help: "This room's name, as the house shows it (default: the host name).")
    var name: String?

    @Flag(help: "Ask the coordinator to send the stream by unicast (when multicast does not reach this host).")
    var unicast = false

    @Option(help: "UDP port to receive the stream on with --unicast (0: any free port).")
    var port: UInt16 = 0

    @Option(help: "Multicast group HOST:PORT to join (without --unicast).")
    var multicast: String = "239.255.77.77:5004"

    @Option(help: "PulseAudio sink to play to (default: the server's default sink).")
    var sink: String?

    @Option(help: "Output: auto (PulseAudio where a server runs, PipeWire's included, else ALSA's default device), pulse, pulse:SINK, alsa, alsa:DEVICE (hw:0, plughw:1, default: straight to ALSA, no sound server needed), wav:PATH or null.")
    var output: String = "auto"

    @Option(help: "The house's end-to-end latency this follower expects (ms); sizes its jitter buffer.")
    var latencyMs: Int = 150

    @Option(help: "Extra delay of the device after the sound server, e.g. an HDMI TV or Bluetooth speaker (ms).")
    var outputDelayMs: Double = 0

    @Option(help: "How far ahead of being heard the room writes its audio, at least (ms): the sound server's own latency, a write and the margin kept against this machine's lateness, which grows by itself when the machine needs more.")
    var bufferMs: Int = 80

    @Flag(help: "Log the technical status line (clock, timing, buffer, loss) every --status-interval seconds. Without it the follower logs only changes and trouble.")
    var verbose = false

    @Option(help: "Seconds between status lines (implies --verbose), and between checks for trouble (default 5).")
    var statusInterval: Double?

    @Option(help: "This machine's copy of the house key (default: house.key in the state folder: $TUTTI_STATE_DIR, else ~/.local/state/tutti, or /var/lib/tutti for root). A copy of the coordinator's house.key.")
    var key: String?

    @Option(help: "Serve Prometheus metrics at http://HOST:PORT/metrics (clock, timing, loss, buffer; docs/metrics.md). Off by default.")
    var metricsListen: String?

    @OptionGroup var configFile: ConfigFileOption

    @Option(help: "Play from a Sendspin server instead of a tutti coordinator: ws://HOST[:PORT]/PATH (Music Assistant's, or a coordinator's ws://HOST:8927/sendspin), or mdns: the one announced on the network.")
    var sendspin: String?

    @Option(help: "What to ask a Sendspin server for: pcm (lossless, 2.3 Mbit/s at 24 bits) or opus (the house's own codec, 128 kbit/s: for Wi-Fi).")
    var sendspinCodec = "pcm"

    @Flag(help: "Take the stream as plain RTP (a coordinator run with --plain-rtp); otherwise only packets sealed with the house key (SRTP) are played.")
    var plainRtp = false

    public init() {}

    /// The options as plain values: what runs the follower (`FollowerOptions.run`).
    public var options: FollowerOptions {
        FollowerOptions(coordinator: coordinator, name: name, unicast: unicast, port: port, multicast: multicast, sink: sink,
                        output: output, latencyMs: latencyMs, outputDelayMs: outputDelayMs, bufferMs: bufferMs, verbose: verbose,
                        statusInterval: statusInterval, key: key, metricsListen: metricsListen, plainRtp: plainRtp, sendspin: sendspin, sendspinCodec: sendspinCodec)
    }

    public func validate() throws {
        do { try options.validate() } catch { throw ValidationError(error.message) }
    }

    public func run() throws { try options.run(clock: SystemClock()) }
}
