import Foundation
import TuttiNet

/// Starts a named thread running `body`. The name is the system's too (at most 15
/// characters show), so it shows in `top -H`, `ps -L`, /proc/PID/task and debuggers.
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        nameThisThread(name)
        body()
    }
    thread.name = name
    thread.start()
}
