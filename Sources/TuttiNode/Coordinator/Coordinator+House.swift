import Foundation
import Synchronization
import Logging
import ServiceLifecycle
import TuttiAPI
import TuttiCodecs
import TuttiControl
import TuttiCore
import TuttiDiscovery
import TuttiLibrary
import TuttiMetrics
import TuttiNet
import TuttiSecurity
import TuttiTrust

extension Coordinator {
    /// What the command line asks the house to do at start.
    public struct Start: Sendable {
        /// Tracks that replace the queue and play at once; nil keeps the saved queue, paused.
        public var tracks: [String]?
        public var loopMode: LoopMode?
        public var pages: [String: ControlServer.Page] = [:]
        /// Titles playlists gave the tracks.
        public var titles: [PlaylistParser.Entry] = []
        public init(tracks: [String]?, loopMode: LoopMode?, titles: [PlaylistParser.Entry] = []) {
            self.tracks = tracks
            self.titles = titles
            self.loopMode = loopMode
        }
    }

    /// Runs the house until `stop()`, SIGTERM or SIGINT, as one group of services started in
    /// this order: the clock service and the player (each on a thread of its own), the house
    /// (an actor: its notices and its time), the control API. They shut down gracefully in
    /// the reverse order: the API stops taking commands, the house saves where it is, the
    /// player stops streaming, the clock service stops answering.
    public func runHouse(_ start: Start, onControlPort: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let store = try StateStore(directory: configuration.stateDirectory)
        // A certificate that cannot be used stops the start here, before anything runs.
        let certificate: ControlCertificate? = switch configuration.controlTLS {
        case .off: nil
        case .own: try store.controlCertificate()
        case let .files(chain, key): try StateStore.readCertificate(certificate: chain, key: key)
        }
        let (house, senders) = try await assemble(start, store: store)

        var control = ControlServer.Configuration()
        if !configuration.libraryFolders.isEmpty {
            let library = try MusicLibrary(folders: configuration.libraryFolders, database: store.directory + "/library.sqlite",
                                           reader: LibraryReading.reader, watch: configuration.watchLibrary,
                                           followLinksOut: configuration.libraryFollowsLinksOut)
            library.start()
            control.library = library
        }
        control.host = configuration.controlHost
        control.port = configuration.controlPort
        control.hostNames = HostNames(extra: configuration.allowedHosts + [configuration.controlHost])
        control.pages = start.pages
        // The registry is swift-metrics' backend before the API's first request makes its metrics.
        _ = CoordinatorMetrics.shared
        control.metrics = { [self] in
            let views = await house.rooms()
            let zones = await house.zones()
            return (HouseMetrics.contentType, HouseMetrics.exposition { sampleMetrics(rooms: views, zones: zones) })
        }
        control.tls = certificate.map { .init(certificateChainPEM: $0.certificatePEM, privateKeyPEM: $0.privateKeyPEM) }
        let scheme = certificate == nil ? "http" : "https"
        let log = self.log
        let shownHost = control.host == "0.0.0.0" ? "localhost" : control.host
        let announcer = Announcer(coordinator: self)
        defer { announcer.stop() }
        let api = try ControlServer(service: house, configuration: control).service { port in
            log.info("control API on \(scheme)://\(shownHost):\(port)/api/v1" + (certificate.map { " (TLS, certificate pin \($0.pin))" } ?? ""))
            // Never the token: logs are read by more people than the house's owner.
            log.info("web remote: \(scheme)://\(shownHost):\(port)/ (`tutti ctl remote` prints it with the token)  lyrics: \(scheme)://\(shownHost):\(port)/lyrics")
            onControlPort(port)
            announcer.start(port: port, tls: certificate != nil, token: house.token)
        }

        var sendspin: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let listen = configuration.sendspinListen {
            let rooms = SendspinRooms(configuration: .init(unpairedAccess: configuration.sendspinUnpairedAccess, name: configuration.houseName),
                                      identity: try SendspinRooms.identity(in: store.directory), directory: store.directory,
                                      house: house, taps: senders.taps, clock: clock)
            await house.attachSendspin(rooms)
            let shown = listen.host == "0.0.0.0" ? "localhost" : listen.host
            let unpaired = configuration.sendspinUnpairedAccess
            let listener = try SendspinListener(configuration: .init(host: listen.host, port: listen.port)) { await rooms.serve($0) }.service { port in
                log.info("Sendspin server on ws://\(shown):\(port)/sendspin (players \(unpaired ? "admitted without pairing" : "admitted once paired"))")
                announcer.sendspin(port: port)
            }
            sendspin.append(.init(service: Dispensable(service: Explained(
                service: listener, what: "cannot serve Sendspin on \(listen.host):\(listen.port)",
                hint: "is Music Assistant or another server on that port? choose another with --sendspin-listen, or off"))))
            if configuration.announce {
                sendspin.append(.init(service: TaskService(name: "sendspin-discovery") { await rooms.discover() }))
            }
        }

        let server = clockServer
        let clockStop = stopFlag
        var group = ServiceGroupConfiguration(services: [
            .init(service: ThreadService(name: "tutti-clock", loop: { server.run(until: clockStop) }, stop: { clockStop.set() })),
            .init(service: ThreadService(name: "tutti-senders", loop: { senders.waitUntilStopped() }, stop: { senders.stopAll() })),
            .init(service: HouseService(house: house)),
            .init(service: Explained(service: api, what: "cannot serve the control API on \(control.host):\(control.port)",
                                     hint: "is another coordinator running? choose another with --control-listen")),
        ] + sendspin, gracefulShutdownSignals: [.sigterm, .sigint], logger: .services)
        group.maximumGracefulShutdownDuration = .seconds(5)
        let services = ServiceGroup(configuration: group)
        shutdown.set(services)
        log.info("clock service on port \(clockPort); streaming \(streamProtection) to \(destinationSummary)")
        try await services.run()
    }
}

extension Coordinator {
    /// The house on this coordinator's shells, started as the command line says: the rooms'
    /// messenger on the clock port, the house, a sender per zone (`turning`: each on a
    /// thread of its own, or turned by the caller, as a simulated house does), and the
    /// clock service's reports going to the house. Nothing runs yet but the senders' threads.
    func assemble(_ start: Start, store: StateStore, turning: CoordinatorSenders.Turning = .threads) async throws
        -> (house: House, senders: CoordinatorSenders) {
        let messenger = RoomMessenger(socket: clockSocket, clock: clock, keys: keyring)
        let house = try House(store: store, messenger: messenger, version: "tutti 0.4", name: configuration.houseName,
                              lyricsFolder: configuration.lyricsDirectory, replayGain: configuration.replayGain, clock: clock, keyring: keyring)
        await house.setLiveLatency(floor: Int64(configuration.latencyMilliseconds) * 1_000_000,
                                   cap: configuration.maxLatencyMilliseconds.map { Int64($0) * 1_000_000 })
        var playerConfiguration = Player.Configuration()
        playerConfiguration.encoder = configuration.encoder
        playerConfiguration.latency = Int64(configuration.latencyMilliseconds) * 1_000_000
        playerConfiguration.lookahead = Int64(configuration.lookaheadMilliseconds) * 1_000_000
        playerConfiguration.cname = cname
        // Raw PCM from a regular file only where the coordinator was started with it.
        let pcmFiles = Set((start.tracks ?? []).filter(LiveInput.isLive))
        // One sender per zone; the default zone's first.
        let open = ports.openSource ?? { try openFrameSource($0, pcmFiles: $1) }
        let senders = CoordinatorSenders(streams: streams, clock: clock, configuration: playerConfiguration, codecs: configuration.codecs,
                                         opener: { try open($0, pcmFiles) }, makeEncoder: ports.makeEncoder,
                                         onDefaultEpoch: { [weak self] packetizer in self?.writeSDP(packetizer) }, turning: turning,
                                         taps: ZoneTaps(keeping: configuration.sendspinListen != nil))
        do {
            try await house.attach(senders)
            clockServer.onReport = { report, address, member, time in house.tell(.report(report, from: address, member: member, at: time)) }
            clockServer.onEnrolled = { address, member in messenger.enrolled(address, as: member) }
            if let tracks = start.tracks {
                house.library.suggest(start.titles)
                try await house.replaceQueue(with: tracks, loopMode: start.loopMode ?? .once, titles: PlaylistParser.Entry.titles(start.titles))
            } else if let mode = start.loopMode {
                try await house.setLoopMode(mode)
            }
        } catch {
            senders.stopAll()
            throw error
        }
        return (house, senders)
    }

    /// Brings the sampled metrics up to date, for a scrape.
    func sampleMetrics(rooms: [RoomView], zones: [ZoneView]) {
        let metrics = CoordinatorMetrics.shared
        metrics.packetsSent.update(total: packetsSent)
        let r = streams.retransmissions
        metrics.retransmissionsAsked.update(total: r.requested)
        metrics.retransmissionsSent.update(total: r.resent)
        metrics.retransmissionsRefused.update(total: r.refused + r.unknown)
        metrics.subscribers.set(Double(streams.subscriberCount(at: clock.nanosecondsNow())))
        metrics.sample(rooms: rooms, zones: zones)
    }
}

/// The coordinator's announcement on the network, made once the control API's port is
/// known, withdrawn when the house stops.
final class Announcer: Sendable {
    private let publisher = Mutex<Discovery.Publisher?>(nil)
    private let renewal = Mutex<Task<Void, Never>?>(nil)
    /// Services announced beside the coordinator's own, once they listen.
    private let services = Mutex<[Discovery.Service]>([])
    private let coordinator: Coordinator

    init(coordinator: Coordinator) {
        self.coordinator = coordinator
    }

    /// `token`: the house token, which keys the controllers' proof.
    func start(port: Int, tls: Bool, token: String) {
        let configuration = coordinator.configuration
        guard configuration.announce else { return }
        let records = records(port: port, tls: tls, token: token)
        do {
            // Under the services' lock: a service that comes meanwhile is in the first
            // announcement or added to the publisher, never lost between the two.
            try services.withLock { (services) throws(Discovery.Failure) in
                let publisher = try Discovery.Publisher(.init(name: configuration.houseName, clockPort: coordinator.clockPort,
                                                              records: records, also: services))
                self.publisher.withLock { $0 = publisher }
            }
        } catch .noDaemon {
            coordinator.log.warning("not announced on the network: avahi-daemon is not running; followers, screens and "
                                    + "`tutti ctl` elsewhere need this coordinator's address")
            return
        } catch {
            coordinator.log.warning("not announced on the network: \(error)")
            return
        }
        // The proofs are renewed every hour: finders take one no older than a day.
        let renewing = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Discovery.renewal))
                guard let self, !Task.isCancelled else { return }
                let records = self.records(port: port, tls: tls, token: token)
                self.publisher.withLock { $0?.update(records: records) }
            }
        }
        renewal.withLock { $0 = renewing }
    }

    /// What the coordinator announces, with the proofs that it is the house's made now
    /// (docs/security.md, "Discovery").
    private func records(port: Int, tls: Bool, token: String) -> [String: String] {
        let configuration = coordinator.configuration
        var records = [
            "v": "1", "control": String(port), "tls": tls ? "1" : "0", "house-key": coordinator.houseKey.fingerprint,
            "multicast": configuration.multicast?.description ?? "off", "sealed": configuration.sealStream ? "1" : "0",
            "addresses": Self.addresses(listening: configuration.clockListen),
            "t": String(SystemClock.wallNanoseconds() / 1_000_000_000),
        ]
        let message = Discovery.proofMessage(clockPort: coordinator.clockPort, records: records)
        records["proof"] = DiscoveryProof(houseKey: coordinator.houseKey).tag(message)
        records["proof-token"] = DiscoveryProof(token: token).tag(message)
        return records
    }

    /// The Sendspin server listens on `port`: announced for players that connect to it
    /// (client-initiated: the spec's `_sendspin-server._tcp`, its path in the TXT record).
    func sendspin(port: Int) {
        guard coordinator.configuration.announce, let port = UInt16(exactly: port) else { return }
        let service = Discovery.Service(type: "_sendspin-server._tcp", port: port,
                                        records: ["path": "/sendspin", "name": coordinator.configuration.houseName])
        services.withLock { services in
            services.append(service)
            publisher.withLock { $0?.add(service) }
        }
    }

    func stop() {
        renewal.withLock { $0?.cancel(); $0 = nil }
        publisher.withLock { $0?.stop(); $0 = nil }
    }

    /// Where clients may find this coordinator (its clock service's address, or this
    /// machine's IPv4 addresses but loopback, eight at most), comma-separated: proven with
    /// the rest, so that an announcement replayed from another host proves nothing.
    static func addresses(listening: SocketAddress) -> String {
        let all = listening.address != 0 ? [listening.address] : SocketAddress.interfaceAddresses().filter { $0 >> 24 != 127 }
        return all.prefix(8).map { SocketAddress(address: $0, port: 0).host }.joined(separator: ",")
    }
}
