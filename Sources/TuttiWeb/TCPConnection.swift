import TuttiNet

/// A blocking TCP connection with timeouts, for the control API's clients; over TLS when
/// given a way to trust the server.
public final class TCPConnection {
    /// The socket, until a TLS session takes it over (and closes it with itself).
    private let socket: TCPSocket?
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
            throw .unresolved(host)
        }
        let socket = try TCPSocket(connectingTo: address, timeout: timeout)
        if let trust {
            tls = try TLSLink(socket: socket, host: host, port: port, trust: trust, timeout: timeout)
            self.socket = nil
        } else {
            tls = nil
            self.socket = socket
        }
    }

    /// Waits for reads up to this long (seconds); 0 waits for ever.
    public func setReadTimeout(_ seconds: Double) {
        readTimeout = seconds
        socket?.setReadTimeout(seconds)
    }

    public func write(_ bytes: [UInt8]) throws(SystemError) {
        if let tls { return try tls.send(bytes) }
        try socket?.sendAll(bytes)
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
            if buffered.count > limit { throw .tooLarge("read (line too long)") }
            guard try fill() else { return nil }
        }
    }

    /// Everything until the peer closes.
    public func readToEnd(limit: Int = 64 * 1024 * 1024) throws(SystemError) -> [UInt8] {
        while try fill() {
            if buffered.count > limit { throw .tooLarge("read (response too large)") }
        }
        defer { buffered.removeAll() }
        return buffered
    }

    private func fill() throws(SystemError) -> Bool {
        let bytes = if let tls { try tls.receive(timeout: readTimeout) } else { try socket?.receive() ?? [] }
        buffered += bytes
        return !bytes.isEmpty
    }
}
