import Glibc
import TuttiCore

/// A failed system call, with the call's name and errno's message.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public var call: String
    public var errno: Int32
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// The fence around system calls: each returns its result or throws `SystemError`.
enum System {
    @discardableResult
    static func check(_ call: String, _ rc: Int32) throws(SystemError) -> Int32 {
        if rc < 0 { throw SystemError(call: call, errno: Glibc.errno) }
        return rc
    }

    static func checkSize(_ call: String, _ rc: Int) throws(SystemError) -> Int {
        if rc < 0 { throw SystemError(call: call, errno: Glibc.errno) }
        return rc
    }
}

/// CLOCK_MONOTONIC, the clock every tutti process keeps time by.
public struct SystemClock: MonotonicClock {
    public init() {}
    public func nanosecondsNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// CLOCK_REALTIME, for converting the kernel's wall-clock stamps.
    static func wallNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
