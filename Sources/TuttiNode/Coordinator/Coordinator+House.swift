import Foundation
import TuttiAPI
import TuttiCodecs
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiSecurity

extension Coordinator {
    /// What the command line asks the house to do at start.
    public struct Start: Sendable {
        /// Tracks that replace the queue and play at once; nil keeps the saved queue, paused.
        public var tracks: [String]?
        public var loopMode: LoopMode?
        public var pages: [String: ControlServer.Page] = [:]
        public init(tracks: [String]?, loopMode: LoopMode?) {
            self.tracks = tracks
            self.loopMode = loopMode
        }
    }

    /// Runs the house until `stop()`: the clock service, the player, the control API and
    /// the house's clock, each on its own thread (the API on Swift concurrency).
    public func runHouse(_ start: Start, onControlPort: @escaping @Sendable (Int) -> Void = { _ in }) throws {
        let store = try StateStore(directory: configuration.stateDirectory)
        // A certificate that cannot be used stops the start here, before anything runs.
        let certificate: ControlCertificate? = switch configuration.controlTLS {
        case .off: nil
        case .own: try store.controlCertificate()
        case let .files(chain, key): try StateStore.readCertificate(certificate: chain, key: key)
        }
        let messenger = RoomMessenger(socket: clockSocket, clock: clock, key: houseKey.clockPort)
        let house = try House(store: store, messenger: messenger, version: "tutti 0.4", lyricsFolder: configuration.lyricsDirectory)
        var playerConfiguration = Player.Configuration()
        playerConfiguration.encoder = configuration.encoder
        playerConfiguration.latency = Int64(configuration.latencyMilliseconds) * 1_000_000
        playerConfiguration.cname = cname
        let player = try Player(
            configuration: playerConfiguration, ssrc: ssrc, stopFlag: stopFlag,
            send: { [self] packet in send(packet) }, sendReport: { [self] report in send(report) },
            onEpoch: { [self] packetizer in writeSDP(packetizer) })
        player.delegate = house
        house.player = player
        clockServer.onReport = { report, address, time in house.received(report, from: address, at: time) }

        let server = clockServer
        startThread("tutti-clock") { server.run() }
        startThread("tutti-player") { player.run() }
        let stopFlag = self.stopFlag
        startThread("tutti-house") { house.tick(stopFlag: stopFlag) }

        var control = ControlServer.Configuration()
        control.host = configuration.controlHost
        control.port = configuration.controlPort
        control.pages = start.pages
        control.tls = certificate.map { .init(certificateChainPEM: $0.certificatePEM, privateKeyPEM: $0.privateKeyPEM) }
        let scheme = certificate == nil ? "http" : "https"
        let api = ControlServer(service: house, configuration: control)
        let failure = ControlFailure()
        let log = self.log
        let shownHost = control.host == "0.0.0.0" ? "localhost" : control.host
        let listen = "\(control.host):\(control.port)"
        Task {
            do {
                try await api.run { port in
                    log.info("control API on \(scheme)://\(shownHost):\(port)/api/v1" + (certificate.map { " (TLS, certificate pin \($0.pin))" } ?? ""))
                    // Never the token: logs are read by more people than the house's owner.
                    log.info("web remote: \(scheme)://\(shownHost):\(port)/ (`tutti ctl remote` prints it with the token)  lyrics: \(scheme)://\(shownHost):\(port)/lyrics")
                    onControlPort(port)
                }
            } catch {
                failure.set("cannot serve the control API on \(listen): \(error) (is another coordinator running? choose another with --control-listen)")
                stopFlag.set()
            }
        }
        log.info("clock service on port \(clockPort); streaming \(streamProtection) to \(destinationSummary)")
        if let tracks = start.tracks {
            house.replaceQueue(with: tracks, loopMode: start.loopMode ?? .once)
        } else if let mode = start.loopMode {
            house.setLoopMode(mode)
        }
        while !stopFlag.isSet { Thread.sleep(forTimeInterval: 0.05) }
        let done = DispatchSemaphore(value: 0)
        Task {
            await api.stop()
            done.signal()
        }
        _ = done.wait(timeout: .now() + 2)
        house.saveOnExit()
        if let message = failure.message { throw StateError(message) }
    }
}

/// Why the control API could not serve, if it could not.
final class ControlFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var text: String?
    func set(_ message: String) { lock.withLock { text = message } }
    var message: String? { lock.withLock { text } }
}

extension House {
    /// The command line named tracks: they become the queue, and play.
    func replaceQueue(with tracks: [String], loopMode: LoopMode) {
        warm(tracks)
        locked {
            execute(transport.clear(now: now))
            transport.setLoopMode(loopMode)
            transport.add(tracks)
            execute((try? transport.handle(.play, now: now)) ?? [])
            saveLocked()
            publishQueueLocked()
        }
    }

    /// Saves where the house is, so that a restart resumes there.
    func saveOnExit() {
        locked { saveLocked() }
    }
}
