import ArgumentParser
import Foundation
import TuttiConfig
import TuttiCore
import TuttiNet
import TuttiNode

struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Play music to the house: decode, encode Opus, stamp presentation times, send over UDP.")

    @Argument(help: "Audio files (FLAC, ALAC, AAC, Ogg Vorbis, Opus, WAV, AIFF, MP3, ...), folders (played sorted, recursively, gaplessly), playlists (M3U, M3U8, PLS; files or URLs), URLs (audio files, internet radio or HLS streams over http:// or https://) or live inputs (pcm:PATH[?format=s16le|f32le&rate=48000|44100]): they replace the queue and play. Without them the saved queue waits, paused where it was.")
    var inputs: [String] = []

    @Option(name: .customLong("pcm"), help: "Play raw PCM (stereo, 48 or 44.1 kHz) from PATH (a named pipe or a file), or - for standard input: the queue becomes this one live input (pcm:PATH).")
    var pcmPath: String?

    @Option(help: "The sample format of --pcm: s16le or f32le.")
    var pcmFormat: String = "s16le"

    @Option(help: "The sample rate of --pcm: 48000 or 44100 (converted to 48 kHz).")
    var pcmRate: Int = 48_000

    @Option(help: "Be a receiver that another protocol's senders play to: airplay[:NAME] makes the house an AirPlay receiver named NAME (with shairport-sync and avahi-daemon), librespot[:NAME] a Spotify Connect speaker (with librespot, which must be installed). The queue becomes this one live source (as the queue entry airplay:NAME or librespot:NAME).")
    var source: String?

    @Flag(help: "Start again from the first track after the last one (loop mode 'all').")
    var loop = false

    @Option(help: "A folder of .lrc lyric files, matched to tracks by artist and title (besides .lrc files next to the tracks and lyrics in their tags).")
    var lyricsDir: String?

    @Option(name: .customLong("library"), help: "A music folder for the library (repeatable): indexed in the state folder (library.sqlite) with its tags, albums, artists and covers, for the web remote and the API to browse, search and queue; changes are followed as they happen.")
    var libraryFolders: [String] = []

    @Flag(help: "Do not follow changes in the music folders as they happen (inotify): they are seen at the next start or rescan (`tutti ctl library rescan`).")
    var noLibraryWatch = false

    @Flag(help: "Follow symbolic links that lead out of the music folders (by default a link is followed only within its folder: music/etc -> /etc is not indexed).")
    var libraryFollowLinks = false

    @Option(help: "Where the control API (HTTP, WebSocket, web pages) listens, HOST:PORT.")
    var controlListen: String = "0.0.0.0:8485"

    @Option(help: "Where the Sendspin server (Music Assistant's players join the house) listens, HOST:PORT, or off.")
    var sendspinListen: String = "0.0.0.0:8927"

    @Flag(help: "Let Sendspin players that are not paired with the house play (anyone on the network can then join a room and hear its zone); otherwise they wait to be paired (tutti ctl sendspin pair).")
    var sendspinUnpairedAccess = false

    @Option(help: "Folder for the house's saved state and control token (default: $TUTTI_STATE_DIR, else ~/.local/state/tutti).")
    var stateDir: String?

    @Option(help: "What the zones' streams carry: opus (128 kbit/s in 20 ms packets: for Wi-Fi), pcm (lossless, L24: 2.3 Mbit/s in 4 ms packets) or flac (lossless, FLAC frames in 4 ms packets: about half pcm's bytes for music). Followers play every codec; --zone-codec gives a zone its own.")
    var codec: StreamCodec = .opus

    @Option(name: .customLong("zone-codec"), help: "A zone's own codec, ZONE=CODEC (the zone's name or id; repeatable), for example 'Living Room=flac'. A zone made later by that name gets it too.")
    var zoneCodec: [String] = []

    @Option(help: "Opus frame duration in milliseconds (2.5, 5, 10, 20, 40, 60).")
    var frameMs: Double = 20

    @Option(help: "Opus bitrate in kb/s.")
    var bitrateKbps: Int = 128

    @Option(help: "End-to-end latency: how long before its presentation time each packet is sent (ms, 20 to 5000; 150 when not given). Given, a live input's latency is fixed; without it, each zone's fits its rooms' network: it grows (its input heard 2 % slower meanwhile, without a gap) when their packets come late, up to --max-latency-ms, and comes back down after a calm minute.")
    var latencyMs: Int?

    @Option(help: "The most a zone's live latency grows to when --latency-ms is not given (ms, 150 to 5000).")
    var maxLatencyMs: Int = 1_000

    @Option(help: "How far ahead of being heard stored audio (files, local or remote) is sent (ms, 0 to 5000), so that rooms ride out a network that holds their packets for a while (Wi-Fi power save, retries, scans); commands still act at once. At or below --latency-ms (0: off), it is sent as live audio is.")
    var lookaheadMs: Int = 2_000

    @Option(help: "Multicast group HOST:PORT for the stream, or 'off' for unicast only.")
    var multicast: String = "239.255.77.77:5004"

    @Option(help: "Multicast interface address (IPv4), when not the default route's.")
    var multicastInterface: String?

    @Option(name: .customLong("unicast"), help: "Also send to HOST:PORT (repeatable).")
    var unicast: [String] = []

    @Option(help: "Address and port of the clock service, HOST:PORT (followers connect here).")
    var clockListen: String = "0.0.0.0:5005"

    @Option(help: "Write an SDP description of the stream to PATH (for GStreamer, ffmpeg). It holds the stream's key (mode 0600).")
    var sdp: String?

    @Flag(help: "Send the stream as plain RTP, not sealed with SRTP: anyone on the network can then hear it and play into the rooms. For stock receivers without SRTP; followers need --plain-rtp too.")
    var plainRtp = false

    @Flag(help: "Serve the control API (and the web pages and event stream) over HTTPS, with a self-signed certificate of the coordinator's own, made on first start in the state folder (tls/). The log shows its pin for `tutti ctl --tls-pin`.")
    var tls = false

    @Option(help: "Serve the control API over HTTPS with this certificate chain (PEM, the server's first) instead; needs --tls-key.")
    var tlsCertificate: String?

    @Option(help: "The private key (PEM) of --tls-certificate.")
    var tlsKey: String?

    @Option(name: .customLong("allow-host"), help: "A name the control API answers to besides its addresses, localhost and this machine's host name (alone and under .local, .lan, .home, .fritz.box and the like): a DNS name of your own for it (repeatable). Requests for any other name are refused (a web page that rebinds its own name to the coordinator learns nothing).")
    var allowHost: [String] = []

    @Option(help: "The house's name: announced on the network for followers, screens and `tutti ctl` to find, and shown by the web remote (default: 'tutti on HOSTNAME').")
    var houseName: String?

    @Flag(help: "Do not announce the coordinator on the network (mDNS, through avahi-daemon): followers then need --coordinator.")
    var noAnnounce = false

    @Option(help: "Even loudness (ReplayGain, from the tracks' tags): off, track or album. Given, it wins over the house's saved setting (`tutti ctl replaygain`); else the saved one holds (at first: album).")
    var replaygain: ReplayGain.Mode?

    @Option(help: "ReplayGain: decibels added to every tagged track's gain (-24 to 24; default 0).")
    var replaygainPreampDb: Double?

    @Option(help: "ReplayGain: the gain in decibels of a track without loudness tags (-24 to 24; default 0).")
    var replaygainUntaggedDb: Double?

    @Option(help: "Where remote sources (URLs, and what remote playlists name) may be fetched from: lan (the internet and the house's own network, this machine included; never a link-local address such as a cloud's metadata service, nor a multicast or unspecified one), public (the internet only) or any. Every address a host resolves to, and every redirect, is checked.")
    var remoteSources: FetchScope = .lan

    @OptionGroup var configFile: ConfigFileOption

    /// HOST:PORT for a listener; port 0 takes any free port.
    static func listenAddress(_ text: String) throws -> (host: String, port: Int) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (0...65_535).contains(port) else {
            throw ValidationError("'\(text)' is not HOST:PORT (for example 0.0.0.0:8485)")
        }
        return (String(parts[0]), port)
    }

    func validate() throws {
        _ = try Self.listenAddress(controlListen)
        if sendspinListen != "off" { _ = try Self.listenAddress(sendspinListen) }
        if (tlsCertificate == nil) != (tlsKey == nil) { throw ValidationError("--tls-certificate and --tls-key go together") }
        if [!inputs.isEmpty, pcmPath != nil, source != nil].filter({ $0 }).count > 1 {
            throw ValidationError("use one of files, --pcm and --source")
        }
        if let source {
            guard ReceiverEntry.isReceiver(source) else { throw ValidationError("--source takes airplay[:NAME] or librespot[:NAME], not '\(source)'") }
            do { _ = try ReceiverEntry(parsing: source) } catch { throw ValidationError("--source: \(error)") }
        }
        for folder in libraryFolders where InputFile.kind(of: folder) != .folder {
            throw ValidationError("--library \(folder): not a folder")
        }
        if let pcm = pcmInput { do { _ = try LiveInput(parsing: pcm) } catch { throw ValidationError("--pcm: \(error)") } }
        if pcmPath == nil && (pcmFormat != "s16le" || pcmRate != 48_000) { throw ValidationError("--pcm-format and --pcm-rate go with --pcm") }
        for text in zoneCodec where ZoneCodecs.parse(text) == nil {
            throw ValidationError("--zone-codec takes ZONE=CODEC (opus, pcm or flac), not '\(text)'")
        }
        if ![2.5, 5, 10, 20, 40, 60].contains(frameMs) { throw ValidationError("--frame-ms must be 2.5, 5, 10, 20, 40 or 60") }
        if !(6...510).contains(bitrateKbps) { throw ValidationError("--bitrate-kbps must be between 6 and 510") }
        if let latencyMs, !(20...5000).contains(latencyMs) { throw ValidationError("--latency-ms must be between 20 and 5000") }
        if !(150...5000).contains(maxLatencyMs) { throw ValidationError("--max-latency-ms must be between 150 and 5000") }
        if !(0...5000).contains(lookaheadMs) { throw ValidationError("--lookahead-ms must be between 0 and 5000") }
        for (name, value) in [("--replaygain-preamp-db", replaygainPreampDb), ("--replaygain-untagged-db", replaygainUntaggedDb)] {
            if let value, !ReplayGain.accepts(value) { throw ValidationError("\(name) must be between -24 and 24 (dB)") }
        }
        for name in allowHost where name.isEmpty || name.count > 253 || name.contains(where: { $0.isWhitespace || $0 == "/" || $0 == ":" }) {
            throw ValidationError("--allow-host takes a host name (no port, no spaces), not '\(name)'")
        }
        if let houseName, houseName.isEmpty || houseName.utf8.count > 63 || houseName.contains(where: { $0.isNewline }) {
            throw ValidationError("--house-name must be 1 to 63 bytes on one line (a DNS-SD instance name)")
        }
    }

    /// The live input --pcm names, as a queue entry.
    var pcmInput: String? {
        pcmPath.map { path in
            if LiveInput.isLive(path) { return path }
            let settings = (pcmFormat == "s16le" ? [] : ["format=\(pcmFormat)"]) + (pcmRate == 48_000 ? [] : ["rate=\(pcmRate)"])
            return LiveInput.scheme + path + (settings.isEmpty ? "" : "?" + settings.joined(separator: "&"))
        }
    }

    func run() async throws {
        var config = Coordinator.Configuration()
        config.codecs = ZoneCodecs(codec)
        for (zone, codec) in zoneCodec.compactMap(ZoneCodecs.parse) { config.codecs.set(codec, forZone: zone) }
        config.encoder.frameMilliseconds = frameMs
        config.encoder.bitrate = bitrateKbps * 1000
        config.latencyMilliseconds = latencyMs ?? 150
        config.maxLatencyMilliseconds = latencyMs == nil ? maxLatencyMs : nil
        config.lookaheadMilliseconds = lookaheadMs
        config.multicast = multicast == "off" ? nil : try SocketAddress(parsing: multicast, defaultPort: 5004)
        if let multicastInterface {
            config.multicastInterface = try SocketAddress(host: multicastInterface, port: 0).address
        }
        config.unicast = try unicast.map { try SocketAddress(parsing: $0, defaultPort: 5004) }
        config.clockListen = try SocketAddress(parsing: clockListen, defaultPort: 5005)
        config.sdpPath = sdp
        config.sealStream = !plainRtp
        if let tlsCertificate, let tlsKey {
            config.controlTLS = .files(certificate: tlsCertificate, key: tlsKey)
        } else if tls {
            config.controlTLS = .own
        }
        let control = try Self.listenAddress(controlListen)
        config.controlHost = control.host
        config.controlPort = control.port
        config.allowedHosts = allowHost
        if sendspinListen == "off" {
            config.sendspinListen = nil
        } else {
            let sendspin = try Self.listenAddress(sendspinListen)
            config.sendspinListen = (sendspin.host, sendspin.port)
        }
        config.sendspinUnpairedAccess = sendspinUnpairedAccess
        if let stateDir { config.stateDirectory = stateDir }
        if let houseName { config.houseName = houseName }
        config.announce = !noAnnounce
        config.lyricsDirectory = lyricsDir
        config.libraryFolders = libraryFolders
        config.watchLibrary = !noLibraryWatch
        config.libraryFollowsLinksOut = libraryFollowLinks
        config.remoteSources = remoteSources
        if replaygain != nil || replaygainPreampDb != nil || replaygainUntaggedDb != nil {
            config.replayGain = ReplayGain(mode: replaygain ?? ReplayGain.standard.mode, preampDB: replaygainPreampDb ?? 0,
                                           untaggedDB: replaygainUntaggedDb ?? 0)
        }
        let coordinator = try Coordinator(configuration: config, ports: .system(config, clock: SystemClock()))
        var tracks: [String]?
        var entries: [PlaylistParser.Entry] = []
        if let pcmInput {
            tracks = [pcmInput]
        } else if let source {
            tracks = [try ReceiverEntry(parsing: source).entry]
        } else if !inputs.isEmpty {
            entries = try await TrackSource.expand(inputs)
            tracks = entries.map(\.location)
            guard !entries.isEmpty else { throw ValidationError("no audio files found in \(inputs.joined(separator: ", "))") }
        }
        // SIGTERM and SIGINT shut the house's services down in order (`runHouse`).
        try await coordinator.runHouse(.init(tracks: tracks, loopMode: loop ? .all : (tracks == nil ? nil : .once), titles: entries))
    }
}

extension FetchScope: ExpressibleByArgument {}
extension StreamCodec: ExpressibleByArgument {}
