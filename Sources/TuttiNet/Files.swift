import Glibc
import Synchronization

/// A file written from the start or appended to, a line at a time (traces, recordings, the
/// log on standard error). Part of the system-call fence: opening fails with a
/// `SystemError`; a later failed write is counted, not thrown, since the writers (traces,
/// logs) must not stop what they describe.
public final class OutputFile: Sendable {
    private let fd: Int32
    private let owned: Bool
    /// Writes that failed (any thread writes: the log is one file for all of them).
    public var failedWrites: Int { failures.load(ordering: .relaxed) }
    private let failures = Atomic<Int>(0)

    /// Creates (or truncates) `path`.
    public init(creating path: String, permissions: mode_t = 0o644) throws(SystemError) {
        fd = try System.check("create \(path)", open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions))
        owned = true
    }

    private init(descriptor: Int32) {
        fd = descriptor
        owned = false
    }

    /// The process's standard error (never closed).
    public static let standardError = OutputFile(descriptor: STDERR_FILENO)

    deinit { if owned { Glibc.close(fd) } }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        if System.writeAll(fd, bytes) != nil { failures.add(1, ordering: .relaxed) }
    }

    /// Asks the system to put what was written on the disk.
    public func sync() {
        if fsync(fd) != 0 { failures.add(1, ordering: .relaxed) }
    }

    /// Writes at `offset` from the start, without moving where the next write goes (a WAV
    /// header's sizes, once known).
    public func write(_ bytes: [UInt8], at offset: Int) {
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        if n != bytes.count { failures.add(1, ordering: .relaxed) }
    }
}

extension System {
    /// Writes all of `bytes` to `fd`, again after a signal; nil, or the failed write's errno.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += n
        }
        return nil
    }
}

/// Reading files and making folders, through the fence.
public enum Files {
    /// The whole of a (small) regular file, or nil when it cannot be read, is not a regular
    /// file (a named pipe called `cover.jpg` would block the reader for ever; it is opened
    /// without waiting and refused), or is larger than `limit` (its size is looked at before
    /// a byte is read, and the read stops past it all the same).
    public static func read(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= limit else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            if bytes.count > limit { return nil }
        }
    }

    /// Makes `path` and the folders above it that are missing.
    public static func makeFolders(_ path: String, permissions: mode_t = 0o755) throws(SystemError) {
        var made = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            made += "/" + part
            if mkdir(made, permissions) != 0, errno != EEXIST { throw SystemError(call: "make the folder \(made)", errno: errno) }
        }
    }

    /// Makes a new folder only this user can enter, under `$TMPDIR` (else /tmp), named
    /// `prefix` and six random characters; returns its path.
    public static func makePrivateFolder(prefix: String) throws(SystemError) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/" + prefix + "XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SystemError(call: "make a folder in \(base)", errno: errno)
        }
        return String(cString: made)
    }

    /// Where `program` is found in PATH (or the path itself, when it names one), if it is
    /// an executable file.
    public static func executable(_ program: String) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = folder + "/" + program
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Makes a named pipe at `path` that only this user can open.
    public static func makePipe(_ path: String) throws(SystemError) {
        guard mkfifo(path, 0o600) == 0 else { throw SystemError(call: "make the pipe \(path)", errno: errno) }
    }

    /// Removes a folder and what is in it (not following links); errors are ignored.
    public static func removeFolder(_ path: String) {
        guard let folder = opendir(path) else { return }
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            var info = stat()
            if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { removeFolder(child) } else { unlink(child) }
        }
        closedir(folder)
        rmdir(path)
    }

    /// The folder `path` is in ("." for a bare name).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
