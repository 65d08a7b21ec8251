import Foundation
import Synchronization
import TuttiAPI
import TuttiCodecs
import TuttiControl
import TuttiCore
import TuttiDiscovery
import TuttiMedia
import TuttiNet
import TuttiSecurity
import TuttiSendspin

/// The coordinator's Sendspin server: every Sendspin player that connects (a Music Assistant
/// speaker, an ESPHome device, the reference `sendspin daemon`) becomes a room of the house.
/// Its session is opened under Noise (its pairing's key, or the published sentinel where
/// the house allows unpaired access); then it gets its zone's audio from the zone's tap, in
/// PCM, stamped with the coordinator time at which the tutti rooms of its zone hear it,
/// and answers its clock exchanges with that clock. It reports to the house once a second
/// as a room (`RoomReport.via` = `sendspin`), and the house's settings for it (volume,
/// mute, zone) come back through `deliver`.
final class SendspinRooms: Sendable {
    struct Configuration: Sendable {
        /// Players admitted without pairing (the sentinel key): off unless the house allows it.
        var unpairedAccess = false
        /// The server's name in its hello.
        var name = "tutti"
    }

    let configuration: Configuration
    let identity: SendspinIdentity
    let house: House
    let taps: ZoneTaps
    let clock: any MonotonicClock
    private let log = Log("sendspin")
    /// The open sessions by room key.
    private let peers = Mutex<[String: SendspinPeer]>([:])
    /// The players this server is connecting or connected to (their URLs).
    private let connecting = Mutex<Set<String>>([])
    /// Sessions refused (not admitted, or broken), for the log's rate.
    private let refused = Atomic<Int>(0)
    /// The players paired with the house.
    let pairings: SendspinPairings
    /// Players connected that wait to be paired, by id.
    private let waiting = Mutex<[String: Waiting]>([:])
    /// One-time keys from pairing tokens, by the id of the player that made each: it opens
    /// its next session under it, and pairs (kept until then, in memory).
    private let staged = Mutex<[String: [UInt8]]>([:])
    struct Waiting: Sendable {
        let peer: SendspinPeer
        let name: String
        let methods: [String]
    }

    init(configuration: Configuration, identity: SendspinIdentity, directory: String, house: House, taps: ZoneTaps, clock: any MonotonicClock) {
        self.configuration = configuration
        pairings = SendspinPairings(directory: directory, log: Log("sendspin"))
        self.identity = identity
        self.house = house
        self.taps = taps
        self.clock = clock
    }

    /// The server's long-term key, kept in the state folder (made on first start).
    static func identity(in directory: String) throws -> SendspinIdentity {
        let path = directory + "/sendspin-identity"
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            guard let key = Base64URL.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == X25519.keySize else {
                throw StateError("\(path) is not a Sendspin identity (a base64url X25519 private key); move it aside to make a new one "
                                            + "(players paired with this house then pair again)")
            }
            return SendspinIdentity(privateKey: key)
        }
        let identity = SendspinIdentity.generate()
        try AtomicFile.write(Data((Base64URL.encode(identity.privateKey) + "\n").utf8), to: path, permissions: 0o600)
        return identity
    }

    /// Players that wait for servers (they announce `_sendspin._tcp`: ESPHome speakers, the
    /// reference player without `--url`), found by mDNS every `every` seconds and connected
    /// to, each once at a time; only where the house admits unpaired players (the player
    /// would be refused otherwise). Until cancelled; without avahi-daemon it says so once and
    /// keeps looking.
    func discover(every: Double = 10) async {
        var toldNoDaemon = false
        while !Task.isCancelled {
            let clock = self.clock
            let found: [Discovery.Found]
            do {
                found = try await Blocking.run(on: Self.browsing) { () throws(Discovery.Failure) in
                    try Discovery.browse(type: "_sendspin._tcp", timeout: 3, clock: clock)
                }
                toldNoDaemon = false
            } catch {
                if !toldNoDaemon { log.info("not looking for Sendspin players on the network: \(error)") }
                toldNoDaemon = true
                found = []
            }
            for player in found {
                let path = player.records["path"].map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/sendspin"
                let url = "ws://\(player.host):\(player.clockPort)\(path)"
                guard connecting.withLock({ $0.insert(url).inserted }) else { continue }
                log.info("Sendspin player '\(player.name.prefix(64))' found on the network at \(url): connecting")
                let host = player.host
                Task { [self] in
                    do {
                        try await SendspinListener.connect(url: url, peer: host) { await self.serve($0) }
                    } catch {
                        note("cannot connect to the Sendspin player at \(url): \(error)")
                    }
                    connecting.withLock { _ = $0.remove(url) }
                }
            }
            try? await Task.sleep(nanoseconds: UInt64(every * 1e9))
        }
    }
    private static let browsing = DispatchQueue(label: "tutti.sendspin-browse")

    /// The house's settings for a Sendspin room (any thread).
    func deliver(_ key: String, _ settings: RoomSettings) {
        guard let peer = peers.withLock({ $0[key] }) else { return }
        Task { await peer.apply(settings) }
    }

    /// Serves one connection until it ends.
    func serve(_ socket: WebSocketSession) async {
        let now: @Sendable () -> Int64 = { [clock] in clock.nanosecondsNow() / 1_000 }
        // The opening, in the clear: client/init within 10 s, then Noise's second message.
        let transport: SendspinTransport
        let clientID: String
        let paired: Bool
        let admission: SendspinPSK
        do {
            var handshake = SendspinServerHandshake(identity: identity)
            guard case let .text(first)? = try await Self.within(10, { try await socket.next() }) else { return }
            // A paired player opens under its key; any other under the published one, and
            // then plays only where the house admits unpaired players: else it waits to be
            // paired (`pair`), with no role and no audio.
            let replies = try handshake.receiveClientInit(first) { id in
                pairings.psk(for: id) ?? staged.withLock({ $0[id] }).map { SendspinPSK(key: $0, category: .pairing) } ?? .sentinel
            }
            for text in replies { try await socket.send(.text(text)) }
            guard case let .text(second)? = try await Self.within(10, { try await socket.next() }) else { return }
            transport = try handshake.receiveHandshake(second)
            clientID = handshake.clientID ?? "?"
            paired = handshake.psk?.category == .longTerm
            admission = handshake.psk ?? .sentinel
        } catch {
            note("a Sendspin session from \(socket.peer) failed in its opening: \(error)")
            await socket.close(code: 1008, reason: "handshake")
            return
        }
        let session = SendspinServerSession(serverName: configuration.name, encoders: [
            "flac": { format, frames in
                try FLACEncoder(sampleRate: format.sample_rate, channels: format.channels, bitDepth: format.bit_depth, blockSize: frames)
            },
            "opus": { format, frames in try SendspinOpusEncoder(channels: format.channels, frames: frames) },
        ], playable: paired || (configuration.unpairedAccess && admission.category == .sentinel))
        let peer = SendspinPeer(socket: socket, transport: transport, session: session,
                                clientID: clientID, admission: admission, rooms: self)
        await peer.run(now: now)
        if let key = await peer.key { peers.withLock { if $0[key] === peer { $0[key] = nil } } }
        waiting.withLock { if $0[clientID]?.peer === peer { $0[clientID] = nil } }
    }

    /// A player that may not play yet said hello: it waits to be paired.
    func waits(_ peer: SendspinPeer, clientID: String, name: String, methods: [String], from address: String) {
        waiting.withLock { $0[clientID] = Waiting(peer: peer, name: name, methods: methods) }
        let how = methods.isEmpty ? "it offers no pairing by code tutti runs" : "pair it with `tutti ctl sendspin pair '\(name)'`"
        note("Sendspin player '\(name)' (\(clientID.prefix(12))…) from \(address) is not paired, and the house does not allow unpaired "
             + "players: it waits to be paired (\(how))")
    }

    /// A waiting player was paired: its key is kept, and it plays from now on.
    func paired(_ clientID: String, name: String, psk: [UInt8], method: String) throws {
        try pairings.add(.init(client_id: clientID, name: name, psk: Base64URL.encode(psk), method: method,
                               paired_at: Int64(SystemClock.unixSeconds())))
        waiting.withLock { _ = $0.removeValue(forKey: clientID) }
        staged.withLock { _ = $0.removeValue(forKey: clientID) }
        let how = method == "dynamic_pairing_code" ? "the code it showed" : method == "pairing_psk" ? "its token" : "its code"
        log.info("Sendspin player '\(name)' (\(clientID.prefix(12))…) paired by \(how)")
    }

    func players() -> SendspinPlayersView {
        let waiting = waiting.withLock { $0 }
        let paired = pairings.all.map { record in
            SendspinPlayersView.Player(name: record.name, id: record.client_id, state: "paired", methods: [], pairedBy: record.method,
                                       pairedAt: record.paired_at)
        }
        let pending = waiting.sorted { $0.key < $1.key }.map { id, entry in
            SendspinPlayersView.Player(name: entry.name, id: id, state: "waiting", methods: entry.methods)
        }
        return SendspinPlayersView(players: pending + paired)
    }

    /// Forgets a paired player (by id or name): its sessions end; it waits to be paired again.
    func unpair(_ player: String) async throws(ControlError) -> SendspinPlayersView {
        let records = pairings.all
        guard let record = records.first(where: { $0.client_id == player }) ?? records.first(where: { $0.name == player }) else {
            throw .notFound("no Sendspin player '\(player)' is paired (`tutti ctl sendspin` lists those that are)")
        }
        do {
            _ = try pairings.remove(record.client_id)
        } catch {
            throw .conflict("the pairings could not be written (\(error)): '\(record.name)' stays paired")
        }
        log.info("Sendspin player '\(record.name)' (\(record.client_id.prefix(12))…) is no longer paired")
        for peer in peers.withLock({ Array($0.values) }) where await peer.clientID == record.client_id {
            await peer.end(reason: "unpaired")
        }
        return players()
    }

    /// Pairs a waiting player (by name or id): starts the attempt, or gives it the code typed.
    func pair(_ request: SendspinPairRequest) async throws(ControlError) -> SendspinPairAnswer {
        if let text = request.token {
            guard let token = SendspinPairing.decodePSKToken(text) else {
                throw .badRequest("not a Sendspin pairing token (SP:0 and 103 letters and digits, as the player gives it)")
            }
            staged.withLock { staged in
                staged[token.clientID] = token.psk
                if staged.count > 64, let other = staged.keys.first(where: { $0 != token.clientID }) { staged[other] = nil }
            }
            // A player that waits now moves its session onto the token's key and pairs;
            // another pairs when it next connects.
            if let entry = waiting.withLock({ $0[token.clientID] }) {
                return try await entry.peer.pair(token: token.psk)
            }
            log.info("a Sendspin pairing token for player \(token.clientID.prefix(12))… is kept: it pairs when it connects")
            return SendspinPairAnswer(state: "staged", message: "the player \(token.clientID.prefix(12))… pairs when it next connects")
        }
        guard let player = request.player else { throw .badRequest("say which player (its name or id), or give its pairing token") }
        let found = waiting.withLock { waiting in
            waiting.first { $0.key == player } ?? waiting.first { $0.value.name == player }
        }
        guard let (id, entry) = found else {
            throw .notFound("no Sendspin player '\(player)' waits to be paired (`tutti ctl sendspin` lists those that do)")
        }
        return try await entry.peer.pair(code: request.code, clientID: id)
    }

    /// A player's hello: its room's key (its name, unless a tutti room has it).
    func joined(_ peer: SendspinPeer, name: String, from address: String) async -> String {
        let taken = await house.rooms().filter { $0.connected && $0.report?.via != RoomReport.sendspin }.map(\.key)
        var key = RoomReport.isValidName(name) ? name : "Sendspin player"
        if taken.contains(key) { key = String(key.prefix(50)) + " (Sendspin)" }
        let replaced = peers.withLock { peers in
            defer { peers[key] = peer }
            return peers[key]
        }
        if let replaced { await replaced.end(reason: "another session of the same room") }
        log.info("Sendspin player '\(key)' joined from \(address)")
        return key
    }

    func report(_ report: RoomReport, from address: String) {
        // The registry shows where a room is; an IPv6 player's address shows as 0.0.0.0:0.
        let socketAddress = (try? SocketAddress(host: address, port: 0)) ?? SocketAddress(address: 0, port: 0)
        house.tell(.report(report, from: socketAddress, member: 0, at: clock.nanosecondsNow()))
    }

    func zone(_ id: String) async -> (name: String, playing: Bool) {
        let zones = await house.zones()
        let zone = zones.first { $0.id == id } ?? zones.first
        return (zone?.name ?? "tutti", zone?.nowPlaying.state == .playing)
    }

    /// What a zone plays, for a session's metadata and controller roles.
    func nowPlaying(_ zone: String) async -> NowPlaying? { try? await house.nowPlaying(zone: zone) }

    /// An item's cover, as its file carries it.
    func artwork(itemID: Int?, zone: String) async -> [UInt8]? {
        guard let itemID else { return nil }
        return (try? await house.artwork(itemID: itemID, zone: zone))??.data
    }

    /// A controller's command, carried out on its zone as the control API would.
    func command(_ command: SendspinControllerCommand, zone: String, from who: String) async {
        do throws(ControlError) {
            switch command {
            case .play: _ = try await house.transport(.play, zone: zone)
            case .pause: _ = try await house.transport(.pause, zone: zone)
            case .stop: _ = try await house.transport(.stop, zone: zone)
            case .next: _ = try await house.transport(.next, zone: zone)
            case .previous: _ = try await house.transport(.previous, zone: zone)
            case let .volume(level): try await house.setGroup(volume: Double(level) / 100, muted: nil, zone: zone)
            case let .mute(muted): try await house.setGroup(volume: nil, muted: muted, zone: zone)
            case let .repeatMode(mode): try await house.setLoopMode(mode == "off" ? .once : mode == "one" ? .one : .all, zone: zone)
            case let .shuffle(on): try await house.setLoopMode(on ? .shuffle : .all, zone: zone)
            case let .seek(ms): _ = try await house.transport(.seek(to: MediaFrames(ms * 48)), zone: zone)
            case let .seekRelative(ms): _ = try await house.transport(.skip(by: MediaFrames(ms * 48)), zone: zone)
            }
            log.info("Sendspin controller '\(who)': \(command)")
        } catch {
            log.info("Sendspin controller '\(who)': \(command) refused: \(error)")
        }
    }

    func note(_ text: String) {
        let count = refused.wrappingAdd(1, ordering: .relaxed).newValue
        if count <= 10 || count % 100 == 0 { log.warning(text + (count > 10 ? " (\(count) so far)" : "")) }
    }

    func info(_ text: String) { log.info(text) }

    /// `body`'s result, or nil after `seconds`.
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T?) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask { try await body() }
            tasks.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            let first = try await tasks.next() ?? nil
            tasks.cancelAll()
            return first
        }
    }
}

/// One Sendspin player's session: its reader (the player's messages), its writer (every
/// message sealed in order, one task), its zone's audio, and its reports to the house.
actor SendspinPeer {
    private let socket: WebSocketSession
    private let transport: Mutex<SendspinTransport>
    private var session: SendspinServerSession
    let clientID: String
    private unowned let rooms: SendspinRooms
    private let outgoing: AsyncStream<SendspinMessage>.Continuation
    private let queue: AsyncStream<SendspinMessage>
    /// Its room's key, once it said hello (a player); a remote's name (controller, metadata).
    private(set) var key: String?
    private var remote: String?
    /// The zone it plays, the tap it listens to, and the settings version applied.
    private var zone = ZoneInfo.defaultID
    private var listening: (tap: ZoneTap, id: UInt64)?
    private var applied: UInt32 = 0
    /// A cut whose clear goes at its time (coordinator µs), and the audio made meanwhile.
    private var clearAt: Int64?
    private var afterCut: [([Float], Int64)] = []
    private var lastAudio: Int64 = 0
    /// How far ahead of being heard its chunks went, over the last seconds (coordinator ns):
    /// less its required lead, its headroom, which fits a live zone's latency to it as to a
    /// tutti room's (`LatencyTuner`).
    private var leads = LeadWatch()
    /// From when (µs) the leads count: not the replay of what was sent before it listened.
    private var leadsFrom: Int64 = 0
    /// The room's output delay (µs): its chunks go stamped that much earlier.
    private var outputDelay: Int64 = 0
    private var toldShort = false
    private var ended = false
    private var chunks = 0
    /// A player that waits to be paired: its name, the attempt under way (and how many
    /// there were), a code given before the player asked for it (a static code), and the
    /// re-handshake onto its new key once paired, while which what goes out waits.
    private var helloName = ""
    private var pairing: SendspinPairingServer?
    private var attempts: UInt32 = 0
    private var presetCode: String?
    private var rekey: SendspinServerHandshake?
    /// What the re-handshake under way leads to: playing (paired), or a pairing by token.
    private var afterRekey = AfterRekey.play
    private enum AfterRekey { case play, pairByToken }
    /// The key its session opened under (a pairing token's: it pairs at once).
    private let admission: SendspinPSK
    private var rekeyingSince: Int64?
    private var deferred: [SendspinMessage] = []

    init(socket: WebSocketSession, transport: SendspinTransport, session: SendspinServerSession, clientID: String, admission: SendspinPSK,
         rooms: SendspinRooms) {
        self.admission = admission
        self.socket = socket
        self.transport = Mutex(transport)
        self.session = session
        self.clientID = clientID
        self.rooms = rooms
        // Bounded: a player that stops reading does not hold the coordinator's memory.
        (queue, outgoing) = AsyncStream.makeStream(of: SendspinMessage.self, bufferingPolicy: .bufferingOldest(4_096))
    }

    /// Runs the session until the player goes (or breaks a rule, or the house ends it).
    func run(now: @escaping @Sendable () -> Int64) async {
        send(session.start())
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await self.write() }
            tasks.addTask { await self.read(now: now) }
            tasks.addTask { await self.tick(now: now) }
            await tasks.next()
            tasks.cancelAll()
        }
        stopListening()
        outgoing.finish()
        await socket.close()
    }

    func end(reason: String) async {
        ended = true
        outgoing.finish()
        await socket.close(code: 1000, reason: reason)
    }

    /// The house's settings: its zone (the tap it hears), volume and mute.
    func apply(_ settings: RoomSettings) {
        if settings.zoneID != zone || listening == nil {
            zone = settings.zoneID
            listen()
            send(session.clear(at: rooms.clock.nanosecondsNow() / 1_000))
        }
        send(session.set(volume: settings.volume, muted: settings.muted))
        // Its device's own delay (the house's setting, or a calibration's): its chunks are
        // stamped that much earlier, as a tutti follower writes that much earlier.
        let delay = Int64((min(max(settings.outputDelayMilliseconds, 0), 10_000) * 1_000).rounded())
        // (What was sent goes on as stamped: a change moves the next chunks, a step of the
        // change's size, as a follower's is.)
        outputDelay = delay
        applied = settings.version
    }

    private func send(_ messages: [SendspinMessage]) {
        // During a re-handshake nothing goes under the old key after its first message.
        if rekeyingSince != nil {
            deferred += messages
            return
        }
        for message in messages { outgoing.yield(message) }
    }

    private func write() async {
        for await message in queue {
            let frames: [[UInt8]]
            do {
                frames = try transport.withLock { try $0.seal(message) }
            } catch {
                rooms.note("a message to Sendspin room '\(key ?? clientID)' could not be sealed: \(error)")
                return
            }
            do {
                for frame in frames { try await socket.send(.binary(frame)) }
            } catch {
                return
            }
        }
    }

    private func read(now: @escaping @Sendable () -> Int64) async {
        while !ended {
            let message: WebSocketSession.Message?
            do { message = try await socket.next() } catch {
                // (Its session ended from this side, by the house: nothing it did.)
                if !ended, !(error is CancellationError) { rooms.note("Sendspin room '\(key ?? clientID)' broke the WebSocket's rules: \(error)") }
                return
            }
            guard let message else { return }
            let received = now()
            guard case let .binary(frame) = message else {
                rooms.note("Sendspin room '\(key ?? clientID)' sent text after its session was sealed: ended")
                return
            }
            do {
                guard let opened = try transport.withLock({ try $0.open(frame) }) else { continue }
                guard case let .text(text) = opened else { continue }  // no binary role of a player's is read yet
                if pairing != nil || rekey != nil, let type = SendspinPairing.type(of: text) {
                    if SendspinPairingServer.isPairingMessage(type) {
                        pairingMessage(text)
                        continue
                    }
                    if type == "noise/handshake", rekey != nil {
                        try await finishRekey(text)
                        continue
                    }
                }
                let (replies, events) = try session.receive(text, received: received, now: now)
                send(replies)
                for event in events { await heard(event) }
            } catch {
                rooms.note("Sendspin room '\(key ?? clientID)': \(error); session ended")
                return
            }
        }
    }

    private func heard(_ event: SendspinServerSession.Event) async {
        switch event {
        case let .hello(hello, format):
            guard session.playable else {
                helloName = hello.name
                if admission.category == .pairing {
                    startPairingByToken()
                    return
                }
                rooms.waits(self, clientID: clientID, name: hello.name, methods: hello.pairMethods, from: socket.peer)
                return
            }
            guard let format else {
                // A remote (controller, metadata): not a room; it follows the default zone.
                remote = hello.name
                rooms.info("Sendspin remote '\(hello.name)' joined from \(socket.peer) (\(hello.roles.joined(separator: ", ")))")
                return
            }
            key = await rooms.joined(self, name: hello.name, from: socket.peer)
            rooms.info("Sendspin room '\(key!)' gets \(format)" + (hello.roles.count > 1 ? " (and \(hello.roles.dropFirst().joined(separator: ", ")))" : ""))
            report()
        case let .command(command):
            await rooms.command(command, zone: zone, from: key ?? remote ?? clientID)
        case .state:
            report()
        case let .goodbye(reason):
            rooms.info("Sendspin \(key != nil ? "room" : "remote") '\(key ?? remote ?? clientID)' said goodbye (\(reason))")
            ended = true
            outgoing.finish()
        case .ignored:
            break
        }
    }

    // MARK: - Pairing

    /// The operator pairs this player: starts an attempt (dynamic: the player then shows a
    /// code, given in a second call; static: `code` is the player's), or gives the code the
    /// player shows to the attempt that waits for it.
    func pair(code: String?, clientID: String) throws(ControlError) -> SendspinPairAnswer {
        if var attempt = pairing {
            guard attempt.awaitsCode, let code else {
                throw .conflict("a pairing of '\(helloName)' is under way" + (attempt.awaitsCode ? ": give the code it shows" : ""))
            }
            do {
                let outcome = try attempt.enter(code: code)
                pairing = attempt
                take(outcome)
            } catch {
                if case .badCode = error { throw .badRequest(error.description) }
                throw .conflict(error.description)
            }
            return SendspinPairAnswer(state: "pairing", message: "pairing '\(helloName)' with the code given")
        }
        let methods = session.hello?.pairMethods ?? []
        let method: SendspinPairingServer.Method
        if code != nil, methods.contains(SendspinPairingServer.Method.staticCode.rawValue) {
            method = .staticCode
        } else if methods.contains(SendspinPairingServer.Method.dynamicCode.rawValue) {
            method = .dynamicCode
        } else if methods.contains(SendspinPairingServer.Method.staticCode.rawValue) {
            throw .badRequest("'\(helloName)' keeps a static pairing code (printed on it, or set by its owner): give it")
        } else {
            throw .conflict("'\(helloName)' offers no pairing by code that tutti runs (dynamic or static)")
        }
        attempts += 1
        let (hash, suite) = transport.withLock { ($0.handshakeHash, $0.suite) }
        let attempt = SendspinPairingServer(method: method, index: attempts, handshakeHash: hash, suite: suite)
        pairing = attempt
        presetCode = method == .staticCode ? code : nil
        send([.text(attempt.activation())])
        rooms.info("pairing Sendspin player '\(helloName)' by \(method == .dynamicCode ? "the code it shows" : "its code")")
        return method == .dynamicCode
            ? SendspinPairAnswer(state: "awaiting-code", message: "'\(helloName)' shows a pairing code (on its screen, in its log or "
                                 + "aloud): give it, `tutti ctl sendspin pair '\(helloName)' CODE`")
            : SendspinPairAnswer(state: "pairing", message: "pairing '\(helloName)' with the code given")
    }

    /// The operator gave this waiting player's token: its session moves onto the token's
    /// key (an in-band re-handshake), and it pairs by it.
    func pair(token psk: [UInt8]) throws(ControlError) -> SendspinPairAnswer {
        guard pairing == nil, rekey == nil else { throw .conflict("a pairing of '\(helloName)' is under way") }
        do {
            try beginRekey(onto: SendspinPSK(key: psk, category: .pairing), then: .pairByToken)
        } catch {
            throw .conflict("cannot move '\(helloName)' onto its token's key: \(error)")
        }
        return SendspinPairAnswer(state: "pairing", message: "pairing '\(helloName)' by its token")
    }

    private func startPairingByToken() {
        attempts += 1
        let (hash, suite) = transport.withLock { ($0.handshakeHash, $0.suite) }
        let key = afterRekey == .pairByToken ? tokenKey : admission.key
        let attempt = SendspinPairingServer(method: .pairingPSK, index: attempts, handshakeHash: hash, suite: suite, pairingPSK: key)
        pairing = attempt
        send([.text(attempt.activation())])
        rooms.info("pairing Sendspin player '\(helloName)' by its token")
    }
    private var tokenKey: [UInt8]?

    private func beginRekey(onto psk: SendspinPSK, then next: AfterRekey) throws {
        var handshake = SendspinServerHandshake(identity: rooms.identity)
        let (hash, suite) = transport.withLock { ($0.handshakeHash, $0.suite) }
        let first = try handshake.rekey(clientID: clientID, suite: suite, previousHash: hash, psk: psk)
        send([.text(first)])
        rekey = handshake
        afterRekey = next
        if next == .pairByToken { tokenKey = psk.key }
        rekeyingSince = rooms.clock.nanosecondsNow()
    }

    private func pairingMessage(_ text: String) {
        guard var attempt = pairing else { return }
        do {
            let outcome = try attempt.receive(text)
            pairing = attempt
            take(outcome)
        } catch {
            failed(error)
        }
    }

    private func take(_ outcome: SendspinPairingServer.Outcome) {
        switch outcome {
        case let .pending(message):
            rooms.info("Sendspin player '\(helloName)' holds the pairing until its owner allows it on the player (a button, its app)"
                       + (message.map { ": \"\($0)\"" } ?? ""))
        case let .send(texts):
            send(texts.map { .text($0) })
        case let .awaitingCode(texts):
            send(texts.map { .text($0) })
            if let code = presetCode, var attempt = pairing {
                presetCode = nil
                do {
                    let next = try attempt.enter(code: code)
                    pairing = attempt
                    take(next)
                } catch {
                    failed(error)
                }
            }
        case let .paired(psk, texts):
            let method = pairing?.method.rawValue ?? ""
            pairing = nil
            // Kept on disk before the player hears it is paired (it keeps its side then).
            do {
                try rooms.paired(clientID, name: helloName, psk: psk, method: method)
            } catch {
                send([.text(SendspinPairingServer.abort("user_cancelled"))])
                rooms.note("pairing Sendspin player '\(helloName)' failed: its key could not be kept (\(error))")
                return
            }
            send(texts.map { .text($0) })
            do {
                // Its session moves onto the new key at once (an in-band re-handshake); then
                // it plays.
                try beginRekey(onto: SendspinPSK(key: psk, category: .longTerm), then: .play)
            } catch {
                rooms.note("Sendspin player '\(helloName)' was paired, but \(error): its session ends (it opens again under its key)")
                ended = true
                outgoing.finish()
            }
        }
    }

    private func failed(_ error: SendspinPairingServer.Failure) {
        if case let .mismatch(abort) = error { send([.text(abort)]) }
        rooms.note("pairing Sendspin player '\(helloName)' failed: \(error)")
        pairing = nil
        presetCode = nil
    }

    /// The player's answer to the re-handshake: the session goes on under the new key, and
    /// the player is a room.
    private func finishRekey(_ text: String) async throws {
        guard var handshake = rekey else { return }
        let next = try handshake.receiveHandshake(text)
        transport.withLock { $0 = next }
        rekey = nil
        rekeyingSince = nil
        let held = deferred
        deferred = []
        if afterRekey == .pairByToken {
            // Its session is under the token's key now: the pairing begins.
            send(held)
            startPairingByToken()
            return
        }
        send(session.admit())
        send(held)
        guard let format = session.format else {
            remote = helloName  // a remote (controller, metadata), paired
            return
        }
        key = await rooms.joined(self, name: helloName, from: socket.peer)
        rooms.info("Sendspin room '\(key!)' gets \(format)")
        report()
    }

    /// Once a second its report; every 20 ms a cut's clear when it is due.
    private func tick(now: @escaping @Sendable () -> Int64) async {
        var reported: Int64 = 0, stated: Int64 = 0
        while !Task.isCancelled, !ended {
            try? await Task.sleep(nanoseconds: 20_000_000)
            let t = now()
            if let since = rekeyingSince, rooms.clock.nanosecondsNow() - since > 10_000_000_000 {
                rooms.note("Sendspin player '\(helloName)' did not answer the re-handshake onto its new key within 10 s: session ended "
                           + "(it opens under that key when it connects again)")
                ended = true
                outgoing.finish()
                return
            }
            if let at = clearAt, t >= at {
                clearAt = nil
                send(session.clear(at: t))
                let held = afterCut
                afterCut = []
                for (samples, heard) in held { audio(samples, heard: heard, at: t) }
            }
            if session.streaming, t - lastAudio > 2_000_000, clearAt == nil {
                // Nothing heard for 2 s past the last chunk: the zone stopped.
                send(session.end())
            }
            if t - stated >= 250_000, session.hearsState {
                // Its metadata and controller roles: what its zone plays, when that changed.
                stated = t
                if let playing = await rooms.nowPlaying(zone) {
                    send(session.state(metadata: Self.metadata(playing, at: t), controller: Self.controller(playing)))
                    if !session.artworkChannels.isEmpty { await artwork(playing, at: t) }
                }
            }
            if t - reported >= 1_000_000 {
                reported = t
                report()
                if key != nil || remote != nil {
                    let zone = await rooms.zone(self.zone)
                    send(session.join(group: self.zone, name: zone.name, playing: zone.playing))
                }
            }
        }
    }

    /// What its artwork channels show: the zone's cover, made to each channel's measure, when
    /// the cover (or the channels) changed; a channel with nothing to show is cleared.
    private func artwork(_ playing: NowPlaying, at t: Int64) async {
        let cover = playing.artworkURL ?? "none"
        guard cover != artworkShown || session.artworkChannels != artworkChannelsShown else { return }
        artworkShown = cover
        artworkChannelsShown = session.artworkChannels
        let picture = playing.artworkURL == nil ? nil : await rooms.artwork(itemID: playing.itemID, zone: zone)
        for (channel, config) in session.artworkChannels.enumerated() where config.source != "none" {
            var image: [UInt8] = []
            // (tutti has no pictures of artists: an artist channel stays clear.)
            if config.source == "album", let picture, let format = config.format.flatMap(CoverRenderer.Format.init(rawValue:)),
               let width = config.width, let height = config.height,
               let rendered = CoverRenderer.render(picture, width: width, height: height, format: format) {
                image = rendered
            }
            send(session.artwork(channel: channel, image: image, timestamp: t))
        }
    }
    private var artworkShown: String?
    private var artworkChannelsShown: [SendspinArtworkChannel] = []

    /// A zone's now playing as Sendspin's metadata, at `t` (µs of the coordinator's clock).
    static func metadata(_ np: NowPlaying, at t: Int64) -> SendspinMetadata {
        let elapsed = np.elapsed + (np.state == .playing ? Double(t * 1_000 - np.at) / 1e9 * np.rate : 0)
        return SendspinMetadata(timestamp: t, title: np.title ?? np.station, artist: np.artist, albumArtist: np.albumArtist, album: np.album,
                                year: np.year.flatMap { Int($0.prefix(4)) }, track: np.trackNumber,
                                elapsedMilliseconds: np.itemID == nil ? nil : Int64(max(0, elapsed) * 1_000),
                                durationMilliseconds: np.duration.map { Int64($0 * 1_000) }, playing: np.state == .playing)
    }

    static func controller(_ np: NowPlaying) -> SendspinControllerState {
        let repeatMode = switch np.loopMode {
        case .once: "off"
        case .one: "one"
        case .all, .shuffle: "all"
        }
        return SendspinControllerState(volume: np.volume / 100, muted: np.muted, repeat: repeatMode, shuffle: np.loopMode == .shuffle,
                                       durationMilliseconds: np.duration.map { Int64($0 * 1_000) })
    }

    private func report() {
        guard let key else { return }
        let t = rooms.clock.nanosecondsNow()
        let state: RoomState = session.streaming && lastAudio > t / 1_000 ? .playing : .waiting
        let required = session.state.requiredLeadMilliseconds ?? 0
        let headroom = leads.least(now: t).map { Double($0) / 1e6 - required }
        if let headroom, headroom < 0, !toldShort {
            toldShort = true
            rooms.info("Sendspin room '\(key)' needs its audio \(Int(required)) ms ahead and gets it \(Int(headroom + required)) ms ahead: "
                       + "it will stutter on a live input unless the zone's latency grows (--latency-ms, or --max-latency-ms to fit it)")
        }
        rooms.report(RoomReport(name: key, state: state, settingsVersion: applied,
                                outputDelayMilliseconds: session.state.outputDelayMilliseconds ?? 0, headroomMilliseconds: headroom,
                                via: RoomReport.sendspin),
                     from: socket.peer)
    }

    /// How far ahead of now a joining (or moved) room's first chunk is heard. What its zone
    /// had already sent ahead (up to the lookahead, 2 s) comes at once, and a player starts
    /// its output on the first chunks while the rest still come: they need time to spare.
    /// (At 50 ms, a reference player with 43 ms of output latency ran dry 51 ms after its
    /// first sound, for 34 ms, in 2 runs of 5 here.)
    static let joinLead: Int64 = 250_000_000

    private func listen() {
        stopListening()
        let tap = rooms.taps.tap(zone)
        let (events, into) = AsyncStream.makeStream(of: ZoneTap.Event.self, bufferingPolicy: .bufferingNewest(1_024))
        // What the zone's player sent ahead before this one listened comes first, from what
        // is heard `joinLead` from now.
        let now = rooms.clock.nanosecondsNow()
        let id = tap.listen(after: now + Self.joinLead) { into.yield($0) }
        listening = (tap, id)
        // Those come with little lead by their nature: the headroom counts what comes after.
        leadsFrom = now / 1_000 + 3_000_000
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.take(event)
            }
        }
        tapEnd = into
    }
    private var tapEnd: AsyncStream<ZoneTap.Event>.Continuation?

    private func stopListening() {
        if let (tap, id) = listening { tap.stopListening(id) }
        listening = nil
        tapEnd?.finish()
        tapEnd = nil
    }

    private func take(_ event: ZoneTap.Event) {
        let t = rooms.clock.nanosecondsNow() / 1_000
        switch event {
        case let .audio(samples, heard):
            let heard = heard / 1_000 - outputDelay
            if clearAt != nil {
                afterCut.append((samples, heard))
            } else {
                audio(samples, heard: heard, at: t)
            }
        case let .cut(at):
            // What was sent past the cut is void: cleared when the cut comes (before it, the
            // player still has audio to play).
            let at = at / 1_000
            guard at < lastAudio else { return }
            if at <= t { send(session.clear(at: t)) } else { clearAt = min(clearAt ?? at, at) }
        }
    }

    private func audio(_ samples: [Float], heard: Int64, at t: Int64) {
        let frames = Int64(samples.count / 2)
        lastAudio = max(lastAudio, heard + frames * 1_000_000 / Int64(SendspinServerSession.rate))
        if session.state.available == true, t >= leadsFrom { leads.arrived(presentation: heard * 1_000, now: t * 1_000) }
        chunks += 1
        send(session.audio(samples, channels: 2, heard: heard, now: t))
    }
}

/// FLAC for Sendspin players: one FLAC frame per chunk, STREAMINFO in `stream/start`.
extension FLACEncoder: SendspinEncoder {
    public var codecHeader: [UInt8]? { streamHeader }
}

/// Opus for Sendspin players: one packet per chunk (the house's frame, 20 ms), no header
/// (the player's decoder is made from `stream/start`'s rate and channels, as the reference
/// player's is), each chunk stamped its lookahead earlier. Over a WebSocket nothing is lost:
/// no in-band FEC, and the bitrate is a transparent one for music (128 kbit/s stereo, 64 mono).
final class SendspinOpusEncoder: SendspinEncoder, @unchecked Sendable {
    private let encoder: OpusFrameEncoder
    private let lock = Mutex(())

    init(channels: Int, frames: Int) throws(CodecError) {
        var settings = OpusFrameEncoder.Settings()
        settings.frameMilliseconds = Double(frames) * 1_000 / Double(AudioFormat.sampleRate)
        settings.channels = channels
        settings.bitrate = 64_000 * channels
        settings.inbandFEC = false
        settings.expectedLossPercent = 0
        encoder = try OpusFrameEncoder(settings: settings)
    }

    var codecHeader: [UInt8]? { nil }
    var delayFrames: Int { encoder.lookahead }

    func encode(_ samples: [Float]) throws -> [UInt8] {
        try lock.withLock { _ in try encoder.encode(samples) }
    }
}
