/// A 64-bit NTP-format timestamp (RFC 5905 §6): 32 bits of seconds, 32 bits of fraction.
///
/// tutti puts coordinator time on the wire in this format. The epoch is the coordinator's
/// monotonic clock epoch (not 1900): only differences and the shared timeline matter.
public struct NTPTimestamp: Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Converts nanoseconds (non-negative) to 32.32 fixed point, rounding to nearest.
    public init(nanoseconds: Int64) {
        let ns = UInt64(max(0, nanoseconds))
        let seconds = ns / 1_000_000_000
        let rem = ns % 1_000_000_000
        let fraction = (rem << 32 + 500_000_000) / 1_000_000_000
        rawValue = (seconds << 32) &+ fraction
    }

    public var nanoseconds: Int64 {
        let seconds = rawValue >> 32
        let fraction = rawValue & 0xFFFF_FFFF
        return Int64(seconds * 1_000_000_000 + (fraction * 1_000_000_000 + (1 << 31)) >> 32)
    }

    public init(_ time: CoordinatorTime) { self.init(nanoseconds: time.nanoseconds) }
    public var coordinatorTime: CoordinatorTime { CoordinatorTime(nanoseconds: nanoseconds) }
    /// The middle 32 bits, as RTCP uses for LSR/DLSR.
    public var middle32: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }
}
