import Glibc
import TuttiCore

/// An IPv4 address and port.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// Address in host byte order.
    public var address: UInt32
    public var port: UInt16

    public init(address: UInt32, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Whether `text` is an IP address as written (IPv4 `A.B.C.D` or IPv6), not a name.
    public static func isLiteral(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// Parses `A.B.C.D`, or resolves a host name (IPv4).
    public init(host: String, port: UInt16) throws(AddressError) {
        var addr = in_addr()
        if inet_pton(AF_INET, host, &addr) == 1 {
            self.init(address: UInt32(bigEndian: addr.s_addr), port: port)
            return
        }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let info = result, let sa = info.pointee.ai_addr else {
            throw .cannotResolve(host)
        }
        defer { freeaddrinfo(result) }
        let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
        self.init(address: UInt32(bigEndian: a), port: port)
    }

    /// Parses `HOST[:PORT]`.
    public init(parsing text: String, defaultPort: UInt16) throws(AddressError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let host = parts.first, !host.isEmpty else { throw .malformed(text) }
        var port = defaultPort
        if parts.count == 2 {
            guard let p = UInt16(parts[1]), p > 0 else { throw .malformed(text) }
            port = p
        }
        try self.init(host: String(host), port: port)
    }

    public var isMulticast: Bool { address >> 28 == 0xE }

    public var host: String {
        "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }

    public var description: String { "\(host):\(port)" }

    /// Address and port as six bytes, network order (what return-routability cookies cover).
    public var bytes: [UInt8] {
        [UInt8(address >> 24), UInt8(address >> 16 & 0xFF), UInt8(address >> 8 & 0xFF), UInt8(address & 0xFF),
         UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    public var sockaddr: sockaddr_in {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = address.bigEndian
        return sa
    }

    init(_ sa: sockaddr_in) {
        self.init(address: UInt32(bigEndian: sa.sin_addr.s_addr), port: UInt16(bigEndian: sa.sin_port))
    }
}

public enum AddressError: Error, CustomStringConvertible, Equatable {
    case cannotResolve(String)
    case malformed(String)
    public var description: String {
        switch self {
        case let .cannotResolve(h): "cannot resolve host '\(h)'"
        case let .malformed(t): "'\(t)' is not HOST or HOST:PORT"
        }
    }
}

extension SocketAddress {
    /// This machine's IPv4 addresses (loopback included), for the names a certificate is for.
    public static func interfaceAddresses() -> [UInt32] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [UInt32] = []
        var entry = list
        while let current = entry {
            if let sa = current.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) {
                let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
                if !addresses.contains(a) { addresses.append(a) }
            }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}

extension NetworkAddress {
    /// Every address `host` (a name, or an IPv4 or IPv6 literal) resolves to, IPv4 and IPv6;
    /// nil when it does not resolve. It waits on the system's resolver: call it off any
    /// thread that must not wait.
    public static func resolve(_ host: String) -> [NetworkAddress]? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(literal, nil, &hints, &result) == 0 else { return nil }
        defer { freeaddrinfo(result) }
        var found: [NetworkAddress] = []
        var next = result
        while let info = next {
            if let sa = info.pointee.ai_addr {
                switch Int32(info.pointee.ai_family) {
                case AF_INET:
                    let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                    found.append(.v4(UInt32(bigEndian: a)))
                case AF_INET6:
                    var bytes = [UInt8](repeating: 0, count: 16)
                    sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { six in
                        withUnsafeBytes(of: six.pointee.sin6_addr) { for i in 0..<16 { bytes[i] = $0[i] } }
                    }
                    found.append(.v6(bytes))
                default: break
                }
            }
            next = info.pointee.ai_next
        }
        return found.isEmpty ? nil : found
    }
}
