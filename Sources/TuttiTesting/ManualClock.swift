import Synchronization
import TuttiCore

/// A clock that moves only when told to. For tests of timing logic.
public final class ManualClock: MonotonicClock, @unchecked Sendable {
    private let now: Mutex<Int64>
    public init(start: Int64 = 1_000_000_000) { now = Mutex(start) }
    public func nanosecondsNow() -> Int64 { now.withLock { $0 } }
    public func advance(by nanoseconds: Int64) { now.withLock { $0 += nanoseconds } }
    public func set(_ nanoseconds: Int64) { now.withLock { $0 = nanoseconds } }
}

/// A small, fast, seedable random number generator (SplitMix64), so that tests with
/// random loss and jitter are repeatable.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
