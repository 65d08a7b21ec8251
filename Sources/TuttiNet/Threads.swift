import Glibc

/// Starts a named thread running `body`. The name is the system's too (at most 15
/// characters show), so it shows in `top -H`, `ps -L`, /proc/PID/task and debuggers. The
/// thread is detached: it ends when `body` returns.
public func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    final class Start: @unchecked Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    let start = Unmanaged.passRetained(Start(name, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
        nameThisThread(start.name)
        start.body()
        return nil
    }, start)
    // Without a thread the process cannot do its work at all.
    precondition(rc == 0, "cannot start the thread \(name): \(String(cString: strerror(rc)))")
    pthread_detach(thread)
}
