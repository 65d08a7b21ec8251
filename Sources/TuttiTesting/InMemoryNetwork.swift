import TuttiCore

/// A lossy, jittery datagram network in memory, driven by explicit times.
///
/// Each datagram is dropped with probability `loss`, else delivered after
/// `baseDelay` plus a uniform random jitter in `0...jitter` (so it may overtake others).
public struct InMemoryNetwork<Endpoint: Hashable & Sendable>: Sendable {
    public struct Datagram: Sendable {
        public var to: Endpoint
        public var bytes: [UInt8]
        public var deliverAt: Int64
    }

    public var loss: Double
    public var baseDelay: Int64
    public var jitter: Int64
    private var random: SeededRandom
    private var inFlight: [Datagram] = []
    public private(set) var dropped = 0
    public private(set) var delivered = 0

    public init(loss: Double = 0, baseDelay: Int64 = 1_000_000, jitter: Int64 = 0, seed: UInt64 = 1) {
        self.loss = loss
        self.baseDelay = baseDelay
        self.jitter = jitter
        random = SeededRandom(seed: seed)
    }

    public mutating func send(_ bytes: [UInt8], to: Endpoint, at now: Int64) {
        if loss > 0, Double.random(in: 0..<1, using: &random) < loss {
            dropped += 1
            return
        }
        let extra = jitter > 0 ? Int64.random(in: 0...jitter, using: &random) : 0
        inFlight.append(Datagram(to: to, bytes: bytes, deliverAt: now + baseDelay + extra))
    }

    /// Removes and returns every datagram due by `now`, earliest first.
    public mutating func deliver(upTo now: Int64) -> [Datagram] {
        let due = inFlight.filter { $0.deliverAt <= now }.sorted { $0.deliverAt < $1.deliverAt }
        inFlight.removeAll { $0.deliverAt <= now }
        delivered += due.count
        return due
    }
}
