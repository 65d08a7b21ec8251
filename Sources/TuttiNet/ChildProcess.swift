import FoundationEssentials
import Glibc

/// A child process started with posix_spawn and reaped with waitpid, so that its exit is
/// seen without a run loop. Only processes this one started are ever signalled.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private var status: Int32?

    /// Starts `arguments[0]` (searched in PATH) with the rest as arguments. Standard input
    /// is /dev/null; standard output goes to `stdoutPath` when given.
    /// With `appending`, output files are added to rather than replaced (children sharing a log).
    public init(_ arguments: [String], stdoutPath: String? = nil, stderrPath: String? = nil, quiet: Bool = false,
                environment: [String: String]? = nil, appending: Bool = false) throws {
        let mode = O_WRONLY | O_CREAT | (appending ? O_APPEND : O_TRUNC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdoutPath {
            posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, mode, 0o644)
        }
        if let stderrPath {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, mode, 0o644)
        } else if quiet {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var env: [UnsafeMutablePointer<CChar>?] = []
        if let environment {
            var merged = ProcessInfo.processInfo.environment
            merged.merge(environment) { $1 }
            env = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { env.forEach { free($0) } }
        // The child starts with default signal handling and nothing blocked, whatever this
        // process ignores or blocks (tutti itself ignores SIGINT/SIGTERM to catch them).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var child: pid_t = 0
        let rc = environment == nil
            ? posix_spawnp(&child, arguments[0], &actions, &attributes, argv, environ)
            : posix_spawnp(&child, arguments[0], &actions, &attributes, argv, env)
        guard rc == 0 else { throw ChildProcessError.cannotStart(arguments[0], String(cString: strerror(rc))) }
        pid = child
    }

    /// True until the child has exited (and been reaped).
    public var isRunning: Bool {
        if status != nil { return false }
        var s: Int32 = 0
        let r = waitpid(pid, &s, WNOHANG)
        if r == pid || r < 0 { status = s; return false }
        return true
    }

    /// The exit code (or 128 + signal), once exited.
    public var exitCode: Int32? {
        guard !isRunning, let s = status else { return nil }
        let sig = s & 0x7F
        return sig == 0 ? (s >> 8) & 0xFF : 128 + sig
    }

    /// Waits up to `timeout` seconds; returns the exit code, or nil if still running.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        let deadline = SystemClock.hostNanoseconds() + Int64(timeout * 1e9)
        while isRunning && SystemClock.hostNanoseconds() < deadline { System.sleep(nanoseconds: 10_000_000) }
        return exitCode
    }

    /// SIGTERM, then SIGKILL after `grace` seconds.
    public func terminate(grace: Double = 3) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        if wait(timeout: grace) == nil {
            kill(pid, SIGKILL)
            wait(timeout: 2)
        }
    }

    /// Where `program` is found in PATH (or the path itself, when it names one), if it is
    /// an executable file.
    public static func find(_ program: String) -> String? { Files.executable(program) }

    /// Runs a command to completion (at most `timeout` seconds); returns its standard
    /// output when it exits 0.
    public static func output(_ arguments: [String], timeout: Double = 5) -> String? {
        guard let folder = try? Files.makePrivateFolder(prefix: "tutti-out-") else { return nil }
        let path = folder + "/stdout"
        defer { unlink(path); rmdir(folder) }
        guard let child = try? ChildProcess(arguments, stdoutPath: path, quiet: true) else { return nil }
        guard let code = child.wait(timeout: timeout) else {
            child.terminate(grace: 0.5)
            return nil
        }
        guard code == 0, let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

public enum ChildProcessError: Error, CustomStringConvertible {
    case cannotStart(String, String)
    public var description: String {
        switch self {
        case let .cannotStart(cmd, why): "cannot start \(cmd): \(why)"
        }
    }
}
