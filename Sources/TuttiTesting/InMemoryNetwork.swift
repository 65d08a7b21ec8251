import TuttiCore

/// A lossy, jittery datagram network in memory, driven by explicit times: each datagram
/// takes the delay its `PathModel` gives it (so it may overtake others), or is lost.
public struct InMemoryNetwork<Endpoint: Hashable & Sendable>: Sendable {
    public struct Datagram: Sendable {
        public var to: Endpoint
        public var bytes: [UInt8]
        public var sentAt: Int64
        public var deliverAt: Int64
    }

    public var path: PathModel
    private var random: SeededRandom
    private var inFlight: [Datagram] = []
    public private(set) var dropped = 0
    public private(set) var delivered = 0

    public init(path: PathModel, seed: UInt64 = 1) {
        self.path = path
        random = SeededRandom(seed: seed)
    }

    /// A path whose delay is `baseDelay` plus a uniform `0...jitter`, losing `loss` of packets.
    public init(loss: Double = 0, baseDelay: Int64 = 1_000_000, jitter: Int64 = 0, seed: UInt64 = 1) {
        self.init(path: PathModel(delay: baseDelay + jitter / 2, jitter: jitter / 2, loss: loss), seed: seed)
    }

    public mutating func send(_ bytes: [UInt8], to: Endpoint, at now: Int64) {
        guard let delay = path.delay(sentAt: now, using: &random) else {
            dropped += 1
            return
        }
        inFlight.append(Datagram(to: to, bytes: bytes, sentAt: now, deliverAt: now + delay))
    }

    /// Removes and returns every datagram due by `now`, earliest first.
    public mutating func deliver(upTo now: Int64) -> [Datagram] {
        let due = inFlight.filter { $0.deliverAt <= now }.sorted { $0.deliverAt < $1.deliverAt }
        inFlight.removeAll { $0.deliverAt <= now }
        delivered += due.count
        return due
    }
}
