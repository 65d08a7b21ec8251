import TuttiCore
import TuttiTesting

/// A whole house in memory, driven by a simulated true time: a coordinator stamping
/// IndexCodec frames, answering on its control channel (`ControlChannelService`, the clock
/// server's machine) and resending what followers ask for again, followers with their own
/// drifting clocks and sound devices (their side of the channel is `CoordinatorSession`),
/// and a lossy, jittery network between them.
/// Records, for every frame each device plays, how far from its presentation time it was heard.
final class SimulatedHouse {
    struct FollowerSpec {
        var clockOffset: Int64 = 0
        var drift: Double = 0
        var deviceLatency: Int64 = 40_000_000
        var joinAt: Int64 = 0
        var loss = 0.0
        var jitter: Int64 = 0
        /// Both links (stream and clock port, both ways) as this path, instead of `loss` and `jitter`.
        var path: PathModel?
    }

    final class Member {
        let spec: FollowerSpec
        let engine: PlayoutEngine
        var network: InMemoryNetwork<Int>
        var clockNetwork: InMemoryNetwork<Int>
        /// The member's side of the control channel: the follower's own machine.
        var session = CoordinatorSession(unicastPort: nil, reportsRoom: false)
        /// Local time at which the next device chunk is heard.
        var deviceNext: Int64?
        /// (true time heard, stream position played) for every non-silent frame.
        var heard: [(time: Int64, position: Double)] = []
        var firstSoundAt: Int64?
        /// (true time, clock estimate error in ns) every 250 ms.
        var clockErrors: [(Int64, Int64)] = []

        init(spec: FollowerSpec, seed: UInt64) {
            self.spec = spec
            var config = PlayoutEngine.Configuration()
            config.payloadType = 96
            config.fadeFrames = 0  // samples carry their own positions; a fade would scale them
            engine = PlayoutEngine(decoder: IndexCodec(base: -1), configuration: config)
            if let path = spec.path {
                network = InMemoryNetwork(path: path, seed: seed)
                clockNetwork = InMemoryNetwork(path: path, seed: seed + 100)
            } else {
                network = InMemoryNetwork(loss: spec.loss, baseDelay: 500_000, jitter: spec.jitter, seed: seed)
                clockNetwork = InMemoryNetwork(loss: spec.loss, baseDelay: 200_000, jitter: spec.jitter / 10, seed: seed + 100)
            }
        }

        func local(_ trueTime: Int64) -> Int64 { spec.clockOffset + trueTime + Int64((Double(trueTime) * spec.drift).rounded()) }
        func trueTime(_ local: Double) -> Double { (local - Double(spec.clockOffset)) / (1 + spec.drift) }
    }

    let origin: Int64 = 2_000_000_000
    let lead: Int64 = 150_000_000
    /// How far ahead the coordinator sends (the IndexCodec stream is stored audio).
    let lookahead: Int64
    let frames = 960
    let chunk = 480
    var packetizer: StreamPacketizer
    /// The coordinator's packets of late, for followers that ask for them again.
    var retransmitter = Retransmitter<Int>(mediaSSRC: 77, ssrc: 78, initialSequence: 1)
    /// The house key, as the clock port's messages are sealed with it.
    static let key = SumTag(key: 7)
    /// The coordinator's side of the control channel; members are their indices.
    var channel = ControlChannelService<Int>(key: SimulatedHouse.key, cookieKey: SumTag(key: 99), ssrc: 77, payloadType: 96,
                                             addressBytes: { [UInt8(truncatingIfNeeded: $0)] }, atPort: { peer, _ in peer })
    /// The coordinator's clock, set to each moment it acts at.
    let coordinatorClock = ManualClock(start: 0)
    var members: [Member] = []
    var now: Int64 = 0
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
    /// The media position of the next frame sent; what IndexCodec samples carry.
    var mediaPosition: Int64 = 0
    /// Changes a packet before it is sent (given the media position of its first frame): a
    /// stranger's forged packet in its place.
    var tamper: ((Int64, inout RTPPacket) -> Void)?
    /// When each packet goes and where the epoch ends, as for the player.
    private var schedule: SendSchedule
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
        packetizer = StreamPacketizer(ssrc: 77, initialSequence: 65_500, initialTimestamp: UInt32.max - 50_000,
                                      origin: CoordinatorTime(nanoseconds: origin))
        members = specs.enumerated().map { Member(spec: $1, seed: UInt64($0 + 1)) }
        schedule = SendSchedule(latency: lead, lookahead: lookahead)
        var queue = PlayQueue()
        item = queue.add(["index-codec"])[0].id
        transport = Transport(queue: queue)
        transport.setDuration(itemID: item, frames: 3_600 * 48_000)
        // Played so that the stream is heard from `origin` on.
        perform(try! transport.handle(.play, now: CoordinatorTime(nanoseconds: origin) - transport.configuration.cutLead))
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
            // Coordinator: send every packet due (up to the lookahead ahead of presentation).
            while schedule.streaming, schedule.decide(presentation: packetizer.nextPresentationTime, now: now, stored: true) == .send {
                var packet = packetizer.packetize(IndexCodec.payload(first: mediaPosition, frames: frames), frames: frames)
                packet.sendTime = CoordinatorTime(nanoseconds: now)
                tamper?(mediaPosition, &packet)
                retransmitter.record(packet)
                mediaPosition += Int64(frames)
                for m in members where now >= m.spec.joinAt { m.network.send(packet.encode(), to: 0, at: now) }
            }
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

    /// Carries out the transport's actions as the coordinator does: a cut stops the sender
    /// there and is announced to every member; a start restarts the stream there, from its
    /// position.
    private func perform(_ actions: [TransportAction]) {
        for action in actions {
            switch action {
            case let .cut(epoch, at):
                cuts.append((epoch, at.nanoseconds))
                schedule.cut(at: at)
                // Stamped with the coordinator's clock when sent, by which a member tells it is fresh.
                let message = ControlMessage.epochEnd(epoch: epoch, at: NTPTimestamp(at))
                    .seal(stamp: NTPTimestamp(nanoseconds: now).rawValue, with: Self.key)
                for m in members where now >= m.spec.joinAt {
                    for _ in 0..<3 { m.clockNetwork.send(message, to: 0, at: now) }  // as RoomMessenger sends it
                }
            case let .start(segment):
                packetizer.restart(at: segment.at, epoch: segment.epoch)
                mediaPosition = segment.position
                epochStarts.append((segment.epoch, segment.at.nanoseconds, segment.position))
                schedule.start(now: now)
            case .continueWith:
                break  // one endless item
            }
        }
    }

    private func advance(_ m: Member, index: Int) {
        // Clock exchanges as the follower's control channel paces them (its CoordinatorSession,
        // on the member's local clock): a burst, then as often as the bound needs. Coordinator
        // time is true time.
        for action in m.session.turn(now: m.local(now), lock: m.engine.clockLock) where action == .requestTime {
            let t1 = m.local(now)
            m.session.requestSent(originate: t1)
            m.clockNetwork.send(ControlMessage.timeRequest(originate: UInt64(bitPattern: t1)).seal(stamp: m.session.cookie, with: Self.key),
                                to: 1, at: now)
        }
        for d in m.clockNetwork.deliver(upTo: now) {
            if d.to == 1 {
                coordinatorReceives(d, from: index)
                continue
            }
            if d.bytes.first.map({ $0 >> 6 == 2 }) == true {  // a retransmission, on the clock port
                m.engine.receiveRetransmission(d.bytes, at: LocalTime(nanoseconds: m.local(d.deliverAt)))
                continue
            }
            guard let (message, stamp) = try? ControlMessage.open(d.bytes, with: Self.key) else { continue }
            // The coordinator's messages go through the member's session, as a follower's do.
            for action in m.session.receive(message, stamp: stamp, arrived: LocalTime(nanoseconds: m.local(d.deliverAt))) {
                switch action {
                case let .sample(sample): m.engine.addClockSample(sample)
                case let .epochEnd(epoch, at): m.engine.endEpoch(epoch, at: at)
                default: break
                }
            }
        }
        if now % 250_000_000 == 0, let e = m.engine.clockEstimate {
            m.clockErrors.append((now, e.coordinatorTime(at: LocalTime(nanoseconds: m.local(now))).nanoseconds - now))
        }
        for d in m.network.deliver(upTo: now) {
            m.engine.receive(d.bytes, at: LocalTime(nanoseconds: m.local(d.deliverAt)))
        }
        // Ask for what is missing, as the follower's receive loop does.
        if let request = m.engine.retransmissionRequests(at: LocalTime(nanoseconds: m.local(now)), outputLead: m.spec.deviceLatency) {
            let nack = GenericNACK(senderSSRC: UInt32(index + 1), mediaSSRC: request.ssrc, sequences: request.sequences).encode()
            for _ in 0..<request.copies { m.clockNetwork.send(nack, to: 1, at: now) }
        }
        // The device: chunk k is heard from local time deviceNext on, and must be rendered
        // `deviceLatency` before that.
        let localNow = m.local(now)
        if m.deviceNext == nil { m.deviceNext = localNow + m.spec.deviceLatency }
        while let heardAt = m.deviceNext, heardAt - m.spec.deviceLatency <= localNow {
            var out: [Float] = []
            m.engine.render(frames: chunk, heardAt: LocalTime(nanoseconds: heardAt), into: &out)
            for j in 0..<chunk where out[j * 2] != 0 {
                let local = Double(heardAt) + Double(j) * 1e9 / 48_000
                let t = m.trueTime(local)
                // IndexCodec(base: -1) makes position 0 decode as 1, so silence (0) is distinct.
                m.heard.append((Int64(t), Double(out[j * 2]) - 1))
                if m.firstSoundAt == nil { m.firstSoundAt = Int64(t) }
            }
            m.deviceNext = heardAt + Int64(chunk) * 1_000_000_000 / 48_000
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
        for case let .send(reply, to) in channel.receive(d.bytes, from: index, at: d.deliverAt, clock: coordinatorClock) where to == index {
            m.clockNetwork.send(reply, to: 0, at: d.deliverAt + 20_000)
        }
    }
}
