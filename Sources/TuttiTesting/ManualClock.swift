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
