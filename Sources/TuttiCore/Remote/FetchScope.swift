/// An IP address a host name resolves to, as far as where the coordinator may fetch from
/// goes.
public enum NetworkAddress: Equatable, Sendable, CustomStringConvertible {
    /// IPv4, host order.
    case v4(UInt32)
    /// IPv6, its 16 bytes.
    case v6([UInt8])

    /// This machine itself: 127.0.0.0/8, ::1 (and ::ffff:127.x).
    public var isLoopback: Bool {
        switch self {
        case let .v4(a): a >> 24 == 127
        case let .v6(b): b == [UInt8](repeating: 0, count: 15) + [1] || mappedV4.map { NetworkAddress.v4($0).isLoopback } ?? false
        }
    }

    /// A private network's (RFC 1918, RFC 6598's shared space, IPv6 unique local fc00::/7).
    public var isPrivate: Bool {
        switch self {
        case let .v4(a):
            a >> 24 == 10 || a >> 20 == 0xAC1 || a >> 16 == 0xC0A8 || a >> 22 == 0x191  // 10/8, 172.16/12, 192.168/16, 100.64/10
        case let .v6(b): b[0] & 0xFE == 0xFC || mappedV4.map { NetworkAddress.v4($0).isPrivate } ?? false
        }
    }

    /// What must never be asked: link-local (169.254/16, where clouds answer with their
    /// machines' secrets; fe80::/10), multicast, broadcast, "this network" (0/8) and the
    /// unspecified address.
    public var isNeverFetched: Bool {
        switch self {
        case let .v4(a): a >> 16 == 0xA9FE || a >> 28 == 0xE || a == .max || a >> 24 == 0
        case let .v6(b):
            (b[0] == 0xFE && b[1] & 0xC0 == 0x80) || b[0] == 0xFF || b.allSatisfy { $0 == 0 }
                || mappedV4.map { NetworkAddress.v4($0).isNeverFetched } ?? false
        }
    }

    /// The IPv4 address an IPv4-mapped IPv6 one (::ffff:a.b.c.d) stands for.
    private var mappedV4: UInt32? {
        guard case let .v6(b) = self, b.count == 16, b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF else { return nil }
        return UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15])
    }

    public var description: String {
        switch self {
        case let .v4(a): "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)"
        case let .v6(b): stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }.joined(separator: ":")
        }
    }
}

/// Where the coordinator fetches remote sources from (a token holder queues URLs, and a
/// remote playlist names more; each redirect is checked as the URL asked for was): every
/// address the host resolves to must be allowed, else nothing is asked.
public enum FetchScope: String, Sendable, CaseIterable, Codable {
    /// The internet and the house's own network (a NAS, a radio on the LAN), this machine
    /// included; never link-local (a cloud's metadata service), multicast or unspecified
    /// addresses. The default.
    case lan
    /// The internet only: no private, loopback or link-local address.
    case `public`
    /// Anywhere at all.
    case any

    /// Why `address` may not be fetched from (what it is: "X is ..."), or nil when it may.
    public func refusal(_ address: NetworkAddress) -> String? {
        switch self {
        case .any: return nil
        case .lan: return address.isNeverFetched ? "a link-local, multicast or unspecified address" : nil
        case .public:
            if address.isNeverFetched { return "a link-local, multicast or unspecified address" }
            if address.isLoopback { return "this machine" }
            if address.isPrivate { return "on a private network" }
            return nil
        }
    }
}
