/// SRTP's packet indices (RFC 3711 §3.3.1): a 48-bit count per SSRC, the 16-bit sequence
/// number extended by a rollover counter (ROC) that grows each time the sequence wraps. The
/// index is part of each packet's nonce, so no two packets of a key may share one.

/// The sender's side: the rollover counter of one SSRC, advanced as its sequence numbers go by.
public struct RolloverCounter: Sendable, Equatable {
    public private(set) var rollover: UInt32 = 0
    private var last: UInt16?

    public init() {}

    /// The rollover counter for the packet with `sequence`, the next one sent (sequence
    /// numbers go up by one a packet: one lower than the last has wrapped).
    public mutating func next(_ sequence: UInt16) -> UInt32 {
        if let last, sequence < last { rollover &+= 1 }
        last = sequence
        return rollover
    }
}

/// The receiver's side of one SSRC (or one SRTCP sender): which indices it has taken, so a
/// replayed packet is refused (RFC 3711 §3.3.2), and the index a sequence number most likely
/// stands for. Only packets whose tag checked out may be `accept`ed.
public struct ReplayWindow: Sendable, Equatable {
    /// Packets this far behind the newest are refused (RFC 3711's minimum, 64).
    public static let size: UInt64 = 64
    public private(set) var highest: UInt64?
    /// Bit k: the index `highest - k` was taken.
    private var taken: UInt64 = 0

    public init() {}

    /// Whether `index` may be taken: newer than any so far, or within the window and unseen.
    public func isFresh(_ index: UInt64) -> Bool {
        guard let highest, index <= highest else { return true }
        let age = highest - index
        return age < Self.size && taken & (1 << age) == 0
    }

    /// Takes `index` (after its packet's tag checked out).
    public mutating func accept(_ index: UInt64) {
        guard let highest, index <= highest else {
            let shift = highest.map { index - $0 } ?? Self.size
            taken = shift >= Self.size ? 1 : taken << shift | 1
            highest = index
            return
        }
        taken |= 1 << (highest - index)
    }

    /// The 48-bit index of a packet with `sequence` (RFC 3711 Appendix A): the one nearest the
    /// newest index taken, starting at rollover 0 for a stream not seen before.
    public func index(of sequence: UInt16) -> UInt64 {
        guard let highest else { return UInt64(sequence) }
        let rollover = highest >> 16, last = UInt16(truncatingIfNeeded: highest)
        var guess = rollover
        if last < 0x8000 {
            if sequence > last, sequence - last > 0x8000, rollover > 0 { guess = rollover - 1 }
        } else if last - 0x8000 > sequence {
            guess = rollover + 1
        }
        return (guess << 16 | UInt64(sequence)) & 0xFFFF_FFFF_FFFF
    }
}
