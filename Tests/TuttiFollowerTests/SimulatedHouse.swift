import Foundation
import Synchronization
@testable import TuttiCore
import TuttiNet
import TuttiSecurity
import TuttiTesting
@testable import TuttiFollower
@testable import TuttiNode

/// A whole house in memory, driven by a simulated true time. The coordinator is the real
/// one, put together as the command puts it together (`Coordinator.assemble`): its house
/// actor (served its notices and let time pass on the true time), its clock service
/// (`ClockServer.turn`), the rooms' messenger, the sealed outlets and the senders (turned by
/// the simulation), on in-memory sockets and a clock of the true time; only its source
/// (samples that are their own positions) and encoder (IndexCodec frames) are the
/// simulation's. The followers are the real follower (`Follower`, its `FollowerNetwork`,
/// `ClockClient` and `Playout`, turning `Playout.step` when their device or their loop is
/// due), each on a clock of its own that drifts, with a sound device of its own, over a
/// lossy, jittery in-memory network. Records, for every frame each device plays, how far
/// from its presentation time it was heard.
final class SimulatedHouse: @unchecked Sendable {
    struct FollowerSpec {
        var clockOffset: Int64 = 0
        var drift: Double = 0
        /// How far ahead of hearing the device takes what was written (a sound server's
        /// sink latency): the first frame written is heard this long after its write.
        var deviceLatency: Int64 = 40_000_000
        /// The device starts empty, as a sound card does: frame 0 is heard when it is
        /// written (no timing before the first), and it takes nothing ahead.
        var deviceFills = false
        /// How full the follower keeps its device (`DeviceFill`); the house's default: 10 ms
        /// writes with 2 ms in hand (the house turns a member's loop at most 0.5 ms late).
        var fill: DeviceFill.Configuration = {
            var c = DeviceFill.Configuration()
            c.period = 10_000_000
            c.floor = 2_000_000
            return c
        }()
        /// How late the follower's loop turns after it asked to (its thread's wake-ups on a
        /// busy machine): each turn late by up to this much, at random (uniform).
        var wakeLateness: Int64 = 0
        /// And one turn this late every `stallEvery` of true time (a machine that stalls).
        var stall: Int64 = 0
        var stallEvery: Int64 = 0
        /// The device's rate against the member's clock: each frame takes `1 + deviceRate`
        /// of its nominal time (a sound card's crystal, the rig's null sink). A device off
        /// the member's clock reports its delay in its own time, and answers as a sound
        /// server does (not exact: its line must be fitted).
        var deviceRate = 0.0
        var joinAt: Int64 = 0
        var loss = 0.0
        var jitter: Int64 = 0
        /// Both links (stream and clock port, both ways) as this path, instead of `loss` and `jitter`.
        var path: PathModel?
    }

    /// The house's true time, which every member's clock reads through its own drift.
    final class TrueTime: @unchecked Sendable {
        var now: Int64 = 0
    }

    /// A member's local clock: its offset and drift on the house's true time.
    struct MemberClock: MonotonicClock {
        let time: TrueTime
        let offset: Int64
        let drift: Double
        func local(_ trueTime: Int64) -> Int64 { offset + trueTime + Int64((Double(trueTime) * drift).rounded()) }
        func nanosecondsNow() -> Int64 { local(time.now) }
    }

    /// One of a member's sockets on the in-memory network: what was delivered to it, and
    /// where what it sends goes.
    final class SimulatedSocket: DatagramSocket, @unchecked Sendable {
        let address: SocketAddress
        var inbox: [Datagram] = []
        let sent: (_ to: SocketAddress, _ bytes: [UInt8]) -> Void
        init(address: SocketAddress, sent: @escaping (_ to: SocketAddress, _ bytes: [UInt8]) -> Void) {
            self.address = address
            self.sent = sent
        }
        func send(_ bytes: [UInt8], to address: SocketAddress, wait: Bool) throws(SystemError) { sent(address, bytes) }
        func receive(timeoutMilliseconds: Int32) throws(SystemError) -> Datagram? { try receiveWaiting() }
        func receiveWaiting() throws(SystemError) -> Datagram? { inbox.isEmpty ? nil : inbox.removeFirst() }
        func enableReceiveTimestamps() -> Bool { true }
        func localAddress() throws(SystemError) -> SocketAddress { address }
    }

    /// A member's sound device: it plays from its first write on, frame after frame, each
    /// `1 + rate` of its nominal time on the member's clock, and takes each frame `latency`
    /// ahead of hearing it (the first one is heard `latency` after it is written). A frame
    /// written after it was due is not played (the device ran dry meanwhile: an underrun);
    /// the frames after it keep their places. What it plays goes to `played`.
    final class SimulatedDevice: AudioOutput {
        let name = "simulated"
        let interrupted = false
        let clock: MemberClock
        let latency: Int64
        let fills: Bool
        let rate: Double
        var committedLatency: Int64 { fills ? 0 : latency }
        private(set) var framesWritten: Int64 = 0
        private(set) var underruns = 0
        /// Frames written too late to be played.
        private(set) var framesDropped = 0
        /// Local time at which frame 0 is heard; nil before the first demand.
        private var start: Int64?
        let played: (_ heardAt: Int64, _ samples: [Float]) -> Void
        init(clock: MemberClock, latency: Int64, fills: Bool = false, rate: Double = 0, played: @escaping (Int64, [Float]) -> Void) {
            self.clock = clock
            self.latency = latency
            self.fills = fills
            self.rate = rate
            self.played = played
        }
        private var playedUntil: Int64? {
            start.map { $0 + Int64((Double(AudioFormat.nanoseconds(forFrames: framesWritten)) * (1 + rate)).rounded()) }
        }
        /// The house's time moves on by itself: the loop's next turn is when its step says.
        func wait(until deadline: Int64) throws {}
        func takeTiming() -> DeviceTiming? {
            let now = clock.nanosecondsNow()
            if fills, start == nil { return nil }
            let heard = playedUntil ?? now + latency
            guard rate != 0 else {
                return DeviceTiming(frame: framesWritten, heardAt: LocalTime(nanoseconds: heard), measuredAt: LocalTime(nanoseconds: now))
            }
            let delay = Int64((Double(heard - now) / (1 + rate)).rounded())
            return DeviceTiming(frame: framesWritten, heardAt: LocalTime(nanoseconds: now + delay), measuredAt: LocalTime(nanoseconds: now),
                                uncertainty: 80_000, delay: delay)
        }
        func write(_ samples: [Float]) throws {
            let now = clock.nanosecondsNow()
            if start == nil { start = now + (fills ? 0 : latency) }
            let frameTime = 1e9 / 48_000 * (1 + rate)
            // Frames the device wanted before now (less what it takes ahead) are lost.
            let late = min(samples.count / 2, max(0, Int((Double(now + committedLatency - playedUntil!) / frameTime).rounded(.up))))
            if late > 0 {
                underruns += 1
                framesDropped += late
            }
            if late < samples.count / 2 {
                played(playedUntil! + Int64((Double(late) * frameTime).rounded()), Array(samples[(late * 2)...]))
            }
            framesWritten += Int64(samples.count / 2)
        }
    }

    final class Member {
        let spec: FollowerSpec
        let clock: MemberClock
        let follower: Follower
        var engine: PlayoutEngine { follower.engine }
        var device: SimulatedDevice!
        var playout: Playout?
        /// When its loop turns again (local time): when its step asked, and as late as its
        /// machine wakes it.
        var nextTurn: Int64 = .min
        var lateness = SeededRandom(seed: 7)
        var nextStall: Int64 = 0
        let stream: SimulatedSocket
        let control: SimulatedSocket
        /// The coordinator's stream to it, and its clock port's datagrams both ways (to 0:
        /// the member; to 1: the coordinator).
        var network: InMemoryNetwork<Int>
        var clockNetwork: InMemoryNetwork<Int>
        /// (true time heard, stream position played) for every non-silent frame.
        var heard: [(time: Int64, position: Double)] = []
        var firstSoundAt: Int64?
        /// (true time, clock estimate error in ns) every 250 ms.
        var clockErrors: [(Int64, Int64)] = []
        /// Its room's name.
        let name: String

        init(spec: FollowerSpec, index: Int, seed: UInt64, time: TrueTime, key: HouseKey) {
            self.spec = spec
            clock = MemberClock(time: time, offset: spec.clockOffset, drift: spec.drift)
            if let path = spec.path {
                network = InMemoryNetwork(path: path, seed: seed)
                clockNetwork = InMemoryNetwork(path: path, seed: seed + 100)
            } else {
                network = InMemoryNetwork(loss: spec.loss, baseDelay: 500_000, jitter: spec.jitter, seed: seed)
                clockNetwork = InMemoryNetwork(loss: spec.loss, baseDelay: 200_000, jitter: spec.jitter / 10, seed: seed + 100)
            }
            let here = UInt32(0x0A00_0002 + index)
            stream = SimulatedSocket(address: SocketAddress(address: here, port: 6_000)) { _, _ in }
            var sendControl: ([UInt8]) -> Void = { _ in }
            control = SimulatedSocket(address: SocketAddress(address: here, port: 6_001)) { sendControl($1) }
            let name = "room\(index)"
            self.name = name
            var config = PlayoutEngine.Configuration()
            config.payloadType = 96
            config.fadeFrames = 0  // samples carry their own positions; a fade would scale them
            var followerConfig = Follower.Configuration()
            followerConfig.coordinator = SimulatedHouse.coordinatorAddress
            followerConfig.unicast = true
            followerConfig.stateDirectory = nil
            followerConfig.name = name
            followerConfig.fill = spec.fill
            followerConfig.statusInterval = 3_600
            follower = Follower(configuration: followerConfig, membership: .init(houseKey: key, name: "room \(index)"),
                                engine: PlayoutEngine(decoder: IndexCodec(base: -1), configuration: config),
                                clock: clock, stream: stream, byUnicast: true, control: control)
            sendControl = { [unowned self] bytes in clockNetwork.send(bytes, to: 1, at: clock.time.now) }
        }

        func local(_ trueTime: Int64) -> Int64 { clock.local(trueTime) }
        func trueTime(_ local: Double) -> Double { (local - Double(spec.clockOffset)) / (1 + spec.drift) }
    }

    static let coordinatorAddress = SocketAddress(address: 0x0A00_0001, port: 5_005)

    /// Where the stream is heard from (the first epoch's start, as the house's transport set it).
    var origin: Int64 { epochStarts.first?.at ?? Self.playAt }
    /// When the simulation asks the house to play (the stream starts a command lead later).
    static let playAt: Int64 = 1_900_000_000
    let lead: Int64 = 150_000_000
    /// How far ahead the coordinator sends (the IndexCodec stream is stored audio).
    let lookahead: Int64
    var members: [Member] = []
    let time = TrueTime()
    var now: Int64 {
        get { time.now }
        set { time.now = newValue }
    }

    // The coordinator: the real one (its clock service, the rooms' messenger, the sealed
    // outlets, the senders and the house actor), on the in-memory network, its clock the
    // true time (and `coordinatorOffset` elsewhere after a restart).
    private(set) var coordinator: Coordinator!
    private(set) var house: House!
    private(set) var senders: CoordinatorSenders!
    /// The coordinator's clock port and send socket on the in-memory network.
    private(set) var clockPort: SimulatedSocket!
    private(set) var sendPort: SimulatedSocket!
    /// The coordinator's clock minus the true time.
    private(set) var coordinatorOffset: Int64 = 0
    private let folder: String
    private var noticesServed = 0
    private var notices: AsyncStream<Notice>.AsyncIterator!
    private var nextTick: Int64 = 0
    private var nextSenderTurn: Int64 = 0
    private var played = false
    /// The coordinator is stopped (`restartCoordinator`).
    private var isDown = false
    /// The coordinator's clock: the true time, `offset` elsewhere.
    struct OffsetClock: MonotonicClock {
        let time: TrueTime
        let offset: Int64
        func nanosecondsNow() -> Int64 { time.now + offset }
    }

    /// The coordinator cuts its timeline at these true times, as a live source's player
    /// does when its input parts from the timeline (it tells the house, which realigns).
    var restarts: [Int64] = []

    /// Transport commands, given to the house as the control API gives them (its command
    /// lead after the command, announced by an epoch end over the lossy clock links).
    enum Command {
        /// Pause; resume so long after the cut (the new epoch starts then).
        case pause(resumeAfter: Int64?)
        /// Seek to a media position.
        case seek(to: MediaFrames)
    }
    var commands: [(at: Int64, command: Command)] = []
    /// Changes a packet's payload as it is encoded (given the media position of its first
    /// frame): a stranger's forged packet in its place.
    var tamper: (@Sendable (Int64, inout [UInt8]) -> Void)? {
        get { encoder.tamper.withLock { $0 } }
        set { encoder.tamper.withLock { $0 = newValue } }
    }
    private let encoder = IndexEncoder()
    /// When to tell the transport to play again (after a pause).
    private var resumeCommandAt: Int64?
    /// Every epoch's start: (epoch, presentation time, media position), as the house's
    /// transports set them, by zone (true times); and every cut (an epoch's end).
    private(set) var starts: [String: [(epoch: UInt32, at: Int64, position: MediaFrames)]] = [:]
    private(set) var ends: [String: [(epoch: UInt32, at: Int64)]] = [:]
    /// The default zone's.
    var epochStarts: [(epoch: UInt32, at: Int64, position: MediaFrames)] { starts[ZoneInfo.defaultID] ?? [] }
    var cuts: [(epoch: UInt32, at: Int64)] { ends[ZoneInfo.defaultID] ?? [] }
    /// Whether an epoch's end on its way to member `index` is dropped (the network loses it).
    var dropsEpochEnd: ((_ index: Int, _ epoch: UInt32) -> Bool)?
    /// The reports the coordinator received, by room.
    private let received = Inbox<[String: [RoomReport]]>([:])

    /// The media position heard at true time `time` on the epoch of zone `zone` running then
    /// (or on `epoch`, had it run on).
    func position(at time: Int64, zone: String = ZoneInfo.defaultID, epoch: (epoch: UInt32, at: Int64, position: MediaFrames)? = nil) -> Double {
        let starts = starts[zone] ?? []
        guard let start = epoch ?? starts.last(where: { $0.at <= time }) ?? starts.first else { return 0 }
        return Double(start.position.count) + Double(time - start.at) * 48_000 / 1e9
    }

    init(_ specs: [FollowerSpec], lookahead: Int64 = 150_000_000) async throws {
        self.lookahead = lookahead
        folder = NSTemporaryDirectory() + "tutti-simulated-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try await startCoordinator()
        members = specs.enumerated().map { Member(spec: $1, index: $0, seed: UInt64($0 + 1), time: time, key: coordinator.houseKey) }
        // One item, as long as the index source: the stream, paused at its start.
        try await house.replaceQueue(with: ["index-codec"], loopMode: .once)
        _ = try await house.transport(.pause, zone: nil)
    }

    deinit {
        senders?.stopAll()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A coordinator on the state folder (the one before's house, members and keys, if
    /// any), its clock `offset` from the true time, its sockets on the in-memory network.
    private func startCoordinator(offset: Int64 = 0) async throws {
        coordinatorOffset = offset
        let clock = OffsetClock(time: time, offset: offset)
        let route: @Sendable (SocketAddress, [UInt8]) -> Void = { [unowned self] in self.route($1, to: $0) }
        clockPort = SimulatedSocket(address: Self.coordinatorAddress, sent: route)
        sendPort = SimulatedSocket(address: SocketAddress(address: Self.coordinatorAddress.address, port: 5_004), sent: route)
        var configuration = Coordinator.Configuration()
        configuration.stateDirectory = folder
        configuration.multicast = nil
        configuration.clockListen = Self.coordinatorAddress
        configuration.latencyMilliseconds = Int(lead / 1_000_000)
        configuration.lookaheadMilliseconds = Int(lookahead / 1_000_000)
        configuration.announce = false
        var ports = CoordinatorPorts(clock: clock, clockSocket: clockPort, sendSocket: sendPort)
        ports.openSource = { _, _ in IndexSource() }
        let encoder = encoder
        ports.makeEncoder = { _ in encoder }
        coordinator = try Coordinator(configuration: configuration, ports: ports)
        (house, senders) = try await coordinator.assemble(.init(tracks: nil, loopMode: nil), store: StateStore(directory: folder),
                                                          turning: .byCaller)
        notices = house.notices.makeAsyncIterator()
        noticesServed = 0
        nextTick = 0
        nextSenderTurn = 0
        let inner = coordinator.clockServer.onReport
        let received = received
        coordinator.clockServer.onReport = { report, address, member, at in
            received.withLock { $0[report.name, default: []].append(report) }
            inner?(report, address, member, at)
        }
    }

    /// Stops the coordinator as SIGTERM does (the house saves where it is, the senders
    /// stop), leaves the rooms without one for `down` (what reaches its port is lost), and
    /// starts another on its state folder, its clock `offset` from the true time, which
    /// plays on from where the house stopped.
    func restartCoordinator(offset: Int64, down: Int64) async throws {
        await house.saveOnExit()
        senders.stopAll()
        isDown = true
        try await run(until: now + down)
        isDown = false
        try await startCoordinator(offset: offset)
        try await command(.play)
    }

    /// What the coordinator sends to `address`: to a member's stream socket, or its clock
    /// socket (unless `dropsEpochEnd` loses it), over that member's links.
    private func route(_ bytes: [UInt8], to address: SocketAddress) {
        guard let index = members.firstIndex(where: { $0.stream.address.address == address.address }) else { return }
        let m = members[index]
        if address.port == m.stream.address.port {
            m.network.send(bytes, to: 0, at: now)
            return
        }
        if let drops = dropsEpochEnd, let keyring = coordinator?.keyring,
           let opened = try? ControlMessage.open(bytes, key: { keyring.clockKey(member: $0) }),
           case let .epochEnd(epoch, _) = opened.message, drops(index, epoch) {
            return
        }
        m.clockNetwork.send(bytes, to: 0, at: now)
    }

    /// A stored source whose samples are their own media positions (left: position / 4096,
    /// right: position % 4096, both exact as floats), an hour long.
    final class IndexSource: FrameSource {
        let name = "index"
        let isLive = false
        let length: MediaFrames? = MediaFrames(3_600 * 48_000)
        let loudness: Loudness? = nil  // as it is: no gain
        private(set) var framesRead: Int64 = 0
        func read(into output: inout [Float]) throws -> Int? {
            for p in framesRead..<framesRead + 1_024 { output += [Float(p >> 12), Float(p & 4_095)] }
            framesRead += 1_024
            return 1_024
        }
        func seek(to position: MediaFrames) throws { framesRead = position.count }
    }

    /// Encodes a packet of the index source's frames as the IndexCodec frame that decodes to
    /// the same positions (changed by `tamper`, if set).
    final class IndexEncoder: FrameEncoding, Sendable {
        let frameSize = 960
        let lookahead = 0
        let tamper = Mutex<(@Sendable (Int64, inout [UInt8]) -> Void)?>(nil)
        func encode(_ pcm: [Float], offset: Int) throws -> [UInt8] {
            let first = Int64(pcm[offset]) << 12 | Int64(pcm[offset + 1])
            var payload = IndexCodec.payload(first: first, frames: frameSize)
            tamper.withLock { $0?(first, &payload) }
            return payload
        }
        func reset() {}
    }

    /// The reports the coordinator received from member `index`'s room.
    func reports(of m: Member) -> [RoomReport] { received.withLock { $0[m.name] ?? [] } }

    /// Presentation time of stream position `v` (frames since origin) on the current timeline.
    func presentation(of position: Double, timelineOrigin: Int64) -> Double {
        Double(timelineOrigin) + position * 1e9 / 48_000
    }

    /// Moves the true time on to `end`, a step at a time: the house is told to play at
    /// `playAt`; the coordinator takes what reached its clock port, serves the notices its
    /// clock service and sender told, lets time pass every `House.tickInterval` and turns its
    /// sender when due; then each member's side.
    func run(until end: Int64, step: Int64 = 500_000) async throws {
        while now < end {
            now += step
            if !played, now >= Self.playAt {
                played = true
                try await command(.play)
            }
            if let cut = restarts.first, now >= cut {
                restarts.removeFirst()
                try await realign(at: now + lead)
            }
            if let (at, command) = commands.first, now >= at {
                commands.removeFirst()
                try await carryOut(command)
            }
            if let at = resumeCommandAt, now >= at {
                resumeCommandAt = nil
                try await self.command(.play)
            }
            for m in members where now >= m.spec.joinAt {
                for d in m.clockNetwork.deliver(upTo: now) {
                    if d.to == 1 {
                        if isDown { continue }
                        clockPort.inbox.append(Datagram(bytes: d.bytes, from: m.control.address, receivedAt: d.deliverAt + coordinatorOffset))
                    } else {
                        m.control.inbox.append(Datagram(bytes: d.bytes, from: Self.coordinatorAddress, receivedAt: m.local(d.deliverAt)))
                    }
                }
            }
            if isDown {
                for m in members where now >= m.spec.joinAt { advance(m) }
                continue
            }
            _ = try coordinator.clockServer.turn(now: now + coordinatorOffset)
            try await serveNotices()
            if now >= nextTick {
                nextTick = now + House.tickInterval
                await house.tick()
                try await serveNotices()
            }
            if now + coordinatorOffset >= nextSenderTurn {
                nextSenderTurn = senders.turn()
                try await serveNotices()
            }
            for m in members where now >= m.spec.joinAt { advance(m) }
        }
        // On disk, as it is now: the saves the house began meanwhile (none newer than this)
        // find nothing to write after the simulation is gone, and its folder with it.
        if !isDown { await house.saveOnExit() }
    }

    /// Serves every notice told so far, and notes how the default zone's timeline changed.
    private func serveNotices() async throws {
        let told = house.noticesTold.load(ordering: .relaxed)
        guard noticesServed < told else { return }
        while noticesServed < told, let notice = await notices.next() {
            noticesServed += 1
            await house.serve(notice)
        }
        await observe()
    }

    /// The zones' transports as they are now: a new epoch's start, or a cut.
    private func observe() async {
        for (zone, play) in await house.plays {
            let transport = play.transport
            if case let .running(segments, _) = transport.mode, let first = segments.first,
               starts[zone]?.last?.epoch != first.epoch {
                starts[zone, default: []].append((first.epoch, first.at.nanoseconds - coordinatorOffset, first.position))
            }
            let end = transport.lastEnd.nanoseconds == .min ? .min : transport.lastEnd.nanoseconds - coordinatorOffset
            if let last = starts[zone]?.last, end > .min, ends[zone]?.last?.epoch != last.epoch, end >= last.at {
                ends[zone, default: []].append((last.epoch, end))
            }
        }
    }

    private func command(_ command: TransportCommand) async throws {
        _ = try await house.transport(command, zone: nil)
        await observe()
    }

    /// What a live source's player tells the house when its input parts from the timeline:
    /// the stream goes on from where it is, heard from `time`.
    private func realign(at time: Int64) async throws {
        let transport = await house.plays[ZoneInfo.defaultID]!.transport
        let at = CoordinatorTime(nanoseconds: time + coordinatorOffset)
        guard let item = transport.snapshot(at: at).item else { return }
        house.tell(.player(.realigned(itemID: item.id, at: at, position: nil), zone: ZoneInfo.defaultID))
        try await serveNotices()
    }

    private func carryOut(_ command: Command) async throws {
        switch command {
        case let .pause(resumeAfter):
            try await self.command(.pause)
            if let resumeAfter, let cut = cuts.last {
                let lead = await house.plays[ZoneInfo.defaultID]!.transport.configuration.cutLead
                resumeCommandAt = cut.at + resumeAfter - lead
            }
        case let .seek(target):
            try await self.command(.seek(to: target))
        }
    }

    /// The member's side at true time `now`: what the network delivered goes to its stream
    /// socket (stamped with its clock), and the follower's own loop turns (`Playout.step`)
    /// when its device asks for audio or its loop is due. Every frame the device plays is
    /// recorded with when it is heard.
    private func advance(_ m: Member) {
        if m.playout == nil {
            let frameTime = 1e9 / 48_000 * (1 + m.spec.deviceRate)
            m.device = SimulatedDevice(clock: m.clock, latency: m.spec.deviceLatency, fills: m.spec.deviceFills,
                                       rate: m.spec.deviceRate) { [unowned m] heardAt, samples in
                for j in 0..<samples.count / 2 where samples[j * 2] != 0 {
                    let t = m.trueTime(Double(heardAt) + Double(j) * frameTime)
                    // IndexCodec(base: -1) makes position 0 decode as 1, so silence (0) is distinct.
                    m.heard.append((Int64(t), Double(samples[j * 2]) - 1))
                    if m.firstSoundAt == nil { m.firstSoundAt = Int64(t) }
                }
            }
            m.playout = try! m.follower.prepare(output: m.device)
        }
        for d in m.network.deliver(upTo: now) {
            m.stream.inbox.append(Datagram(bytes: d.bytes, from: sendPort.address, receivedAt: m.local(d.deliverAt)))
        }
        let local = m.local(now)
        if local >= m.nextTurn {
            var late = m.spec.wakeLateness > 0 ? Int64(m.lateness.next() % UInt64(m.spec.wakeLateness)) : 0
            if m.spec.stallEvery > 0, m.nextStall == 0 { m.nextStall = now + m.spec.stallEvery }
            if m.spec.stallEvery > 0, now >= m.nextStall {
                late = m.spec.stall
                m.nextStall = now + m.spec.stallEvery
            }
            m.nextTurn = try! m.playout!.step(output: m.device) + late
        }
        if now % 250_000_000 == 0, let e = m.engine.clockEstimate {
            m.clockErrors.append((now, e.coordinatorTime(at: LocalTime(nanoseconds: local)).nanoseconds - now))
        }
    }
}
