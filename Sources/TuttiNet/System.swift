import Glibc
import TuttiCore

/// A failed system call, with the call's name and errno's message; or a failure of TLS,
/// which says in its own words what was wrong (`tls`).
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public var call: String
    public var errno: Int32
    /// The message is `call` alone: a TLS failure, not the system's.
    public var tls = false

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public static func tls(_ message: String) -> SystemError {
        var error = SystemError(call: message, errno: EPROTO)
        error.tls = true
        return error
    }

    public var description: String { tls ? call : "\(call): \(reason)" }

    /// The system's words for the error ("No such file or directory").
    public var reason: String { String(cString: strerror(errno)) }
}

/// The fence around system calls: each returns its result or throws `SystemError`. The
/// call's description is made only when it failed (a follower sends and receives some 100
/// datagrams a second; describing each one's address showed in its profile).
public enum System {
    @discardableResult
    public static func check(_ call: @autoclosure () -> String, _ rc: Int32) throws(SystemError) -> Int32 {
        if rc < 0 {
            let code = Glibc.errno
            throw SystemError(call: call(), errno: code)
        }
        return rc
    }

    /// The environment variable `name`, if set.
    public static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Whether standard error is the journal's stream: systemd names its device and inode
    /// in JOURNAL_STREAM for a service whose output it keeps (and stamps with the time).
    public static func standardErrorIsJournal() -> Bool {
        guard let stream = environment("JOURNAL_STREAM") else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return stream == "\(status.st_dev):\(status.st_ino)"
    }

    /// The wall clock's local time as `2026-11-29 14:20:31.123`, for log lines.
    public static func localTimestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        localtime_r(&seconds, &parts)
        var text = [CChar](repeating: 0, count: 32)
        let count = strftime(&text, text.count, "%Y-%m-%d %H:%M:%S", &parts)
        let date = String(decoding: text[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let millis = now.tv_nsec / 1_000_000
        return date + "." + (millis < 10 ? "00" : millis < 100 ? "0" : "") + String(millis)
    }

    /// Ends the process with `code` (after stdio's buffers are flushed).
    public static func exit(_ code: Int32) -> Never { Glibc.exit(code) }

    /// Whether this process runs as root.
    public static var isRoot: Bool { getuid() == 0 }

    /// The home folder the user database gives this process's user ("/tmp" when it has none).
    public static func homeOfUser() -> String {
        guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return "/tmp" }
        return String(cString: dir)
    }

    /// Whether nothing listens on TCP `port` of `host` (an IPv4 address; by default all
    /// this machine's): a listener's bind there would succeed.
    public static func tcpPortIsFree(_ port: UInt16, host: String = "0.0.0.0") -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return true }  // not an address: the bind will say
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0 || errno != EADDRINUSE
    }

    /// The columns and rows of the terminal on standard output (nil when it is none).
    public static func terminalSize() -> (columns: Int, rows: Int)? {
        var w = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0, w.ws_row > 0 else { return nil }
        return (Int(w.ws_col), Int(w.ws_row))
    }

    /// This machine's host name ("localhost" when the system will not say).
    public static func hostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        return string(filledBy: name)
    }

    /// The text a C call wrote into `buffer`: up to its first NUL, UTF-8.
    public static func string(filledBy buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// How the calling thread is scheduled after `raisePriority`.
    public enum Scheduling: Equatable, Sendable {
        /// Real-time round robin at this priority: it runs the moment it wakes.
        case realtime(Int32)
        /// Ordinary time sharing at this niceness (below 0: before ordinary processes).
        case raised(Int32)
        /// As it was: neither was permitted (the error of the last try).
        case unchanged(String)
    }

    /// Asks the kernel to run the calling thread (and the threads it starts from now on)
    /// ahead of ordinary ones, as a sound server runs, below the sound server's own threads
    /// (PulseAudio's run at real-time priority 5, PipeWire's higher): round robin at `realtime`
    /// where this process may (root, CAP_SYS_NICE, or RLIMIT_RTPRIO, as systemd's
    /// `LimitRTPRIO=` grants), else niceness `nice` (RLIMIT_NICE, `LimitNICE=`), else as it is.
    public static func raisePriority(realtime: Int32 = 3, nice: Int32 = -10) -> Scheduling {
        var parameters = sched_param()
        parameters.sched_priority = realtime
        if sched_setscheduler(0, SCHED_RR, &parameters) == 0 { return .realtime(realtime) }
        if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0 { return .raised(nice) }
        return .unchanged(String(cString: strerror(errno)))
    }

    /// Sleeps the calling thread for `nanoseconds` (again after a signal, for what is left).
    public static func sleep(nanoseconds: Int64) {
        guard nanoseconds > 0 else { return }
        var asked = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var left = timespec()
        while nanosleep(&asked, &left) != 0, errno == EINTR { asked = left }
    }

    /// Sleeps in `poll` on descriptors another library handed out (a sound device's) for at
    /// most `timeoutMilliseconds`; a signal ends the wait early, not in an error.
    public static func poll(_ descriptors: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) {
        if Glibc.poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds) < 0, errno != EINTR {
            throw SystemError(call: "poll", errno: errno)
        }
    }

    static func checkSize(_ call: @autoclosure () -> String, _ rc: Int) throws(SystemError) -> Int {
        if rc < 0 {
            let code = Glibc.errno
            throw SystemError(call: call(), errno: code)
        }
        return rc
    }
}

/// CLOCK_MONOTONIC, the clock every tutti process keeps time by: every reading of time in
/// tutti comes through here (and the kernel's and PulseAudio's stamps are converted with it),
/// so that a test can run a process on a clock of its own (`ClockTransform`).
public struct SystemClock: MonotonicClock {
    public init() {}

    public func nanosecondsNow() -> Int64 {
        ClockTransform.process.local(host: Self.hostNanoseconds())
    }

    /// Local nanoseconds per host nanosecond (1 unless a test scales this process's clock).
    public var rate: Double { ClockTransform.process.rate }

    /// The local time of a wall-clock (CLOCK_REALTIME) stamp taken on this host a moment ago:
    /// the kernel's receive stamps. Both host clocks advance together between steps.
    public func local(ofWallClock stamp: Int64) -> Int64 {
        let (now, wall) = Self.readWithWallClock(self)
        return now - Int64((Double(wall - stamp) * rate).rounded())
    }

    /// `clock`'s time and the wall clock's, read at one moment: of three tries, the pair whose
    /// two readings of `clock` around the wall clock's lie closest (at once when under 20 µs
    /// apart), at their middle. Read one after the other, a thread preempted between them
    /// pairs times apart by the preemption: the coordinator, stalled 6 ms, dated a kernel
    /// receive stamp 1.1 ms before the request could have come, and the follower's clock
    /// kept that error's half, 0.55 ms, for as long as its readings lasted.
    public static func readWithWallClock(_ clock: any MonotonicClock) -> (local: Int64, wall: Int64) {
        var best: (spread: Int64, local: Int64, wall: Int64) = (.max, 0, 0)
        for _ in 0..<3 {
            let before = clock.nanosecondsNow()
            let wall = wallNanoseconds()
            let after = clock.nanosecondsNow()
            if after - before < best.spread { best = (after - before, before + (after - before) / 2, wall) }
            if best.spread < 20_000 { break }
        }
        return (best.local, best.wall)
    }

    /// The host's CLOCK_MONOTONIC, untransformed (a sound device's stamps are on it).
    public static func hostNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// The wall clock as Unix time (s): when something happened, as people and files say it
    /// (a calibration's date, a saved position's, a library scan's). Never for durations.
    public static func unixSeconds() -> Double {
        Double(wallNanoseconds()) / 1e9
    }

    /// CLOCK_REALTIME, for converting the kernel's and the sound server's wall-clock stamps.
    public static func wallNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// How this process's clock reads against the host's: `local = host + offset + (host − start)
/// × ppm / 10⁶`. The identity, unless a test or benchmark runs a process on a clock of its own
/// with `TUTTI_CLOCK_RATE_PPM` (a follower whose crystal runs fast or slow) or
/// `TUTTI_CLOCK_OFFSET_MS` (a coordinator that rebooted: its clock starts elsewhere). Every
/// reading of the host's clock a tutti process takes goes through it, consistently: clock
/// reads, the kernel's receive stamps, PulseAudio's and ALSA's timing stamps; a faithful
/// drifting host, where libfaketime only scales the clock reads (docs/timing.md). The
/// durations a sound device reports are its own time, which the follower converts at the
/// rate it measures for the device, not through this.
public struct ClockTransform: Sendable {
    public let ppm: Double
    public let offset: Int64
    /// The host time from which the rate applies (the process's start).
    public let start: Int64

    public init(ppm: Double = 0, offset: Int64 = 0, start: Int64) {
        self.ppm = ppm
        self.offset = offset
        self.start = start
    }

    public var rate: Double { 1 + ppm * 1e-6 }

    public func local(host: Int64) -> Int64 {
        guard ppm != 0 || offset != 0 else { return host }
        return host + offset + Int64((Double(host - start) * ppm * 1e-6).rounded())
    }

    /// This process's, from its environment (read once).
    public static let process: ClockTransform = {
        let ppm = System.environment("TUTTI_CLOCK_RATE_PPM").flatMap(Double.init) ?? 0
        let offsetMilliseconds = System.environment("TUTTI_CLOCK_OFFSET_MS").flatMap(Double.init) ?? 0
        return ClockTransform(ppm: min(max(ppm, -1_000), 1_000), offset: Int64(offsetMilliseconds * 1e6),
                              start: SystemClock.hostNanoseconds())
    }()
}

/// The calling thread's name as the system shows it (`top -H`, `ps -L`, /proc/PID/task):
/// written to /proc/thread-self/comm, which keeps the first 15 bytes. Best effort: a
/// system without /proc keeps the process's name for the thread.
public func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
