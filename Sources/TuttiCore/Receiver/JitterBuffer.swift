/// One received audio packet, with its wrapping counters extended to 64 bits.
public struct BufferedPacket: Equatable, Sendable {
    public var sequence: Int64
    public var timestamp: Int64
    public var presentationTime: CoordinatorTime
    /// The payload: a view of the datagram it came in.
    public var payload: ArraySlice<UInt8>
    /// The packet is its epoch's first (the RTP marker): the stream starts with it.
    public var startsEpoch: Bool
    /// Its RTP payload type: which codec decodes it (`StreamCodec`).
    public var payloadType: UInt8

    public init(sequence: Int64, timestamp: Int64, presentationTime: CoordinatorTime, payload: ArraySlice<UInt8>,
                startsEpoch: Bool = false, payloadType: UInt8 = RTPPacket.defaultPayloadType) {
        self.payloadType = payloadType
        self.sequence = sequence
        self.timestamp = timestamp
        self.presentationTime = presentationTime
        self.payload = payload
        self.startsEpoch = startsEpoch
    }
}

/// Holds received packets in sequence order until the decoder asks for them.
///
/// Reorders; drops duplicates, packets whose turn has passed, and packets beyond its
/// capacity; reports a gap as a missing slot (with the packet after it, whose in-band
/// FEC may rebuild the lost one).
public struct JitterBuffer: Sendable {
    public enum InsertResult: Equatable, Sendable { case accepted, duplicate, late, overflow }

    public enum Slot: Equatable, Sendable {
        /// The next packet in order.
        case packet(BufferedPacket)
        /// Packet `sequence` never came (or not yet, but later ones did); `following` is
        /// the packet right after it, if present.
        case missing(sequence: Int64, following: BufferedPacket?)
        /// Nothing buffered at all; `sequence` is the slot that was due.
        case empty(sequence: Int64?)
    }

    public let capacity: Int
    fileprivate var entries: [Int64: BufferedPacket] = [:]
    /// The next sequence number to hand out; nil until the first pop.
    public private(set) var nextSequence: Int64?

    public init(capacity: Int) { self.capacity = capacity }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    /// The packet with extended sequence number `sequence`, if buffered.
    public func packet(_ sequence: Int64) -> BufferedPacket? { entries[sequence] }
    /// The packet that would be handed out first (lowest sequence at or after `nextSequence`).
    public var first: BufferedPacket? { entries.values.min { $0.sequence < $1.sequence } }
    public var last: BufferedPacket? { entries.values.max { $0.sequence < $1.sequence } }

    public mutating func insert(_ packet: BufferedPacket) -> InsertResult {
        if let next = nextSequence, packet.sequence < next { return .late }
        if entries[packet.sequence] != nil { return .duplicate }
        if entries.count >= capacity { return .overflow }
        entries[packet.sequence] = packet
        return .accepted
    }

    /// Hands out the next slot in sequence order and moves past it.
    public mutating func pop() -> Slot {
        guard let next = nextSequence ?? first?.sequence else { return .empty(sequence: nil) }
        if let p = entries.removeValue(forKey: next) {
            nextSequence = next + 1
            return .packet(p)
        }
        nextSequence = next + 1
        if entries.isEmpty { return .empty(sequence: next) }
        return .missing(sequence: next, following: entries[next + 1])
    }

    /// Drops everything before `sequence`, so that it is handed out next.
    public mutating func skip(to sequence: Int64) {
        for key in entries.keys where key < sequence { entries.removeValue(forKey: key) }
        nextSequence = sequence
    }

    public mutating func removeAll() {
        entries.removeAll()
        nextSequence = nil
    }
}

extension JitterBuffer {
    /// The buffered packets, lowest sequence first.
    public var packetsInOrder: [BufferedPacket] {
        entries.values.sorted { $0.sequence < $1.sequence }
    }
}
