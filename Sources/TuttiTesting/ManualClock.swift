import Synchronization
import TuttiCore

/// A clock that moves only when told to. For tests of timing logic.
public final class ManualClock: MonotonicClock, Sendable {
    private let now: Mutex<Int64>
    public init(start: Int64 = 1_000_000_000) { now = Mutex(start) }
    public func nanosecondsNow() -> Int64 { now.withLock { $0 } }
    public func advance(by nanoseconds: Int64) { now.withLock { $0 += nanoseconds } }
    public func set(_ nanoseconds: Int64) { now.withLock { $0 = nanoseconds } }
}

/// A stand-in for the house key's HMAC (TuttiSecurity's `HMACAuthenticator`, tested on its
/// own): a keyed sum, enough to tell keys and changed bytes apart in tests of pure logic.
public struct SumTag: MessageAuthenticator {
    public var key: UInt8
    public init(key: UInt8) { self.key = key }
    public func tag(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        (0..<16).map { i in bytes.enumerated().reduce(key &+ UInt8(i)) { $0 &* 31 &+ $1.element &+ UInt8(truncatingIfNeeded: $1.offset) } }
    }
    public func verify(_ tag: ArraySlice<UInt8>, for bytes: ArraySlice<UInt8>) -> Bool { Array(tag) == self.tag(bytes) }
}
