import Foundation
import TuttiCore

/// One direction of a network path, as the tests' fake networks and the benchmark's relay
/// (bench/lib/netem.py) model it: a delay with uniform jitter around it (netem's default),
/// independent loss, queueing bursts (the delay climbs for a while, as a Wi-Fi queue fills),
/// holes (everything lost for a while) and outages.
public struct PathModel: Sendable {
    /// Mean delay and the ± jitter around it, nanoseconds.
    public var delay: Int64
    public var jitter: Int64
    /// Probability that a packet is lost.
    public var loss: Double
    /// The mean of a small random cost every packet pays (gamma-distributed, shape 3: rarely
    /// near zero), as hosts and relays add: it blurs the path's floor.
    public var fuzz: Int64 = 0
    /// Every `burstEvery` ns, for `burstLength` ns, packets queue: up to `burstDelay` more.
    public var burstEvery: Int64 = 0
    public var burstLength: Int64 = 0
    public var burstDelay: Int64 = 0
    /// Every `holeEvery` ns, for `holeLength` ns, every packet is lost.
    public var holeEvery: Int64 = 0
    public var holeLength: Int64 = 0
    /// Every `stallEvery` ns, for `stallLength` ns, the path holds every packet and then
    /// delivers them all at once (Wi-Fi power save, retries, a scan): nothing is lost.
    public var stallEvery: Int64 = 0
    public var stallLength: Int64 = 0
    /// Outages: every packet sent within one of these (start, end) spans is lost.
    public var outages: [(start: Int64, end: Int64)] = []

    public init(delay: Int64 = 0, jitter: Int64 = 0, loss: Double = 0) {
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
    }

    /// The smallest delay a packet can have.
    public var floor: Int64 { max(0, delay - jitter) }

    /// The delay of a packet sent at `time`, or nil when it is lost.
    public func delay(sentAt time: Int64, using random: inout SeededRandom) -> Int64? {
        if outages.contains(where: { time >= $0.start && time < $0.end }) { return nil }
        if holeEvery > 0, time % holeEvery < holeLength { return nil }
        if loss > 0, Double.random(in: 0..<1, using: &random) < loss { return nil }
        var d = delay + (jitter > 0 ? Int64.random(in: -jitter...jitter, using: &random) : 0)
        if fuzz > 0 {  // the sum of three exponentials of mean fuzz / 3
            for _ in 0..<3 { d += Int64(-Double(fuzz) / 3 * log(1 - Double.random(in: 0..<1, using: &random))) }
        }
        if burstEvery > 0, burstLength > 0 {
            let into = time % burstEvery
            if into < burstLength {  // a queue that fills and drains: a triangle
                let phase = Double(into) / Double(burstLength)
                d += Int64(Double(burstDelay) * (1 - abs(2 * phase - 1)))
            }
        }
        if stallEvery > 0, stallLength > 0 {
            let into = time % stallEvery
            if into < stallLength { d += stallLength - into }  // on its way when the stall ends
        }
        return max(0, d)
    }
}
