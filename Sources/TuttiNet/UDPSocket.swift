import Glibc

/// A blocking IPv4 UDP socket with receive timeouts, multicast membership and TTL.
/// Used from one thread at a time for receiving; sending is safe from any thread.
public final class UDPSocket: @unchecked Sendable {
    public let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    public init() throws(SystemError) {
        descriptor = try System.check("socket", socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0))
    }

    deinit { close(descriptor) }

    public func bind(_ address: SocketAddress, reuse: Bool = false) throws(SystemError) {
        if reuse {
            var one: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        var sa = address.sockaddr
        try System.check("bind \(address)", withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        })
    }

    /// The address the socket is bound to (after `bind`, including an ephemeral port).
    public func localAddress() throws(SystemError) -> SocketAddress {
        var sa = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        try System.check("getsockname", withUnsafeMutablePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &len) }
        })
        return SocketAddress(sa)
    }

    public func joinMulticast(group: SocketAddress, interface: UInt32 = 0) throws(SystemError) {
        var mreq = ip_mreq()
        mreq.imr_multiaddr.s_addr = group.address.bigEndian
        mreq.imr_interface.s_addr = interface.bigEndian
        try System.check("join multicast \(group.host)",
                         setsockopt(descriptor, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &mreq, socklen_t(MemoryLayout<ip_mreq>.size)))
    }

    /// TTL 1 keeps multicast on the local network; loopback delivers to this host's listeners too.
    public func setMulticast(ttl: UInt8, loopback: Bool = true, interface: UInt32? = nil) throws(SystemError) {
        var t = Int32(ttl)
        try System.check("IP_MULTICAST_TTL", setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &t, 4))
        var l: Int32 = loopback ? 1 : 0
        try System.check("IP_MULTICAST_LOOP", setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &l, 4))
        if let interface {
            var a = in_addr(s_addr: interface.bigEndian)
            try System.check("IP_MULTICAST_IF", setsockopt(descriptor, Int32(IPPROTO_IP), IP_MULTICAST_IF, &a,
                                                           socklen_t(MemoryLayout<in_addr>.size)))
        }
    }

    public func setReceiveBuffer(bytes: Int32) {
        var b = bytes
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &b, 4)
    }

    public func send(_ bytes: [UInt8], to address: SocketAddress) throws(SystemError) {
        var sa = address.sockaddr
        _ = try System.checkSize("sendto \(address)", bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        })
    }

    /// Waits up to `timeoutMilliseconds` for a datagram; nil on timeout or interruption.
    public func receive(timeoutMilliseconds: Int32) throws(SystemError) -> (bytes: [UInt8], from: SocketAddress)? {
        var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, timeoutMilliseconds)
        if ready < 0 {
            if Glibc.errno == EINTR { return nil }
            throw SystemError(call: "poll", errno: Glibc.errno)
        }
        if ready == 0 { return nil }
        var sa = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let n = buffer.withUnsafeMutableBytes { b in
            withUnsafeMutablePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, b.baseAddress, b.count, 0, $0, &len)
                }
            }
        }
        if n < 0 {
            if Glibc.errno == EINTR || Glibc.errno == EAGAIN { return nil }
            throw SystemError(call: "recvfrom", errno: Glibc.errno)
        }
        return (Array(buffer[0..<n]), SocketAddress(sa))
    }
}
