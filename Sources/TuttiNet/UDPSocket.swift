import Glibc

/// A blocking IPv4 UDP socket with receive timeouts, multicast membership and TTL.
/// Used from one thread at a time for receiving; sending is safe from any thread.
public final class UDPSocket: @unchecked Sendable {
    public let descriptor: Int32
    /// Room for the largest datagram, left unwritten: only the bytes a datagram fills are ever
    /// read, so only the pages the largest one reached become resident. Zero-filled, it kept
    /// 64 kB resident in each of a follower's sockets for datagrams of 1.3 kB.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private var control = [UInt8](repeating: 0, count: 128)
    private var stamped = false

    public init() throws(SystemError) {
        descriptor = try System.check("socket", socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0))
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

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

    /// Sends a datagram; with `wait: false` it never blocks (a full send buffer is an
    /// error, EAGAIN, and the datagram is not sent).
    public func send(_ bytes: [UInt8], to address: SocketAddress, wait: Bool = true) throws(SystemError) {
        var sa = address.sockaddr
        _ = try System.checkSize("sendto \(address)", bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, b.baseAddress, b.count, wait ? 0 : Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        })
    }

    /// Asks the kernel to stamp each datagram as it arrives (SO_TIMESTAMPNS), so that a
    /// receive time does not include the wait for this thread to wake. False where the
    /// kernel cannot (Linux before 5.1); `Datagram.receivedAt` is then the time of reading,
    /// as it is for the first datagrams after the first socket on the host asks (the kernel
    /// turns stamping on in deferred work).
    @discardableResult
    public func enableReceiveTimestamps() -> Bool {
        var one: Int32 = 1
        stamped = setsockopt(descriptor, SOL_SOCKET, Self.timestampOption, &one, 4) == 0
        return stamped
    }

    /// SO_TIMESTAMPNS_NEW: a 64-bit seconds and nanoseconds pair on every architecture.
    private static let timestampOption: Int32 = 64

    /// Waits up to `timeoutMilliseconds` for a datagram; nil on timeout or interruption.
    public func receive(timeoutMilliseconds: Int32) throws(SystemError) -> Datagram? {
        var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, timeoutMilliseconds)
        if ready < 0 {
            if Glibc.errno == EINTR { return nil }
            throw SystemError(call: "poll", errno: Glibc.errno)
        }
        if ready == 0 { return nil }
        return try take()
    }

    /// A datagram already waiting, without waiting for one: nil when none is. For a
    /// thread that wakes for other reasons and takes what came meanwhile (with kernel
    /// stamps, the wait does not blur when it arrived).
    public func receiveWaiting() throws(SystemError) -> Datagram? {
        try take(flags: Int32(MSG_DONTWAIT))
    }

    /// A datagram already waiting, its bytes copied into `spare`'s storage (`DatagramSocket`).
    public func receiveWaiting(reusing spare: inout [UInt8]) throws(SystemError) -> Datagram? {
        guard let (count, from, receivedAt) = try read(flags: Int32(MSG_DONTWAIT)) else { return nil }
        var bytes: [UInt8] = []
        swap(&bytes, &spare)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        return Datagram(bytes: bytes, from: from, receivedAt: receivedAt)
    }

    /// Reads one datagram (with its kernel stamp); nil when none came (EAGAIN, EINTR).
    private func take(flags: Int32 = 0) throws(SystemError) -> Datagram? {
        guard let (count, from, receivedAt) = try read(flags: flags) else { return nil }
        return Datagram(bytes: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])), from: from, receivedAt: receivedAt)
    }

    /// Reads one datagram into `buffer`: its length, sender and arrival (the kernel's stamp
    /// where there is one); nil when none came (EAGAIN, EINTR).
    private func read(flags: Int32) throws(SystemError) -> (count: Int, from: SocketAddress, receivedAt: Int64)? {
        var sa = sockaddr_in()
        var controlLength = 0
        let n = control.withUnsafeMutableBytes { c in
            withUnsafeMutablePointer(to: &sa) { name in
                var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                return withUnsafeMutablePointer(to: &iov) { iovp in
                    var msg = msghdr()
                    msg.msg_name = UnsafeMutableRawPointer(name)
                    msg.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                    msg.msg_iov = iovp
                    msg.msg_iovlen = 1
                    msg.msg_control = c.baseAddress
                    msg.msg_controllen = c.count
                    let r = recvmsg(descriptor, &msg, flags)
                    controlLength = Int(msg.msg_controllen)
                    return r
                }
            }
        }
        let clock = SystemClock()
        let monotonic = clock.nanosecondsNow()
        if n < 0 {
            if Glibc.errno == EINTR || Glibc.errno == EAGAIN { return nil }
            throw SystemError(call: "recvmsg", errno: Glibc.errno)
        }
        var receivedAt = monotonic
        if stamped, let wall = kernelStamp(controlLength: controlLength) {
            // The kernel stamps wall-clock time; both clocks advance together between steps.
            receivedAt = clock.local(ofWallClock: wall)
            if receivedAt > monotonic || monotonic - receivedAt > 1_000_000_000 { receivedAt = monotonic }
        }
        return (n, SocketAddress(sa), receivedAt)
    }

    /// The SCM_TIMESTAMPNS control message's time, in wall-clock nanoseconds.
    private func kernelStamp(controlLength: Int) -> Int64? {
        let header = MemoryLayout<cmsghdr>.size
        let align = MemoryLayout<Int>.size
        let dataOffset = (header + align - 1) & ~(align - 1)
        return control.withUnsafeBytes { c -> Int64? in
            var offset = 0
            while offset + dataOffset <= controlLength {
                let h = c.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
                let length = Int(h.cmsg_len)
                guard length >= dataOffset, offset + length <= controlLength else { return nil }
                if h.cmsg_level == SOL_SOCKET, h.cmsg_type == Self.timestampOption, length >= dataOffset + 16 {
                    let seconds = c.loadUnaligned(fromByteOffset: offset + dataOffset, as: Int64.self)
                    let nanoseconds = c.loadUnaligned(fromByteOffset: offset + dataOffset + 8, as: Int64.self)
                    return seconds * 1_000_000_000 + nanoseconds
                }
                offset += (length + align - 1) & ~(align - 1)
            }
            return nil
        }
    }
}

/// A received datagram: its bytes, its sender, and when it arrived (CLOCK_MONOTONIC
/// nanoseconds, from the kernel's stamp where enabled).
public struct Datagram: Sendable, Equatable {
    public var bytes: [UInt8]
    public var from: SocketAddress
    public var receivedAt: Int64

    public init(bytes: [UInt8], from: SocketAddress, receivedAt: Int64) {
        self.bytes = bytes
        self.from = from
        self.receivedAt = receivedAt
    }
}
