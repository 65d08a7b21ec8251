/// The coordinator's side of retransmission: keeps the packets it sent lately, answers a
/// follower's generic NACK (RFC 4585) with RFC 4588 retransmissions, and limits what any one
/// requester can have resent (a token bucket each), so that a NACK cannot make it flood
/// anyone. Only peers the shell knows (followers that exchange time) should be answered.
public struct Retransmitter<Peer: Hashable & Sendable>: Sendable {
    public struct Configuration: Sendable {
        /// Packets kept (at 50 a second, 5 s: far more than any latency).
        public var history = 256
        /// Retransmissions per second a peer may have, and how many at once.
        public var rate = 50.0
        public var burst = 100.0
        /// Peers whose buckets are kept; the quietest go first.
        public var peers = 512
        public init() {}
    }

    public struct Statistics: Equatable, Sendable {
        /// Packets asked for, resent, no longer (or never) held, and refused for the rate.
        public var requested = 0
        public var resent = 0
        public var unknown = 0
        public var refused = 0
        /// NACKs for another stream (an earlier run's).
        public var foreign = 0
        public init() {}
    }

    public let configuration: Configuration
    /// The retransmission stream's SSRC, and the stream whose packets it resends.
    public let ssrc: UInt32
    public let mediaSSRC: UInt32
    private var slots: [RTPPacket?]
    private var nextSequence: SequenceNumber
    private var buckets: [Peer: (tokens: Double, at: Int64)] = [:]
    public private(set) var statistics = Statistics()

    public init(mediaSSRC: UInt32, ssrc: UInt32, initialSequence: UInt16, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.mediaSSRC = mediaSSRC
        self.ssrc = ssrc
        nextSequence = SequenceNumber(initialSequence)
        slots = Array(repeating: nil, count: max(1, configuration.history))
    }

    /// Keeps a packet just sent.
    public mutating func record(_ packet: RTPPacket) {
        slots[Int(packet.sequenceNumber.rawValue) % slots.count] = packet
    }

    /// The retransmissions to send `peer` for `nack` at `now` (nanoseconds, any monotonic
    /// clock): those it asked for that are still held, as far as its bucket allows.
    public mutating func answer(_ nack: GenericNACK, from peer: Peer, now: Int64) -> [RTPPacket] {
        guard nack.mediaSSRC == mediaSSRC else {
            statistics.foreign += 1
            return []
        }
        var bucket = buckets[peer] ?? (configuration.burst, now)
        bucket.tokens = min(configuration.burst, bucket.tokens + Double(max(0, now - bucket.at)) / 1e9 * configuration.rate)
        bucket.at = now
        var out: [RTPPacket] = []
        for sequence in nack.sequences {
            statistics.requested += 1
            guard let packet = slots[Int(sequence.rawValue) % slots.count], packet.sequenceNumber == sequence else {
                statistics.unknown += 1
                continue
            }
            guard bucket.tokens >= 1 else {
                statistics.refused += 1
                continue
            }
            bucket.tokens -= 1
            // Each codec's retransmissions have a payload type of their own (RFC 4588's apt).
            let payloadType = StreamCodec(payloadType: packet.payloadType)?.retransmissionPayloadType ?? RTPPacket.retransmissionPayloadType
            out.append(packet.retransmission(payloadType: payloadType, ssrc: ssrc, sequence: nextSequence))
            nextSequence = nextSequence.advanced(by: 1)
            statistics.resent += 1
        }
        buckets[peer] = bucket
        if buckets.count > configuration.peers {  // forget the peer heard from longest ago
            if let oldest = buckets.min(by: { $0.value.at < $1.value.at })?.key { buckets.removeValue(forKey: oldest) }
        }
        return out
    }
}
