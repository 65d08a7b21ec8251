import Foundation
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiRemote
import TuttiSecurity

/// The coordinator: its sockets, the shared clock's service and the stream's protection.
/// `runHouse` runs the house on them: the control API, the transport and its queue, and
/// the player that decodes, encodes Opus, stamps presentation times and sends each packet
/// ahead of it (stored audio up to `lookahead`, live audio `latency`), by multicast and
/// unicast.
public final class Coordinator: Sendable {
    public struct Configuration: Sendable {
        /// What each zone's stream carries (`--codec`, `--zone-codec`).
        public var codecs = ZoneCodecs()
        /// Opus's settings, for the zones that carry Opus.
        public var encoder = OpusFrameEncoder.Settings()
        /// Presentation time minus send time: the house's end-to-end latency.
        public var latencyMilliseconds = 150
        /// The most a zone's live latency grows to as its rooms' network asks (`LatencyTuner`),
        /// from `latencyMilliseconds`; nil: it stays there.
        public var maxLatencyMilliseconds: Int?
        /// How far ahead of being heard stored audio (files, local or remote) is sent, so that
        /// rooms ride out a network that holds their packets for a while (Wi-Fi); at most
        /// the latency, it is sent as live audio is.
        public var lookaheadMilliseconds = 2_000
        /// The multicast group and port, or nil for unicast only.
        public var multicast: SocketAddress? = try? SocketAddress(host: "239.255.77.77", port: 5004)
        /// The interface address to send multicast from (host order), or nil for the default.
        public var multicastInterface: UInt32?
        /// Fixed unicast destinations (RTP port; RTCP goes to port + 1).
        public var unicast: [SocketAddress] = []
        /// Where the clock (and subscription) service listens.
        public var clockListen = SocketAddress(address: 0, port: 5005)
        public var sdpPath: String?
        /// Where the control API listens (files mode).
        public var controlHost = "0.0.0.0"
        public var controlPort = 8485
        /// Where the Sendspin server listens (nil: it does not), and whether it admits
        /// players that are not paired (the protocol's published key).
        public var sendspinListen: (host: String, port: Int)? = ("0.0.0.0", 8927)
        public var sendspinUnpairedAccess = false
        /// Names the control API answers to besides its addresses, localhost and this
        /// machine's names (a DNS name of the house's).
        public var allowedHosts: [String] = []
        /// A folder of `.lrc` files, matched to tracks by artist and title.
        public var lyricsDirectory: String?
        /// The music folders the library indexes (none: no library).
        public var libraryFolders: [String] = []
        /// Whether the library follows changes in them as they happen (inotify).
        public var watchLibrary = true
        /// Symbolic links that lead out of the music folders are followed.
        public var libraryFollowsLinksOut = false
        /// Where the house's state and token are kept.
        public var stateDirectory = StateStore.defaultDirectory()
        /// Seal the stream with SRTP (AES-GCM, keyed from the house key). Off, anyone on the
        /// network can hear the stream and play into the rooms: only for stock receivers
        /// without SRTP, and to measure what the protection costs.
        public var sealStream = true
        /// HTTPS for the control API, and with what certificate.
        public var controlTLS = ControlTLS.off
        /// The house's name: announced on the network (mDNS), shown by the web remote.
        public var houseName = "tutti on " + (ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "this host")
        /// Announce the coordinator on the network (DNS-SD over mDNS, through avahi-daemon).
        public var announce = true
        /// How loudness is evened out, when the coordinator is told (it wins over the saved
        /// setting); nil: the house's saved setting.
        public var replayGain: ReplayGain?
        /// Where remote sources may be fetched from (every address a host resolves to, and
        /// every redirect, is checked).
        public var remoteSources = FetchScope.lan
        public init() {}
    }

    /// The control API's transport.
    public enum ControlTLS: Sendable, Equatable {
        /// Plain HTTP.
        case off
        /// HTTPS with a self-signed certificate of the coordinator's own (made once, kept in
        /// the state folder).
        case own
        /// HTTPS with the user's certificate chain and private key (PEM files).
        case files(certificate: String, key: String)
    }

    public let configuration: Configuration
    /// What it acts through (given by whoever builds the program).
    let ports: CoordinatorPorts
    /// The house's shared clock (this host's monotonic clock, for a program).
    var clock: any MonotonicClock { ports.clock }
    /// Stops the clock service's loop.
    let stopFlag = StopFlag()
    /// Shuts the house's services down (`stop()`).
    let shutdown = ShutdownTrigger()
    var clockSocket: any DatagramSocket & Sendable { ports.clockSocket }
    let clockServer: ClockServer
    /// The zones' streams by SSRC: where each one's packets go, those kept for
    /// retransmission, and their seal (SRTP, unless the configuration says not to). The
    /// default zone's is made with the coordinator.
    let streams: StreamDirectory
    /// The house's members and keys: the house key (the state folder's house.key, made on
    /// first start), each member's own, and the stream's (members.json).
    let keyring: HouseKeyring
    /// The house's secret.
    var houseKey: HouseKey { keyring.houseKey }
    /// The stream's key in use (nil: `--plain-rtp`).
    var streamKey: SRTPMasterKey? { configuration.sealStream ? keyring.streamInUse.key : nil }
    /// What the SDP file was last written with (the default zone's stream's timing), to
    /// write it again with a new key.
    private let sdpBase = Mutex<(timestamp: StreamTimestamp, presentedAt: CoordinatorTime)?>(nil)
    /// The default zone's stream's SSRC (a new one every run: the SRTP key stays).
    var ssrc: UInt32 { streams.defaultOutlet.ssrc }
    let log = Log("coordinator")
    /// The RTCP canonical name of this coordinator's streams.
    let cname = "tutti@\(ProcessInfo.processInfo.hostName)"
    /// Where the streams leave: the send socket, the clock, the packets sent.
    let wire: StreamWire
    /// Packets sent to at least one destination.
    public var packetsSent: Int { wire.packetsSent.load(ordering: .relaxed) }

    /// A coordinator on `ports` (`CoordinatorPorts.system` for this host's: made before
    /// anything is made or written, so that a control port in use is said plainly).
    public init(configuration: Configuration, ports: CoordinatorPorts) throws {
        self.configuration = configuration
        self.ports = ports
        let clock = ports.clock
        keyring = try StateStore(directory: configuration.stateDirectory).keyring(sealsStream: configuration.sealStream,
                                                                                   loadedAt: clock.nanosecondsNow())
        RemoteFetcher.shared.restrict(to: configuration.remoteSources, resolve: { NetworkAddress.resolve($0) })
        // The packets kept for retransmission cover the lookahead and a second more; a
        // follower that joins may have the whole lookahead resent at once.
        var resending = Retransmitter<SocketAddress>.Configuration()
        let ahead = Double(max(configuration.latencyMilliseconds, configuration.maxLatencyMilliseconds ?? 0, configuration.lookaheadMilliseconds))
        // In packets of the shortest a zone sends (a lossless zone's are 4 ms); the rate a
        // second of audio a second, as for Opus's 20 ms.
        let packet = configuration.codecs.all.map { $0 == .opus ? configuration.encoder.frameMilliseconds : $0.frameMilliseconds }.min()!
        resending.history = max(resending.history, Int(((ahead + 1_000) / packet).rounded(.up)))
        resending.burst = max(resending.burst, (ahead / packet).rounded(.up) + 10)
        resending.rate = max(resending.rate, 1_000 / packet)
        wire = StreamWire(socket: ports.sendSocket, clock: clock)
        let sealed = configuration.sealStream
        // Every zone's stream goes to the multicast group and the followers that subscribe to
        // it; the default zone's also to the fixed unicast destinations: those are stock
        // receivers of its stream, as the SDP file describes it, which another stream would
        // only confuse.
        streams = StreamDirectory(
            making: .init(master: { [keyring] in sealed ? keyring.streamInUse.key : nil },
                          destinations: configuration.multicast.map { [$0] } ?? [], resending: resending,
                          members: { [keyring] in keyring.streamTags(for: $0, at: $1) }),
            wire: wire, defaultAlsoTo: configuration.unicast)
        clockServer = ClockServer(socket: ports.clockSocket, clock: clock, keyring: keyring, streams: streams,
                                  sealed: configuration.sealStream)
        clockServer.onStreamKey = { [weak self] _ in self?.rewriteSDP() }
    }

    /// The port the clock service is bound to (useful when configured with port 0).
    public var clockPort: UInt16 { (try? clockSocket.localAddress().port) ?? configuration.clockListen.port }

    /// Shuts the house down gracefully, as SIGTERM does (any thread).
    public func stop() { shutdown.trigger() }

    var streamProtection: String {
        streams.defaultOutlet.isSealing ? "sealed (SRTP, AES-GCM)" : "UNSEALED (plain RTP: anyone on the network can hear it and play into the rooms)"
    }

    var destinationSummary: String {
        var parts: [String] = []
        if let m = configuration.multicast { parts.append("multicast \(m)") }
        parts += configuration.unicast.map { "unicast \($0)" }
        parts.append("unicast subscribers")
        return parts.joined(separator: ", ")
    }

    func writeSDP(_ packetizer: StreamPacketizer) {
        let base = (packetizer.nextTimestamp, packetizer.nextPresentationTime)
        sdpBase.withLock { $0 = base }
        writeSDP(timestamp: base.0, presentedAt: base.1)
    }

    /// The SDP file again, with the stream's new key.
    private func rewriteSDP() {
        guard let base = sdpBase.withLock({ $0 }) else { return }
        writeSDP(timestamp: base.timestamp, presentedAt: base.presentedAt)
    }

    private func writeSDP(timestamp: StreamTimestamp, presentedAt: CoordinatorTime) {
        guard let path = configuration.sdpPath else { return }
        let codec = configuration.codecs.codec(forZone: ZoneInfo.defaultID)
        let target = configuration.multicast ?? configuration.unicast.first
        let sdp = SessionDescription(
            sessionID: UInt64(ssrc), originAddress: "127.0.0.1",
            connectionAddress: target?.host ?? "127.0.0.1", isMulticast: target?.isMulticast ?? false,
            port: target?.port ?? 5004, codec: codec, frameMilliseconds: codec == .opus ? configuration.encoder.frameMilliseconds : codec.frameMilliseconds,
            mediaClockOffset: SessionDescription.mediaClockOffset(timestamp: timestamp, presentedAt: presentedAt),
            srtpKey: streamKey?.inline, source: (ssrc, cname))
        do {
            // It holds the stream's key: readable by this user only.
            try AtomicFile.write(Data(sdp.text.utf8), to: path, permissions: configuration.sealStream ? 0o600 : 0o644)
        } catch {
            log.error("cannot write SDP file \(path): \(error)")
        }
    }
}
