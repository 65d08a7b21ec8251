import Foundation

/// Starts a named thread running `body` (names show in `top -H` and in debuggers).
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}
