import Glibc
import TuttiCore

/// A connected TCP socket whose reads and writes wait at most a timeout: the system calls of
/// the control API's blocking clients (TuttiWeb's `TCPConnection` adds TLS and buffering).
public final class TCPSocket {
    public let descriptor: Int32
    /// Whether the socket closes its descriptor when it goes (not once `release`d).
    private var owned = true

    /// Connects to `address` within `timeout` seconds, which then bounds every read and write.
    public init(connectingTo address: SocketAddress, timeout: Double) throws(SystemError) {
        let descriptor = try System.check("socket", socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        Self.setTimeout(descriptor, SO_RCVTIMEO, timeout)
        Self.setTimeout(descriptor, SO_SNDTIMEO, timeout)
        var sa = address.sockaddr
        let rc = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc < 0 {
            let error = SystemError(call: "connect to \(address)", errno: Glibc.errno)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        if owned { close(descriptor) }
    }

    /// Hands the descriptor to whoever takes it over (a TLS session closes it with itself).
    public func release() -> Int32 {
        owned = false
        return descriptor
    }

    /// Reads wait up to this long (seconds); 0 waits for ever.
    public func setReadTimeout(_ seconds: Double) {
        Self.setTimeout(descriptor, SO_RCVTIMEO, seconds)
    }

    /// Sends all of `bytes`.
    public func sendAll(_ bytes: [UInt8]) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw SystemError(call: "send", errno: Glibc.errno)
            }
            offset += n
        }
    }

    /// Up to `limit` bytes as they come; none at the end of the stream.
    public func receive(limit: Int = 16 * 1024) throws(SystemError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: limit)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return Array(chunk[0..<n]) }
            if Glibc.errno == EINTR { continue }
            if Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK { throw .timedOut("read") }
            throw SystemError(call: "recv", errno: Glibc.errno)
        }
    }

    private static func setTimeout(_ descriptor: Int32, _ option: Int32, _ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(descriptor, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
}

extension SystemError {
    /// `call` waited its whole timeout.
    public static func timedOut(_ call: String) -> SystemError { SystemError(call: call + " (timed out)", errno: ETIMEDOUT) }
    /// What came was larger than `call` takes.
    public static func tooLarge(_ call: String) -> SystemError { SystemError(call: call, errno: EMSGSIZE) }
    /// A host name that resolves to no address.
    public static func unresolved(_ host: String) -> SystemError { SystemError(call: "resolve \(host)", errno: EHOSTUNREACH) }
}
