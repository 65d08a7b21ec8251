import Synchronization

/// A tiny line logger to standard error: `2026-11-29 14:20:31.123 tutti[role] message`,
/// without the time where the journal keeps the lines (it stamps them itself). Quiet by
/// default for debug lines; `TUTTI_DEBUG=1` shows them.
public struct Log: Sendable {
    public let role: String
    private static let debugEnabled = System.environment("TUTTI_DEBUG") == "1"
    private static let lock = Mutex(())
    private static let stamped = !System.standardErrorIsJournal()

    public init(_ role: String) { self.role = role }

    public func info(_ message: @autoclosure () -> String) { emit(message()) }
    public func warning(_ message: @autoclosure () -> String) { emit("warning: " + message()) }
    public func error(_ message: @autoclosure () -> String) { emit("error: " + message()) }
    public func debug(_ message: @autoclosure () -> String) {
        if Log.debugEnabled { emit("debug: " + message()) }
    }

    private func emit(_ line: String) {
        Log.lock.withLock { _ in
            OutputFile.standardError.write((Log.stamped ? System.localTimestamp() + " " : "") + "tutti[\(role)] \(line)\n")
        }
    }
}

/// A flag threads poll to know when to stop; set from signal handlers or `stop()`.
public final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public var isSet: Bool { flag.load(ordering: .acquiring) }
    public func set() { flag.store(true, ordering: .releasing) }
}
