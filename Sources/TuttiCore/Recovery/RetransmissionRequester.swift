/// A follower's side of retransmission: notices packets missing from the stream, and decides
/// when to ask the coordinator for each again (RFC 4585 generic NACK), how many copies of the
/// request to send, and when to give up.
///
/// The stream's packets say when they were sent, so the requester knows the path's recent
/// worst delay (about its 99th percentile): a missing packet is asked for as soon as it is
/// overdue by that much (not merely when a later one arrives: on a jittery path it may still
/// be on its way), then again after a round trip, for as long as a retransmission can still
/// arrive before the packet must be decoded (its presentation time minus the output's lead).
/// On a lossy path each request goes out in several copies, so that one lost request (or
/// one lost retransmission) does not lose the packet. Times are coordinator times.
public struct RetransmissionRequester: Sendable {
    public struct Configuration: Sendable {
        /// Missing packets tracked at most: a longer gap is an outage, long past saving.
        public var maximumMissing = 64
        /// Added to the path's worst recent delay before a packet counts as missing, and to
        /// each wait for a retransmission.
        public var margin: Int64 = 2_000_000
        public init() {}
    }

    public struct Statistics: Equatable, Sendable {
        /// Packets the network lost (gaps in the sequence), requests sent (NACK packets,
        /// counting copies), packets asked for, and packets that came back by retransmission.
        public var missed = 0
        public var requests = 0
        public var requested = 0
        public var recovered = 0
        /// Packets given up on: too late for a retransmission to arrive in time.
        public var abandoned = 0
    }

    private struct Missing {
        var presentation: CoordinatorTime
        var nextRequest: CoordinatorTime
        var requests = 0
    }

    public let configuration: Configuration
    private var sequences = Unwrapper(bits: 16)
    private var ssrc: UInt32?
    private var missing: [Int64: Missing] = [:]
    private var highest: (sequence: Int64, presentation: CoordinatorTime)?
    /// Presentation time minus send time: how far ahead the coordinator sends.
    private var lead: Int64?
    /// The last packets' one-way delays (arrival minus send, on the coordinator's clock).
    private var delays: [Int64] = []
    private var nextDelay = 0
    /// Nanoseconds of stream per packet.
    private var packetDuration: Int64 = 20_000_000
    /// Share of packets the network loses, smoothed over about 250 packets.
    public private(set) var lossRate = 0.0
    public private(set) var statistics = Statistics()

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The path's recent worst delay (the second largest of the last 128), and its smallest.
    public var worstDelay: Int64 {
        guard delays.count >= 2 else { return delays.first ?? 0 }
        var top = (Int64.min, Int64.min)
        for d in delays {
            if d > top.0 { top = (d, top.0) } else if d > top.1 { top.1 = d }
        }
        return top.1
    }

    public var quickestDelay: Int64 { delays.min() ?? 0 }

    /// A packet of stream `ssrc` arrived at `arrival`; `sent` is its send stamp (none on a
    /// retransmission, whose delay says nothing of the path's).
    public mutating func arrived(ssrc: UInt32, sequence raw: SequenceNumber, presentation: CoordinatorTime,
                                 sent: CoordinatorTime?, at arrival: CoordinatorTime, retransmitted: Bool) {
        if self.ssrc != ssrc { reset(ssrc: ssrc) }
        let sequence = sequences.unwrap(UInt64(raw.rawValue))
        if let entry = missing.removeValue(forKey: sequence) {
            if retransmitted, entry.requests > 0 { statistics.recovered += 1 }
            return
        }
        guard !retransmitted else { return }
        if let sent {
            lead = presentation - sent
            if delays.count < 128 { delays.append(arrival - sent) } else { delays[nextDelay] = arrival - sent }
            nextDelay = (nextDelay + 1) % 128
        }
        guard let h = highest else {
            highest = (sequence, presentation)
            return
        }
        guard sequence > h.sequence else { return }  // reordered: it was not yet missing
        let gap = sequence - h.sequence - 1
        let duration = (presentation - h.presentation) / (gap + 1)
        if duration >= 2_000_000, duration <= 120_000_000 { packetDuration = duration }  // not across a cut
        if gap > 0 {
            statistics.missed += Int(gap)
            let wait = worstDelay + configuration.margin
            for k in max(h.sequence + 1, sequence - Int64(configuration.maximumMissing))..<sequence {
                let p = presentation - (sequence - k) * packetDuration
                let first = lead.map { p - $0 + wait } ?? arrival
                missing[k] = Missing(presentation: p, nextRequest: max(first, arrival - packetDuration))
            }
            if missing.count > configuration.maximumMissing {
                for k in missing.keys.sorted().prefix(missing.count - configuration.maximumMissing) { missing.removeValue(forKey: k) }
            }
        }
        for _ in 0..<min(gap, 256) { lossRate += (1 - lossRate) / 256 }
        lossRate -= lossRate / 256
        highest = (sequence, presentation)
    }

    /// When the next request is due, if any packet is missing.
    public var nextDue: CoordinatorTime? { missing.values.map(\.nextRequest).min() }

    /// The sequence numbers to ask for at `now`, and in how many copies; `outputLead` is how
    /// far ahead of being heard the output decodes (a packet must arrive before that).
    public mutating func due(at now: CoordinatorTime, outputLead: Int64) -> (sequences: [SequenceNumber], copies: Int) {
        var asked: [Int64] = []
        let roundTrip = 2 * worstDelay + configuration.margin
        for (k, entry) in missing {
            if now + quickestDelay >= entry.presentation - outputLead {
                missing.removeValue(forKey: k)
                statistics.abandoned += 1
                continue
            }
            guard now >= entry.nextRequest else { continue }
            asked.append(k)
            missing[k]!.requests += 1
            missing[k]!.nextRequest = now + roundTrip
        }
        guard !asked.isEmpty else { return ([], 0) }
        let copies = lossRate < 0.01 ? 1 : lossRate < 0.05 ? 2 : 3
        statistics.requested += asked.count
        statistics.requests += copies
        return (asked.sorted().map { SequenceNumber(UInt16(truncatingIfNeeded: $0)) }, copies)
    }

    /// Forgets everything about the stream (a new one began).
    public mutating func reset(ssrc: UInt32? = nil) {
        self.ssrc = ssrc
        sequences.reset()
        missing.removeAll()
        highest = nil
    }
}
