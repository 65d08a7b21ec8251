/// Nanoseconds on the shared clock: the coordinator's monotonic clock.
///
/// Every follower and lyric screen converts to and from this timeline; it is what the
/// presentation time of each audio packet is expressed in. See docs/timing.md.
public struct CoordinatorTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Self, d: Int64) -> Self { Self(nanoseconds: a.nanoseconds &+ d) }
    public static func - (a: Self, d: Int64) -> Self { Self(nanoseconds: a.nanoseconds &- d) }
    /// Signed nanoseconds from `b` to `a`.
    public static func - (a: Self, b: Self) -> Int64 { a.nanoseconds &- b.nanoseconds }
    public var description: String { "C\(Duration.describe(nanoseconds))" }
}

/// Nanoseconds on a follower's (or screen's) own monotonic clock.
public struct LocalTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Self, d: Int64) -> Self { Self(nanoseconds: a.nanoseconds &+ d) }
    public static func - (a: Self, d: Int64) -> Self { Self(nanoseconds: a.nanoseconds &- d) }
    public static func - (a: Self, b: Self) -> Int64 { a.nanoseconds &- b.nanoseconds }
    public var description: String { "L\(Duration.describe(nanoseconds))" }
}

extension Duration {
    /// Human-readable seconds with millisecond precision, for logs.
    static func describe(_ ns: Int64) -> String {
        let ms = Double(ns) / 1e6
        return ms.fixed(3) + "ms"
    }
}

/// The audio format everything inside tutti runs at: 48 kHz, interleaved stereo float.
public enum AudioFormat {
    public static let sampleRate = 48_000
    public static let channels = 2
    /// Nanoseconds per sample frame is not an integer; convert with these helpers.
    @inlinable public static func nanoseconds(forFrames frames: Int64) -> Int64 {
        frames * 1_000_000_000 / Int64(sampleRate)
    }
    @inlinable public static func frames(forNanoseconds ns: Int64) -> Int64 {
        ns * Int64(sampleRate) / 1_000_000_000
    }
    /// `frames` at `rate` as frames at `other` (48 kHz unless said), rounded down: a media
    /// position of a track at its own rate as the house's, or back.
    @inlinable public static func frames(_ frames: Int64, at rate: Int, to other: Int = sampleRate) -> Int64 {
        guard rate != other, rate > 0 else { return frames }
        let (whole, part) = frames.quotientAndRemainder(dividingBy: Int64(rate))
        return whole * Int64(other) + part * Int64(other) / Int64(rate)
    }
    /// Frames as a real number, for sub-sample precision.
    @inlinable public static func exactFrames(forNanoseconds ns: Int64) -> Double {
        Double(ns) * Double(sampleRate) / 1e9
    }
}

/// A source of monotonic time in nanoseconds. Real code injects the system's
/// CLOCK_MONOTONIC; tests inject a manual clock. Core logic never reads a clock itself.
public protocol MonotonicClock: Sendable {
    func nanosecondsNow() -> Int64
    /// Nanoseconds of this clock per nanosecond of the host's: a duration the host measured
    /// (a sound server's latency) is this many of ours. 1 but for a scaled test clock.
    var rate: Double { get }
}

extension MonotonicClock {
    public var rate: Double { 1 }
}
