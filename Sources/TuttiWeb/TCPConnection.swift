import TuttiNet
import Glibc

/// A blocking TCP connection with timeouts, for the control API's clients; over TLS when
/// given a way to trust the server.
public final class TCPConnection {
    private let descriptor: Int32
    /// The TLS session, which owns the descriptor when there is one.
    private let tls: TLSLink?
    private var readTimeout: Double
    private var buffered: [UInt8] = []

    /// Connects to `host:port` (a name or an IPv4 address) within `timeout` seconds, then
    /// runs the TLS handshake if `tls` says how to trust the server.
    public init(host: String, port: UInt16, timeout: Double = 5, tls trust: TLSTrust? = nil) throws(SystemError) {
        readTimeout = timeout
        let address: SocketAddress
        do {
            address = try SocketAddress(host: host, port: port)
        } catch {
            throw SystemError(call: "resolve \(host)", errno: EHOSTUNREACH)
        }
        let descriptor = try System.check("socket", socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var sa = address.sockaddr
        let rc = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc < 0 {
            let error = SystemError(call: "connect to \(address)", errno: Glibc.errno)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        if let trust {
            tls = try TLSLink(descriptor: descriptor, host: host, port: port, trust: trust, timeout: timeout)
        } else {
            tls = nil
        }
    }

    deinit {
        if tls == nil { close(descriptor) }
    }

    /// Waits for reads up to this long (seconds); 0 waits for ever.
    public func setReadTimeout(_ seconds: Double) {
        readTimeout = seconds
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func write(_ bytes: [UInt8]) throws(SystemError) {
        if let tls { return try tls.send(bytes) }
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

    /// Reads exactly `count` bytes; fewer only at the end of the stream.
    public func read(_ count: Int) throws(SystemError) -> [UInt8] {
        while buffered.count < count {
            guard try fill() else { break }
        }
        let n = min(count, buffered.count)
        defer { buffered.removeFirst(n) }
        return Array(buffered[0..<n])
    }

    /// Reads up to and including `delimiter`; nil if the stream ends first.
    public func read(until delimiter: [UInt8], limit: Int = 64 * 1024) throws(SystemError) -> [UInt8]? {
        var searched = 0
        while true {
            if buffered.count >= delimiter.count {
                for i in max(0, searched - delimiter.count)...(buffered.count - delimiter.count)
                where buffered[i..<i + delimiter.count].elementsEqual(delimiter) {
                    let line = Array(buffered[0..<i + delimiter.count])
                    buffered.removeFirst(i + delimiter.count)
                    return line
                }
                searched = buffered.count
            }
            if buffered.count > limit { throw SystemError(call: "read (line too long)", errno: EMSGSIZE) }
            guard try fill() else { return nil }
        }
    }

    /// Everything until the peer closes.
    public func readToEnd(limit: Int = 64 * 1024 * 1024) throws(SystemError) -> [UInt8] {
        while try fill() {
            if buffered.count > limit { throw SystemError(call: "read (response too large)", errno: EMSGSIZE) }
        }
        defer { buffered.removeAll() }
        return buffered
    }

    private func fill() throws(SystemError) -> Bool {
        if let tls {
            let bytes = try tls.receive(timeout: readTimeout)
            buffered += bytes
            return !bytes.isEmpty
        }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffered += chunk[0..<n]
                return true
            }
            if n == 0 { return false }
            if Glibc.errno == EINTR { continue }
            if Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK { throw SystemError(call: "read (timed out)", errno: ETIMEDOUT) }
            throw SystemError(call: "recv", errno: Glibc.errno)
        }
    }
}
