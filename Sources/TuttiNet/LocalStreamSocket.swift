import Glibc

/// A connected Unix-domain stream socket (a local server's socket file, such as a sound
/// server's), non-blocking: `receive` takes what has arrived, `waitReadable` sleeps until
/// more does, and `send` writes all its bytes, waiting a bounded time for room. Used from
/// one thread.
public final class LocalStreamSocket {
    public let descriptor: Int32
    /// Bytes `receive` reads at most at once.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)

    /// Connects to the socket file at `path`.
    public init(connectingTo path: String) throws(SystemError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw SystemError(call: "connect \(path)", errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let fd = try System.check("socket", socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc < 0 {
            let code = Glibc.errno
            close(fd)
            throw SystemError(call: "connect \(path)", errno: code)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        descriptor = fd
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

    /// Sends all of `bytes`, waiting up to `timeout` nanoseconds in all for the peer to make
    /// room. With `credentials`, the first piece carries this process's pid, uid and gid
    /// (SCM_CREDENTIALS), which a local server may accept as proof of who is asking.
    public func send(_ bytes: UnsafeRawBufferPointer, credentials: Bool = false, timeout: Int64 = 2_000_000_000) throws(SystemError) {
        var sent = 0
        var deadline: Int64?
        while sent < bytes.count {
            let n = credentials && sent == 0
                ? sendWithCredentials(UnsafeRawBufferPointer(rebasing: bytes[sent...]))
                : Glibc.send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if n > 0 {
                sent += n
                continue
            }
            let code = Glibc.errno
            guard n < 0, code == EAGAIN || code == EINTR else { throw SystemError(call: "send", errno: n == 0 ? EPIPE : code) }
            let now = SystemClock.hostNanoseconds()
            let end = deadline ?? now + timeout
            deadline = end
            guard now < end else { throw SystemError(call: "send", errno: ETIMEDOUT) }
            _ = wait(for: Int16(POLLOUT), nanoseconds: end - now)
        }
    }

    /// What has arrived, up to 16 kB, handed to `body` without copying; nil when nothing
    /// has (the call would block). Throws when the peer closed the connection or it failed.
    public func receive<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        while true {
            let n = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return try body(UnsafeRawBufferPointer(rebasing: buffer[..<n])) }
            if n == 0 { throw SystemError(call: "recv", errno: ECONNRESET) }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN { return nil }
            throw SystemError(call: "recv", errno: code)
        }
    }

    /// Sleeps until something arrives or `nanoseconds` pass (rounded up to whole
    /// milliseconds); true when something arrived or the peer hung up.
    @discardableResult
    public func waitReadable(nanoseconds: Int64) -> Bool {
        wait(for: Int16(POLLIN), nanoseconds: nanoseconds)
    }

    private func wait(for events: Int16, nanoseconds: Int64) -> Bool {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        let milliseconds = Int32(clamping: (max(0, nanoseconds) + 999_999) / 1_000_000)
        return poll(&entry, 1, milliseconds) > 0
    }

    private func sendWithCredentials(_ bytes: UnsafeRawBufferPointer) -> Int {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }, which Glibc's module leaves out.
        let credentials: [Int32] = [getpid(), Int32(bitPattern: getuid()), Int32(bitPattern: getgid())]
        let align = MemoryLayout<Int>.size
        let header = (MemoryLayout<cmsghdr>.size + align - 1) & ~(align - 1)
        let dataLength = credentials.count * 4
        var control = [UInt8](repeating: 0, count: header + ((dataLength + align - 1) & ~(align - 1)))
        control.withUnsafeMutableBytes { c in
            var h = cmsghdr()
            h.cmsg_len = .init(header + dataLength)
            h.cmsg_level = SOL_SOCKET
            h.cmsg_type = 2  // SCM_CREDENTIALS
            c.storeBytes(of: h, as: cmsghdr.self)
            credentials.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: c[header...]).copyMemory(from: $0) }
        }
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return control.withUnsafeMutableBytes { c in
            withUnsafeMutablePointer(to: &vector) { v in
                var message = msghdr()
                message.msg_iov = v
                message.msg_iovlen = 1
                message.msg_control = c.baseAddress
                message.msg_controllen = .init(c.count)
                return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL))
            }
        }
    }
}
