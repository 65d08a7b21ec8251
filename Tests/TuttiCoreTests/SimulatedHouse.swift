import TuttiCore
import TuttiTesting

/// A whole house in memory, driven by a simulated true time: a coordinator stamping
/// IndexCodec frames, followers with their own drifting clocks and sound devices, and a
/// lossy, jittery network between them. Records, for every frame each device plays, how
/// far from its presentation time it was heard.
final class SimulatedHouse {
    struct FollowerSpec {
        var clockOffset: Int64 = 0
        var drift: Double = 0
        var deviceLatency: Int64 = 40_000_000
        var joinAt: Int64 = 0
        var loss = 0.0
        var jitter: Int64 = 0
    }

    final class Member {
        let spec: FollowerSpec
        let engine: PlayoutEngine
        var network: InMemoryNetwork<Int>
        var clockNetwork: InMemoryNetwork<Int>
        var nextExchange: Int64 = 0
        var exchanges = 0
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
            engine = PlayoutEngine(decoder: IndexCodec(base: -1), configuration: config)
            network = InMemoryNetwork(loss: spec.loss, baseDelay: 500_000, jitter: spec.jitter, seed: seed)
            clockNetwork = InMemoryNetwork(loss: spec.loss, baseDelay: 200_000, jitter: spec.jitter / 10, seed: seed + 100)
        }

        func local(_ trueTime: Int64) -> Int64 { spec.clockOffset + trueTime + Int64((Double(trueTime) * spec.drift).rounded()) }
        func trueTime(_ local: Double) -> Double { (local - Double(spec.clockOffset)) / (1 + spec.drift) }
    }

    let origin: Int64 = 2_000_000_000
    let lead: Int64 = 150_000_000
    let frames = 960
    let chunk = 480
    var packetizer: StreamPacketizer
    var members: [Member] = []
    var now: Int64 = 0
    /// The coordinator cuts its timeline (as for a seek) at these true times.
    var restarts: [Int64] = []

    init(_ specs: [FollowerSpec]) {
        packetizer = StreamPacketizer(ssrc: 77, initialSequence: 65_500, initialTimestamp: UInt32.max - 50_000,
                                      origin: CoordinatorTime(nanoseconds: origin))
        members = specs.enumerated().map { Member(spec: $1, seed: UInt64($0 + 1)) }
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
                packetizer.restart(at: CoordinatorTime(nanoseconds: now + lead))
            }
            // Coordinator: send every packet due (lead ahead of presentation).
            while packetizer.nextPresentationTime.nanoseconds - lead <= now {
                let first = packetizer.framesSinceOrigin
                let packet = packetizer.packetize(IndexCodec.payload(first: first, frames: frames), frames: frames)
                for m in members where now >= m.spec.joinAt { m.network.send(packet.encode(), to: 0, at: now) }
            }
            for m in members where now >= m.spec.joinAt {
                advance(m)
            }
        }
    }

    private func advance(_ m: Member) {
        // Clock exchanges: a burst, then every 250 ms. Coordinator time is true time.
        if now >= m.nextExchange {
            m.clockNetwork.send(ControlMessage.timeRequest(originate: UInt64(bitPattern: m.local(now))).encode(), to: 1, at: now)
            m.exchanges += 1
            m.nextExchange = now + ExchangeSchedule.interval(after: m.exchanges - 1)
        }
        for d in m.clockNetwork.deliver(upTo: now) {
            switch try? ControlMessage.decode(d.bytes) {
            case let .timeRequest(t1)?:
                // Handled exactly when it arrives (not at the step), 20 µs to answer.
                let reply = ControlMessage.timeResponse(originate: t1, receive: NTPTimestamp(nanoseconds: d.deliverAt),
                                                        transmit: NTPTimestamp(nanoseconds: d.deliverAt + 20_000))
                m.clockNetwork.send(reply.encode(), to: 0, at: d.deliverAt + 20_000)
            case let .timeResponse(t1, t2, t3)?:
                m.engine.addClockSample(ClockSample(t1: LocalTime(nanoseconds: Int64(bitPattern: t1)), t2: t2.coordinatorTime,
                                                    t3: t3.coordinatorTime, t4: LocalTime(nanoseconds: m.local(d.deliverAt))))
            default: break
            }
        }
        if now % 250_000_000 == 0, let e = m.engine.clockEstimate {
            m.clockErrors.append((now, e.coordinatorTime(at: LocalTime(nanoseconds: m.local(now))).nanoseconds - now))
        }
        for d in m.network.deliver(upTo: now) {
            m.engine.receive(d.bytes, at: LocalTime(nanoseconds: m.local(d.deliverAt)))
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
}
