import Foundation
import TuttiNet

/// The keys of a full-screen lyric screen: `q` or Esc quits (Ctrl-C too, as a signal). While
/// it reads, the terminal neither echoes nor waits for Return; `restore()` puts it back.
final class TerminalKeys: @unchecked Sendable {
    private var saved = termios()

    /// Nil when standard input is not a terminal (then there is nothing to read keys from).
    init?() {
        guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
    }

    func restore() {
        _ = tcsetattr(STDIN_FILENO, TCSANOW, &saved)
    }

    /// Reads keys until `stop` is set or input ends; calls `quit` for `q`, `Q` or a lone Esc.
    func run(stop: StopFlag, quit: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 32)
        while !stop.isSet {
            var fd = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, 200)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { if ready < 0 { return } else { continue } }
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count <= 0 { return }  // input closed: keep the screen, stop reading
            let keys = buffer[..<count]
            // An escape sequence (an arrow key) arrives whole; a lone Esc is a key of its own.
            if keys.contains(UInt8(ascii: "q")) || keys.contains(UInt8(ascii: "Q")) || (count == 1 && keys.first == 0x1B) {
                quit()
                return
            }
        }
    }
}
