import TuttiCodecs
import TuttiCore
import TuttiNet

/// What a coordinator's shells act through, given by whoever puts the program together: the
/// house's clock, the clock port's socket (bound, with receive stamps) and the stream's send
/// socket; and, for the tests' simulated house, how a queue entry's source is opened and what
/// encodes it (nil: files, streams and inputs as the entry names them, and Opus). The commands
/// give the system's (`system`); a simulated house its in-memory network and manual clock.
/// Nothing in the coordinator builds a clock or a socket itself.
public struct CoordinatorPorts: Sendable {
    public var clock: any MonotonicClock
    public var clockSocket: any DatagramSocket & Sendable
    public var sendSocket: any DatagramSocket & Sendable
    /// Opens a queue entry (nil: `openFrameSource`, with the live inputs the command line named).
    var openSource: (@Sendable (_ entry: String, _ pcmFiles: Set<String>) throws -> any FrameSource)?
    /// Makes a zone's encoder (nil: Opus, with the configuration's settings).
    var makeEncoder: (@Sendable (OpusFrameEncoder.Settings) throws -> any FrameEncoding)?

    public init(clock: any MonotonicClock, clockSocket: any DatagramSocket & Sendable, sendSocket: any DatagramSocket & Sendable) {
        self.clock = clock
        self.clockSocket = clockSocket
        self.sendSocket = sendSocket
    }

    /// This host's sockets for `configuration`, on `clock`: the clock port bound exclusively
    /// (with SO_REUSEADDR another local user could bind the port beside it and receive its
    /// datagrams; UDP has no TIME_WAIT, so a restart rebinds at once), and a send socket for
    /// the multicast group. Refuses a control port another program holds, before anything
    /// is made or written.
    public static func system(_ configuration: Coordinator.Configuration, clock: any MonotonicClock) throws -> CoordinatorPorts {
        if configuration.controlPort > 0, !System.tcpPortIsFree(UInt16(configuration.controlPort), host: configuration.controlHost) {
            throw StateError("port \(configuration.controlPort) is in use by another program (another coordinator?): "
                             + "--control-listen HOST:PORT picks another")
        }
        let clockSocket = try UDPSocket()
        try clockSocket.bind(configuration.clockListen, reuse: false)
        clockSocket.enableReceiveTimestamps()
        let sendSocket = try UDPSocket()
        try sendSocket.setMulticast(ttl: 1, loopback: true, interface: configuration.multicastInterface)
        return CoordinatorPorts(clock: clock, clockSocket: clockSocket, sendSocket: sendSocket)
    }
}
