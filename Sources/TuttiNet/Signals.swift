import Glibc
import Synchronization

/// SIGINT and SIGTERM, turned into a call on a thread of their own: the signal handler only
/// writes a byte to a pipe (all a handler may safely do), and a watcher thread reading the
/// pipe calls the handlers. Whichever thread the system interrupts, the handlers run the
/// same way, outside the handler's restrictions.
public enum TerminationSignals {
    private static let handlers = Mutex<[@Sendable () -> Void]>([])
    /// The pipe's write end, for the signal handler (set once, before the handler is).
    nonisolated(unsafe) private static var wakeFD: Int32 = -1
    private static let installed = Mutex(false)

    /// Calls `handler` whenever the process gets SIGINT or SIGTERM.
    public static func onTermination(_ handler: @escaping @Sendable () -> Void) {
        handlers.withLock { $0.append(handler) }
        let first = installed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeFD = fds[1]
        let readFD = fds[0]
        startThread("tutti-signals") {
            var byte: UInt8 = 0
            var poller = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
            while true {
                if poll(&poller, 1, -1) < 0, errno != EINTR { return }
                while read(readFD, &byte, 1) == 1 {
                    for handler in handlers.withLock({ $0 }) { handler() }
                }
            }
        }
        for signal in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in
                var byte: UInt8 = 1
                let saved = errno
                _ = write(TerminationSignals.wakeFD, &byte, 1)
                errno = saved
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
    }
}
