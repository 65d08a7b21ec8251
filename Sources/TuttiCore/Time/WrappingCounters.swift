/// The RTP timestamp: 32 bits, wrapping, counting 48 kHz sample frames.
public struct StreamTimestamp: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    /// Signed distance from `self` to `other`, correct across one wrap (|d| < 2^31).
    public func distance(to other: StreamTimestamp) -> Int64 {
        Int64(Int32(bitPattern: other.rawValue &- rawValue))
    }
    public func advanced(by frames: Int64) -> StreamTimestamp {
        StreamTimestamp(rawValue &+ UInt32(truncatingIfNeeded: frames))
    }
    public var description: String { "ts\(rawValue)" }
}

extension UInt32 {
    /// Whether `self` comes after `other` on a 32-bit counter that wraps (versions, epochs):
    /// within half the counter's range ahead of it (serial-number arithmetic, RFC 1982).
    public func isAfter(_ other: UInt32) -> Bool { Int32(bitPattern: self &- other) > 0 }
}

/// The RTP sequence number: 16 bits, wrapping.
public struct SequenceNumber: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    /// Signed distance from `self` to `other`, correct across one wrap (|d| < 2^15).
    public func distance(to other: SequenceNumber) -> Int64 {
        Int64(Int16(bitPattern: other.rawValue &- rawValue))
    }
    public func advanced(by n: Int64) -> SequenceNumber {
        SequenceNumber(rawValue &+ UInt16(truncatingIfNeeded: n))
    }
    public var description: String { "seq\(rawValue)" }
}

/// Extends a wrapping counter to 64 bits by tracking the last value seen.
///
/// Values may arrive out of order; each is placed at the 64-bit value nearest the
/// previous one, so reordering by less than half the counter's range is safe.
public struct Unwrapper: Sendable {
    private let bits: Int
    private var last: Int64?
    public init(bits: Int) { self.bits = bits }

    public mutating func unwrap(_ value: UInt64) -> Int64 {
        let range = Int64(1) << bits
        let v = Int64(value & UInt64(range - 1))
        guard let last else {
            self.last = v
            return v
        }
        var delta = (v - last) & (range - 1)
        if delta >= range / 2 { delta -= range }
        let extended = last + delta
        if extended > last { self.last = extended }
        return extended
    }

    public mutating func reset() { last = nil }
}
