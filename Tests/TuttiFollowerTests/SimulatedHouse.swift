import TuttiCore
import TuttiNet
import TuttiSecurity
import TuttiTesting
@testable import TuttiFollower
@testable import TuttiNode

/// A whole house in memory, driven by a simulated true time: a coordinator whose sender is
/// the real one (`Player` and its `SenderMachine`, on the true time) playing a source whose
/// samples are their own positions into IndexCodec frames, answering on its control channel
/// (`ControlChannelService`, the clock server's machine) and resending what followers ask
/// for again, and followers that are the real follower (`Follower`, its `FollowerNetwork`, `ClockClient` and `Playout`, turning
/// `Playout.step` when their device or their loop is due), each on a clock of its own
/// that drifts, with a sound device of its own, over a lossy, jittery in-memory network.
/// Records, for every frame each device plays, how far from its presentation time it was heard.
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
    final class SimulatedSocket: DatagramSocket {
        let address: SocketAddress
        var inbox: [Datagram] = []
        let sent: ([UInt8]) -> Void
        init(address: SocketAddress, sent: @escaping ([UInt8]) -> Void) {
            self.address = address
            self.sent = sent
        }
        func send(_ bytes: [UInt8], to address: SocketAddress, wait: Bool) throws(SystemError) { sent(bytes) }
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
        /// Its reports, as the coordinator received them.
        var reports: [RoomReport] = []

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
            stream = SimulatedSocket(address: SocketAddress(address: here, port: 6_000)) { _ in }
            var sendControl: ([UInt8]) -> Void = { _ in }
            control = SimulatedSocket(address: SocketAddress(address: here, port: 6_001)) { sendControl($0) }
            var config = PlayoutEngine.Configuration()
            config.payloadType = 96
            config.fadeFrames = 0  // samples carry their own positions; a fade would scale them
            var followerConfig = Follower.Configuration()
            followerConfig.coordinator = SimulatedHouse.coordinatorAddress
            followerConfig.unicast = true
            followerConfig.sealedStream = false
            followerConfig.stateDirectory = nil
            followerConfig.name = "room\(index)"
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

    let origin: Int64 = 2_000_000_000
    let lead: Int64 = 150_000_000
    /// How far ahead the coordinator sends (the IndexCodec stream is stored audio).
    let lookahead: Int64
    /// The coordinator's sender, turned at every step of the true time.
    private var player: Player!
    /// The true time, as the coordinator's clock.
    struct TrueClock: MonotonicClock {
        let time: TrueTime
        func nanosecondsNow() -> Int64 { time.now }
    }
    /// The coordinator's packets of late, for followers that ask for them again.
    var retransmitter = Retransmitter<Int>(mediaSSRC: 77, ssrc: RTPPacket.retransmissionSSRC(of: 77), initialSequence: 1)
    /// The house key, as the clock port's messages are sealed with it.
    static let houseKey = HouseKey.generate()
    static let key = houseKey.clockPort
    /// The coordinator's side of the control channel; members are their indices.
    var channel = ControlChannelService<Int>(key: SimulatedHouse.key, cookieKey: SumTag(key: 99), stream: { _ in 77 }, payloadType: 96,
                                             addressBytes: { [UInt8(truncatingIfNeeded: $0)] }, atPort: { peer, _ in peer })
    /// The coordinator's clock, set to each moment it acts at.
    let coordinatorClock = ManualClock(start: 0)
    var members: [Member] = []
    let time = TrueTime()
    var now: Int64 {
        get { time.now }
        set { time.now = newValue }
    }
    /// The coordinator cuts its timeline (as a live source's realignment does) at these true times.
    var restarts: [Int64] = []
    /// The coordinator's transport (the real machine), playing one endless item: the
    /// IndexCodec stream. Its cuts and starts drive the sender, as they drive the player.
    private(set) var transport: Transport
    private let item: Int

    /// Transport commands, as the coordinator carries them out (`Transport.handle`):
    /// effective `cutLead` after the command, announced by an epoch end (sent three times,
    /// over the lossy clock link).
    enum Command {
        /// Pause; resume so long after the cut (the new epoch starts then).
        case pause(resumeAfter: Int64?)
        /// Seek to a media position.
        case seek(to: Int64)
    }
    var commands: [(at: Int64, command: Command)] = []
    /// Changes a packet before it is sent (given the media position of its first frame): a
    /// stranger's forged packet in its place.
    var tamper: ((Int64, inout RTPPacket) -> Void)?
    /// When to tell the transport to play again (after a pause).
    private var resumeCommandAt: Int64?
    /// Every epoch's start: (epoch, presentation time, media position); for the tests' expectations.
    private(set) var epochStarts: [(epoch: UInt32, at: Int64, position: Int64)] = []
    private(set) var cuts: [(epoch: UInt32, at: Int64)] = []

    /// The media position heard at true time `time` on the epoch running then.
    func position(at time: Int64) -> Double {
        guard let start = epochStarts.last(where: { $0.at <= time }) ?? epochStarts.first else { return 0 }
        return Double(start.position) + Double(time - start.at) * 48_000 / 1e9
    }

    init(_ specs: [FollowerSpec], lookahead: Int64 = 150_000_000) {
        self.lookahead = lookahead
        let time = self.time
        members = specs.enumerated().map { Member(spec: $1, index: $0, seed: UInt64($0 + 1), time: time, key: Self.houseKey) }
        var queue = PlayQueue()
        item = queue.add(["index-codec"])[0].id
        transport = Transport(queue: queue)
        transport.setDuration(itemID: item, frames: 3_600 * 48_000)
        var settings = Player.Configuration()
        settings.latency = lead
        settings.lookahead = lookahead
        player = try! Player(configuration: settings, ssrc: 77, stopFlag: StopFlag(), clock: TrueClock(time: time),
                             opener: { _ in IndexSource() }, encoder: IndexEncoder(),
                             initialSequence: 65_500, initialTimestamp: UInt32.max - 50_000,
                             send: { [unowned self] packet in self.sent(packet) }, sendReport: { _ in })
        // Played so that the stream is heard from `origin` on.
        perform(try! transport.handle(.play, now: CoordinatorTime(nanoseconds: origin) - transport.configuration.cutLead))
    }

    /// A stored source whose samples are their own media positions (left: position / 4096,
    /// right: position % 4096, both exact as floats), endless.
    final class IndexSource: FrameSource {
        let name = "index"
        let isLive = false
        let length: Int64? = 3_600 * 48_000
        let loudness: Loudness? = nil  // as it is: no gain
        private(set) var framesRead: Int64 = 0
        func read(into output: inout [Float]) throws -> Int? {
            for p in framesRead..<framesRead + 1_024 { output += [Float(p >> 12), Float(p & 4_095)] }
            framesRead += 1_024
            return 1_024
        }
        func seek(toFrame frame: Int64) throws { framesRead = frame }
    }

    /// Encodes a packet of the index source's frames as the IndexCodec frame that decodes to
    /// the same positions.
    final class IndexEncoder: FrameEncoding {
        let frameSize = 960
        let lookahead = 0
        func encode(_ pcm: [Float], offset: Int) throws -> [UInt8] {
            IndexCodec.payload(first: Int64(pcm[offset]) << 12 | Int64(pcm[offset + 1]), frames: frameSize)
        }
        func reset() {}
    }

    /// A packet the sender sends now: stamped, kept for retransmission, to every member there.
    private func sent(_ packet: RTPPacket) {
        var packet = packet
        packet.sendTime = CoordinatorTime(nanoseconds: now)
        tamper?(IndexCodec.contents(of: packet.payload)?.first ?? 0, &packet)
        retransmitter.record(packet)
        for m in members where now >= m.spec.joinAt { m.network.send(packet.encode(), to: 0, at: now) }
    }

    /// Presentation time of stream position `v` (frames since origin) on the current timeline.
    func presentation(of position: Double, timelineOrigin: Int64) -> Double {
        Double(timelineOrigin) + position * 1e9 / 48_000
    }

    func run(until end: Int64, step: Int64 = 500_000) {
        while now < end {
            now += step
            if let cut = restarts.first, now >= cut {
                restarts.removeFirst()
                perform(transport.realign(itemID: item, at: CoordinatorTime(nanoseconds: now + lead)))
            }
            if let (at, command) = commands.first, now >= at {
                commands.removeFirst()
                carryOut(command)
            }
            if let at = resumeCommandAt, now >= at {
                resumeCommandAt = nil
                perform(try! transport.handle(.play, now: CoordinatorTime(nanoseconds: now)))
            }
            // Coordinator: the sender sends every packet due (up to the lookahead ahead of presentation).
            _ = player.turn()
            for (index, m) in members.enumerated() where now >= m.spec.joinAt {
                advance(m, index: index)
            }
        }
    }

    private func carryOut(_ command: Command) {
        let t = CoordinatorTime(nanoseconds: now)
        switch command {
        case let .pause(resumeAfter):
            perform(try! transport.handle(.pause, now: t))
            if let resumeAfter, let cut = cuts.last {
                resumeCommandAt = cut.at + resumeAfter - transport.configuration.cutLead
            }
        case let .seek(target):
            perform(try! transport.handle(.seek(to: target), now: t))
        }
    }

    /// Carries out the transport's actions as the coordinator does: a cut is announced to
    /// every member; the sender carries out all of them.
    private func perform(_ actions: [TransportAction]) {
        for action in actions {
            switch action {
            case let .cut(epoch, at):
                cuts.append((epoch, at.nanoseconds))
                // Stamped with the coordinator's clock when sent, by which a member tells it is fresh.
                let message = ControlMessage.epochEnd(epoch: epoch, at: NTPTimestamp(at))
                    .seal(stamp: NTPTimestamp(nanoseconds: now).rawValue, with: Self.key)
                for m in members where now >= m.spec.joinAt {
                    for _ in 0..<3 { m.clockNetwork.send(message, to: 0, at: now) }  // as RoomMessenger sends it
                }
            case let .start(segment):
                epochStarts.append((segment.epoch, segment.at.nanoseconds, segment.position))
            case .continueWith:
                break  // one endless item
            }
        }
        player.perform(actions, paths: [item: "index-codec"])
    }

    /// The member's side at true time `now`: what the network delivered goes to its
    /// sockets (stamped with its clock), the coordinator answers what reached it, and the
    /// follower's own loop turns (`Playout.step`) when its device asks for audio or its loop
    /// is due. Every frame the device plays is recorded with when it is heard.
    private func advance(_ m: Member, index: Int) {
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
        for d in m.clockNetwork.deliver(upTo: now) {
            if d.to == 1 {
                coordinatorReceives(d, from: index)
            } else {
                m.control.inbox.append(Datagram(bytes: d.bytes, from: Self.coordinatorAddress, receivedAt: m.local(d.deliverAt)))
            }
        }
        for d in m.network.deliver(upTo: now) {
            m.stream.inbox.append(Datagram(bytes: d.bytes, from: Self.coordinatorAddress, receivedAt: m.local(d.deliverAt)))
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

    /// The coordinator's clock port, exactly when a datagram arrives: retransmission
    /// requests from members it knows (resent at once, by unicast), everything else through
    /// its control channel's machine, 20 µs to answer.
    private func coordinatorReceives(_ d: InMemoryNetwork<Int>.Datagram, from index: Int) {
        let m = members[index]
        if GenericNACK.isFeedback(d.bytes) {
            guard channel.admitsFeedback(from: index, at: d.deliverAt), let nack = try? GenericNACK.decode(d.bytes) else { return }
            for rtx in retransmitter.answer(nack, from: index, now: d.deliverAt) {
                m.clockNetwork.send(rtx.encode(), to: 0, at: d.deliverAt + 20_000)
            }
            return
        }
        coordinatorClock.set(d.deliverAt + 20_000)
        for output in channel.receive(d.bytes, from: index, at: d.deliverAt, clock: coordinatorClock) {
            switch output {
            case let .send(reply, to) where to == index: m.clockNetwork.send(reply, to: 0, at: d.deliverAt + 20_000)
            case let .report(report, _, _, _): m.reports.append(report)
            default: break
            }
        }
    }
}
