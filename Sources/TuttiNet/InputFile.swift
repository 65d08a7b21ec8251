import Glibc

/// A file read by the house: a track, a live input's named pipe or standard input. Opened
/// without ever blocking on what it names; reads and seeks that turn errno into a
/// `SystemError`, or into nil where a caller just waits and asks again.
public final class InputFile {
    /// What a path names, without following it into a read (a FIFO would block one).
    public enum Kind: Equatable, Sendable {
        case missing, folder, file, pipe, device, socket, other

        /// In words, for an error.
        public var described: String {
            switch self {
            case .missing: "missing"
            case .folder: "a folder"
            case .file: "a regular file"
            case .pipe: "a named pipe"
            case .device: "a device"
            case .socket: "a socket"
            case .other: "not a regular file"
            }
        }
    }

    private let descriptor: Int32
    private let owned: Bool
    /// A regular file (it has a size, and seeks), not a pipe.
    public let isRegular: Bool

    public static func kind(of path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .folder
        case S_IFREG: return .file
        case S_IFIFO: return .pipe
        case S_IFCHR, S_IFBLK: return .device
        case S_IFSOCK: return .socket
        default: return .other
        }
    }

    /// The canonical path (links resolved), or `path` as it is when it cannot be resolved.
    public static func realPath(_ path: String) -> String {
        guard let resolved = Glibc.realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The errno of a refusal to open what is not a regular file.
    public static let notRegularFile = EINVAL

    /// Opens the regular file at `path`, never blocking: anything else (a named pipe, a
    /// device, a folder) is refused, with `notRegularFile`.
    public init(regularFile path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(call: path, errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError(call: path, errno: EINVAL)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        descriptor = fd
        owned = true
        isRegular = true
    }

    /// Opens a named pipe for reading and writing (opening does not wait for a writer, and a
    /// writer that closes does not end it), or a regular file for reading.
    public init(pipeOrFile path: String, isPipe: Bool) throws(SystemError) {
        let fd = open(path, (isPipe ? O_RDWR : O_RDONLY) | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(call: path, errno: errno) }
        descriptor = fd
        owned = true
        var info = stat()
        isRegular = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Standard input (not closed here).
    public init(standardInput: Void = ()) {
        descriptor = STDIN_FILENO
        owned = false
        var info = stat()
        isRegular = fstat(STDIN_FILENO, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    deinit {
        if owned { close(descriptor) }
    }

    /// Reads up to `buffer.count` bytes: how many, 0 at the end, nil when interrupted or
    /// nothing is there yet (ask again); throws for anything else.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
        let n = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        if n >= 0 { return n }
        if errno == EINTR || errno == EAGAIN { return nil }
        throw SystemError(call: "read", errno: errno)
    }

    /// Reads up to `buffer.count` bytes, going on after interruptions: how many, 0 at the
    /// end, nil when reading failed.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            do throws(SystemError) {
                if let n = try read(into: buffer) { return n }
            } catch {
                return nil
            }
        }
    }

    /// Whether bytes (or the end) are there to read within `milliseconds`.
    public func readable(within milliseconds: Int32) -> Bool {
        var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, milliseconds) > 0
    }

    /// Moves the next read to `offset`; throws when the file cannot seek there.
    public func seek(to offset: Int64) throws(SystemError) {
        guard lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else { throw SystemError(call: "lseek", errno: errno) }
    }

    /// Its size in bytes, when it has one.
    public var size: Int64? {
        var info = stat()
        return fstat(descriptor, &info) == 0 && isRegular ? Int64(info.st_size) : nil
    }
}
