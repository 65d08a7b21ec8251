import FoundationEssentials
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiSecurity
import TuttiSendspin

/// A follower playing from a Sendspin server (`--sendspin ws://HOST:PORT/PATH`: Music
/// Assistant's, the reference `sendspin serve`, or a tutti coordinator's) instead of a tutti
/// coordinator's stream: the same playout, clock discipline and outputs, fed from the
/// session. Its clock exchanges are Sendspin's (`client/time`: the four instants, the
/// server's in µs); its audio chunks (PCM, or Opus decoded here: `--sendspin-codec`) become
/// 20 ms packets on the server's timeline,
/// a stream's start or clear a new epoch; the server's volume and mute become the room's
/// settings.
///
/// Two threads of its own beside the playout: one connects (again after a loss, backing
/// off up to 8 s), opens the session and reads it; one seals and sends (a send never waits
/// on the playout thread). The playout thread takes what they made between renders.
final class SendspinNetwork: PlayoutNetwork, @unchecked Sendable {
    /// What tutti's player decodes: PCM at 48 kHz, stereo first; asked for Opus, Opus first
    /// (a server that has no Opus sends PCM).
    static func formats(codec: String) -> [SendspinFormat] {
        let pcm = [24, 16].flatMap { depth in
            [2, 1].map { SendspinFormat(codec: "pcm", channels: $0, sampleRate: 48_000, bitDepth: depth) }
        }
        let opus = [2, 1].map { SendspinFormat(codec: "opus", channels: $0, sampleRate: 48_000, bitDepth: 16) }
        return codec == "opus" ? opus + pcm : pcm
    }
    static let frames = 960

    let address: BlockingWebSocket.Address
    private let codec: String
    private let clock: any MonotonicClock
    private let name: String
    private let identity: SendspinIdentity
    private let outputDelay: Int64
    /// The keys of the servers this room is paired with.
    private let keys: SendspinServerKeys
    private let log = Log("follower")

    private struct Mail {
        var inputs: [PlayoutInput] = []
        var outgoing: [Outgoing] = []
        /// The session in use (nil between connections).
        var link: Link?
        var stopping = false
    }
    /// What the sender's thread sends: a text, or a re-handshake's answer (sealed under the
    /// session's keys as they are, after which the session is under the new ones).
    private enum Outgoing {
        case text(String)
        case rekey(reply: String, next: SendspinTransport)
    }
    private final class Link: @unchecked Sendable {
        let socket: BlockingWebSocket
        let transport: Mutex<SendspinTransport>
        init(socket: BlockingWebSocket, transport: SendspinTransport) {
            self.socket = socket
            self.transport = Mutex(transport)
        }
    }
    private let inbox = Inbox(Mail())

    // The playout thread's.
    var zoneStream: UInt32?
    var otherZones: Int { 0 }
    var latest = PlayoutSnapshot.starting
    var unsealed: Int { 0 }
    var untagged: Int { 0 }
    private var exchanges = 0
    private var nextExchange: Int64 = 0

    init(address: BlockingWebSocket.Address, codec: String = "pcm", folder: String? = nil, name: String, identity: SendspinIdentity, outputDelay: Int64, clock: any MonotonicClock) {
        self.address = address
        self.codec = codec
        keys = SendspinServerKeys(folder: folder, room: name)
        self.name = name
        self.identity = identity
        self.outputDelay = outputDelay
        self.clock = clock
        startThread("tutti-sendspin") { [self] in read() }
        startThread("tutti-ss-send") { [self] in write() }
    }

    func stop() {
        let link = inbox.post { mail in
            mail.stopping = true
            return mail.link
        }
        if let link {
            if let frames = try? link.transport.withLock({ try $0.seal(.text(SendspinClientSession.goodbye)) }) {
                for frame in frames { try? link.socket.send(.binary(frame)) }
            }
            link.socket.close()
        }
    }

    // MARK: - The playout thread

    func turn(lock: ClockLock) -> Int64 {
        let now = clock.nanosecondsNow()
        guard inbox.withLock({ $0.link != nil }) else {
            exchanges = 0
            return now + 100_000_000
        }
        if now >= nextExchange {
            send(SendspinClientSession.time(now: now / 1_000))
            exchanges += 1
            nextExchange = now + ExchangeSchedule.interval(after: exchanges, uncertainty: lock.uncertainty, suspect: lock.suspect)
        }
        return nextExchange
    }

    func collect(_ apply: (PlayoutInput) -> Void) {
        let inputs = inbox.withLock { mail in
            defer { mail.inputs.removeAll(keepingCapacity: true) }
            return mail.inputs
        }
        for input in inputs { apply(input) }
    }

    func reportSoon() {}
    func sealFeedback(_ nack: [UInt8]) -> [UInt8]? { nil }

    private func send(_ text: String) {
        inbox.post { $0.outgoing.append(.text(text)) }
    }

    // MARK: - The sender's thread

    private func write() {
        while true {
            let (items, link, stopping) = inbox.wait(timeout: nil, until: { !$0.outgoing.isEmpty || $0.stopping }) { mail, _ in
                defer { mail.outgoing.removeAll() }
                return (mail.outgoing, mail.link, mail.stopping)
            }
            if stopping { return }
            guard let link else { continue }
            for item in items {
                do {
                    switch item {
                    case let .text(text):
                        let frames = try link.transport.withLock { try $0.seal(.text(text)) }
                        for frame in frames { try link.socket.send(.binary(frame)) }
                    case let .rekey(reply, next):
                        // Under the lock until the new keys are in: the reader opens the
                        // server's next message (sent once it has this answer) with them.
                        try link.transport.withLock { transport in
                            for frame in try transport.seal(.text(reply)) { try link.socket.send(.binary(frame)) }
                            transport = next
                        }
                    }
                } catch {
                    link.socket.close()  // the reader sees the end and connects again
                    break
                }
            }
        }
    }

    // MARK: - The reader's thread

    /// What the reader keeps of the stream: its format, its packets' timeline, the settings.
    private struct Reading {
        var session: SendspinClientSession
        var packetizer: StreamPacketizer
        var epoch: UInt32 = UInt32.random(in: 1...UInt32.max / 2)
        /// Samples (stereo) not yet in a packet, and the server µs at which the next chunk's
        /// first sample is due if it follows on.
        var pending: [Float] = []
        var expected: Double?
        var volume = 100
        var muted = false
        var settingsVersion: UInt32 = 0
        /// An Opus stream's decoder (made at its start; stereo, whatever the stream's channels).
        var opus: OpusFrameDecoder?
        /// Chunks that did not decode (each a packet's worth of silence).
        var undecodable = 0
        /// A pairing under way, and how many the session had.
        var pairing: SendspinPairingClient?
        var attempts: UInt32 = 0
    }

    private func read() {
        var backoff = 1.0
        var told = false
        while !inbox.withLock({ $0.stopping }) {
            do {
                try session()
                backoff = 1
                told = false
            } catch {
                if inbox.withLock({ $0.stopping }) { return }  // its own goodbye ended it
                if !told || backoff >= 8 {
                    log.warning("Sendspin server \(address): \(error); trying again in \(Int(backoff)) s")
                    told = true
                }
            }
            inbox.post { $0.link = nil }
            if inbox.withLock({ $0.stopping }) { return }
            _ = inbox.wait(timeout: Int64(backoff * 1e9)) { $0.stopping }
            backoff = min(backoff * 2, 8)
        }
    }

    private struct Ended: Error, CustomStringConvertible {
        let description: String
    }

    /// One session, from connecting to its end.
    private func session() throws {
        let socket = try BlockingWebSocket(address, timeout: 5, limit: SendspinTransport.maximumMessage + 64)
        defer { socket.close() }
        socket.setReadTimeout(10)
        var handshake = SendspinClientHandshake(identity: identity)
        try socket.send(.text(handshake.clientInit))
        guard case let .text(serverInit)? = try socket.receive() else { throw Ended(description: "no server/init") }
        try handshake.receiveServerInit(serverInit)
        guard case let .text(first)? = try socket.receive() else { throw Ended(description: "no Noise message") }
        // A server this room is paired with names the key it was given; any other, the
        // published sentinel (the room then plays where the server admits unpaired players,
        // or is paired: the server asks, and this follower's log shows the code).
        let serverID = handshake.serverID ?? ""
        let (reply, transport) = try handshake.receiveHandshake(first) { [keys] id, category in
            category == .longTerm ? keys.psk(server: serverID, id: id) : nil
        }
        try socket.send(.text(reply))
        let link = Link(socket: socket, transport: transport)
        socket.setReadTimeout(0)
        var reading = Reading(session: SendspinClientSession(name: name, formats: Self.formats(codec: codec)),
                              packetizer: StreamPacketizer(ssrc: UInt32.random(in: 1...UInt32.max), initialSequence: UInt16.random(in: 0...UInt16.max),
                                                           initialTimestamp: UInt32.random(in: 0...UInt32.max), origin: CoordinatorTime(nanoseconds: 0)))
        inbox.post { mail in
            mail.link = link
            mail.outgoing = [.text(reading.session.hello(bufferCapacity: 8 << 20, product: "tutti follower")),
                             .text(reading.session.state(available: true, volume: 100, muted: false, requiredLeadMilliseconds: 100))]
        }
        log.info("connected to the Sendspin server \(address) (server \(handshake.serverID?.prefix(12) ?? "?")…)")
        while let message = try socket.receive() {
            let arrived = clock.nanosecondsNow()
            guard case let .binary(frame) = message else { throw Ended(description: "a text after the session was sealed") }
            guard let opened = try link.transport.withLock({ try $0.open(frame) }) else { continue }
            let event: SendspinClientSession.Event
            switch opened {
            case let .text(text):
                event = try reading.session.receive(text)
                // Pairing's messages, and the re-handshake, are the session's to ignore and this
                // follower's to run.
                if case let .ignored(type) = event, SendspinPairingClient.isPairingMessage(type) || type == "noise/handshake" {
                    try pairing(text, type: type, serverID: serverID, link: link, into: &reading)
                    continue
                }
            case let .binary(bytes): event = reading.session.receive(binary: bytes)
            }
            if case let .pairing(method) = event {
                startPairing(method: method, link: link, into: &reading)
                continue
            }
            take(event, arrived: arrived, into: &reading)
        }
        if inbox.withLock({ $0.stopping }) { return }
        throw Ended(description: "the server closed the session")
    }

    // MARK: - Pairing

    /// The server asks to pair: by the code this follower shows (its log), the one method
    /// it runs.
    private func startPairing(method: String, link: Link, into reading: inout Reading) {
        guard method == "dynamic_pairing_code" else {
            log.warning("the Sendspin server asks to pair by \(method), which this follower does not run (it shows a code: dynamic_pairing_code)")
            return
        }
        reading.attempts += 1
        let (hash, suite) = link.transport.withLock { ($0.handshakeHash, $0.suite) }
        let attempt = SendspinPairingClient(index: reading.attempts, handshakeHash: hash, suite: suite)
        reading.pairing = attempt
        inbox.post { $0.outgoing.append(.text(attempt.start())) }
    }

    /// A message of a pairing, or the server's re-handshake onto the key just handed over.
    private func pairing(_ text: String, type: String, serverID: String, link: Link, into reading: inout Reading) throws {
        if type == "noise/handshake" {
            var handshake = SendspinClientHandshake(identity: identity)
            let (hash, suite) = link.transport.withLock { ($0.handshakeHash, $0.suite) }
            try handshake.expectRekey(serverID: serverID, suite: suite, previousHash: hash)
            let (reply, next) = try handshake.receiveHandshake(text) { [keys] id, category in
                category == .longTerm ? keys.psk(server: serverID, id: id) : nil
            }
            inbox.post { $0.outgoing.append(.rekey(reply: reply, next: next)) }
            return
        }
        guard var attempt = reading.pairing else { return }
        do {
            switch try attempt.receive(text) {
            case let .send(texts):
                reading.pairing = attempt
                inbox.post { $0.outgoing += texts.map { .text($0) } }
            case let .show(code, texts):
                reading.pairing = attempt
                inbox.post { $0.outgoing += texts.map { .text($0) } }
                log.warning("the Sendspin server \(address) asks to pair: its pairing code is \(code) (enter it on the server)")
            case let .paired(psk):
                reading.pairing = nil
                keys.keep(psk, server: serverID)
                log.info("paired with the Sendspin server \(address) (server \(serverID.prefix(12))…)")
            }
        } catch {
            reading.pairing = nil
            if case let .mismatch(abort) = error { inbox.post { $0.outgoing.append(.text(abort)) } }
            log.warning("pairing with the Sendspin server \(address): \(error)")
        }
    }

    private func take(_ event: SendspinClientSession.Event, arrived: Int64, into reading: inout Reading) {
        var inputs: [PlayoutInput] = []
        switch event {
        case let .hello(serverName):
            log.info("Sendspin server '\(serverName)'")
        case let .time(sent, received, transmitted):
            inputs.append(.clockSample(ClockSample(t1: LocalTime(nanoseconds: sent * 1_000), t2: CoordinatorTime(nanoseconds: received * 1_000),
                                                   t3: CoordinatorTime(nanoseconds: transmitted * 1_000), t4: LocalTime(nanoseconds: arrived))))
        case let .streamStart(format):
            log.info("stream: \(format)")
            reading.opus = format.codec == "opus" ? try? OpusFrameDecoder() : nil
            inputs += newEpoch(&reading, endingAt: nil)
        case let .chunk(timestamp, payload):
            guard let format = reading.session.format else { break }
            var samples: [Float] = []
            if let opus = reading.opus {
                // Stamped by the server as its decoded output is heard (its lookahead taken off).
                if (try? opus.decode(payload[...], into: &samples)) == nil {
                    reading.undecodable += 1
                    samples = [Float](repeating: 0, count: Self.frames * 2)
                    if reading.undecodable == 1 { log.warning("an Opus chunk from the Sendspin server did not decode: played as silence (counted)") }
                }
            } else {
                samples = SendspinPCM.decode(payload, bitDepth: format.bit_depth)
                if format.channels == 1 { samples = samples.flatMap { [$0, $0] } }
            }
            let at = Double(timestamp)
            if let expected = reading.expected, abs(at - expected) > 500 {
                // Not where the last chunk ended: what was pending goes, the timeline is placed anew.
                reading.pending.removeAll(keepingCapacity: true)
                reading.expected = nil
            }
            if reading.expected == nil {
                reading.packetizer.restart(at: CoordinatorTime(nanoseconds: timestamp * 1_000), epoch: reading.epoch)
            }
            reading.pending += samples
            reading.expected = at + Double(samples.count / 2) * 1e6 / 48_000
            let size = Self.frames * 2
            var offset = 0
            while reading.pending.count - offset >= size {
                let packet = reading.packetizer.packetize(Self.bytes(reading.pending[offset..<offset + size]), frames: Self.frames)
                var sendless = packet
                sendless.sendTime = nil
                inputs.append(.packet(sendless.encode(), arrived: LocalTime(nanoseconds: arrived)))
                offset += size
            }
            reading.pending.removeFirst(offset)
        case let .clear(at):
            inputs += newEpoch(&reading, endingAt: CoordinatorTime(nanoseconds: (at ?? 0) * 1_000))
        case .end:
            let end = reading.expected.map { CoordinatorTime(nanoseconds: Int64($0) * 1_000) }
            inputs += newEpoch(&reading, endingAt: end ?? CoordinatorTime(nanoseconds: 0))
        case let .volume(level):
            reading.volume = level
            inputs.append(settings(&reading))
        case let .mute(muted):
            reading.muted = muted
            inputs.append(settings(&reading))
        case .activated, .pairing, .group, .ignored:
            break
        }
        guard !inputs.isEmpty else { return }
        inbox.post { $0.inputs += inputs }
    }

    /// The current epoch ends at `end` (nil: it goes on until its packets run out) and the
    /// next chunks start another.
    private func newEpoch(_ reading: inout Reading, endingAt end: CoordinatorTime?) -> [PlayoutInput] {
        let ended = reading.epoch
        reading.epoch &+= 1
        reading.pending.removeAll(keepingCapacity: true)
        reading.expected = nil
        return end.map { [.epochEnd(ended, at: $0)] } ?? []
    }

    private func settings(_ reading: inout Reading) -> PlayoutInput {
        reading.settingsVersion &+= 1
        let state = reading.session.state(available: true, volume: reading.volume, muted: reading.muted, requiredLeadMilliseconds: 100)
        inbox.post { $0.outgoing.append(.text(state)) }
        log.info("volume \(reading.volume)%\(reading.muted ? " (muted)" : "")")
        return .settings(version: reading.settingsVersion, gain: RoomSettings.gain(volume: Double(reading.volume) / 100, muted: reading.muted),
                         outputDelay: outputDelay, stream: nil)
    }

    /// Samples as the packets carry them: float32, little-endian (`PCMFrameDecoder`).
    static func bytes(_ samples: ArraySlice<Float>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: samples.count * 4)
        for (i, sample) in samples.enumerated() {
            let bits = sample.bitPattern
            out[4 * i] = UInt8(truncatingIfNeeded: bits)
            out[4 * i + 1] = UInt8(truncatingIfNeeded: bits >> 8)
            out[4 * i + 2] = UInt8(truncatingIfNeeded: bits >> 16)
            out[4 * i + 3] = UInt8(truncatingIfNeeded: bits >> 24)
        }
        return out
    }
}

/// The packets a Sendspin session's audio becomes carry float32 samples, little-endian,
/// interleaved stereo: decoding copies them; a lost one is silence.
final class PCMFrameDecoder: FrameDecoder {
    func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        let count = payload.count / 4
        var i = payload.startIndex
        for _ in 0..<count {
            let bits = UInt32(payload[i]) | UInt32(payload[i + 1]) << 8 | UInt32(payload[i + 2]) << 16 | UInt32(payload[i + 3]) << 24
            output.append(Float(bitPattern: bits))
            i += 4
        }
        return count / 2
    }

    func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }

    func conceal(frames: Int, into output: inout [Float]) throws -> Int {
        output.append(contentsOf: repeatElement(0, count: frames * 2))
        return frames
    }

    func reset() {}
}

/// A follower's Sendspin identity (its X25519 key, by which a server knows it): kept in its
/// state folder, one per room name, readable by its owner only; made on first use.
/// The long-term keys this room was given by the Sendspin servers it paired with, by server
/// id (`sendspin-servers-ROOM.json` in its state folder, 0600, written atomically). Without a
/// state folder they live as long as the process.
final class SendspinServerKeys: @unchecked Sendable {
    private let path: String?
    private let keys: Mutex<[String: String]>

    init(folder: String?, room: String) {
        path = folder.map { $0 + "/sendspin-servers-\(SendspinPlayerIdentity.safe(room)).json" }
        let stored = path.flatMap { Files.read($0, limit: 1 << 20) }.flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0)) }
        keys = Mutex(stored ?? [:])
    }

    /// The key a server named by its id (`psk_id`), if it is the one this room keeps for it.
    func psk(server: String, id: String) -> SendspinPSK? {
        guard let key = keys.withLock({ $0[server] }).flatMap(Base64URL.decode), key.count == 32 else { return nil }
        let psk = SendspinPSK(key: key, category: .longTerm)
        return psk.id == id ? psk : nil
    }

    func keep(_ psk: [UInt8], server: String) {
        let all = keys.withLock { keys in
            keys[server] = Base64URL.encode(psk)
            return keys
        }
        guard let path else { return }
        do {
            try AtomicFile.write(try JSONEncoder().encode(all), to: path, permissions: 0o600)
        } catch {
            Log("follower").warning("cannot keep the Sendspin server's key in \(path): \(error) (this room pairs again after a restart)")
        }
    }
}

enum SendspinPlayerIdentity {
    static func safe(_ room: String) -> String {
        String(room.unicodeScalars.prefix(48).map { $0.properties.isAlphabetic || ("0"..."9").contains($0) ? Character($0) : "_" })
    }

    static func load(folder: String?, room: String) -> SendspinIdentity {
        guard let folder else { return .generate() }
        let path = folder + "/sendspin-player-\(safe(room)).key"
        if let bytes = Files.read(path, limit: 256), let key = Base64URL.decode(String(decoding: bytes, as: UTF8.self).trimmingWhitespace()),
           key.count == X25519.keySize {
            return SendspinIdentity(privateKey: key)
        }
        let identity = SendspinIdentity.generate()
        do {
            try Files.makeFolders(folder, permissions: 0o700)
            try AtomicFile.write(Data((Base64URL.encode(identity.privateKey) + "\n").utf8), to: path, permissions: 0o600)
        } catch {
            Log("follower").warning("cannot keep this room's Sendspin identity in \(path): \(error) (a new one at every start)")
        }
        return identity
    }
}
