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

    /// In IANA's special-purpose address registries (IPv4 and IPv6, as of 2025), whether or
    /// not an entry is marked globally reachable: no internet radio station lives on a
    /// benchmarking, documentation, translation, anycast or reserved range. Includes what
    /// `isLoopback`, `isPrivate` and `isNeverFetched` cover, the deprecated IPv4-compatible
    /// form (::a.b.c.d), and what an IPv4-mapped address stands for.
    public var isSpecialPurpose: Bool {
        switch self {
        case let .v4(a):
            return Self.specialV4.contains { a >> (32 - $0.bits) == $0.prefix >> (32 - $0.bits) } || a >> 28 == 0xE
        case let .v6(b):
            if let v4 = mappedV4 { return NetworkAddress.v4(v4).isSpecialPurpose }
            if b[0..<12].allSatisfy({ $0 == 0 }) { return true }  // ::/96: unspecified, loopback, IPv4-compatible
            if b[0] == 0xFF || b[0] & 0xFE == 0xFC || (b[0] == 0xFE && b[1] & 0xC0 == 0x80) { return true }
            return Self.specialV6.contains { entry in
                let whole = entry.bits / 8, rest = entry.bits % 8
                guard b[0..<whole].elementsEqual(entry.prefix[0..<whole]) else { return false }
                return rest == 0 || b[whole] >> (8 - rest) == entry.prefix[whole] >> (8 - rest)
            }
        }
    }

    private static let specialV4: [(prefix: UInt32, bits: Int)] = [
        (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16), (0xAC10_0000, 12),
        (0xC000_0000, 24), (0xC000_0200, 24), (0xC01F_C400, 24), (0xC034_C100, 24), (0xC058_6300, 24), (0xC0A8_0000, 16),
        (0xC0AF_3000, 24), (0xC612_0000, 15), (0xC633_6400, 24), (0xCB00_7100, 24), (0xF000_0000, 4), (0xFFFF_FFFF, 32),
    ]

    private static let specialV6: [(prefix: [UInt8], bits: Int)] = [
        ([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0], 96),  // 64:ff9b::/96, IPv4/IPv6 translation
        ([0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01], 48),              // 64:ff9b:1::/48, local-use translation
        ([0x01, 0x00, 0, 0, 0, 0, 0, 0], 64),                    // 100::/64, discard-only
        ([0x01, 0x00, 0, 0, 0, 0x01, 0, 0], 64),                 // 100:0:0:1::/64, dummy prefix
        ([0x20, 0x01, 0x00], 23),                                // 2001::/23, IETF protocol assignments
        ([0x20, 0x01, 0x0D, 0xB8], 32),                          // 2001:db8::/32, documentation
        ([0x20, 0x02], 16),                                      // 2002::/16, 6to4
        ([0x26, 0x20, 0x00, 0x4F, 0x80, 0x00], 48),              // 2620:4f:8000::/48, AS112 delegation
        ([0x3F, 0xFF, 0x00], 20),                                // 3fff::/20, documentation
        ([0x5F, 0x00], 16),                                      // 5f00::/16, SRv6 SIDs
    ]

    /// The IPv4 address an IPv4-mapped IPv6 one (::ffff:a.b.c.d) stands for.
    private var mappedV4: UInt32? {
        guard case let .v6(b) = self, b.count == 16, b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF else { return nil }
        return UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15])
    }

    /// The address `text` writes (dotted IPv4; IPv6 with `::` and a dotted tail, without
    /// brackets or a zone), or nil.
    public init?(parsing text: String) {
        if let v4 = Self.dotted(text[...]) {
            self = .v4(v4)
            return
        }
        guard text.contains(":"), text.utf8.count <= 45 else { return nil }
        let bytes = Array(text.utf8)
        var gap: Int?  // where "::" stands
        for i in 0..<(bytes.count - 1) where bytes[i] == 58 && bytes[i + 1] == 58 {
            guard gap == nil else { return nil }  // twice, or ":::"
            gap = i
        }
        if let gap {
            let middle = text.utf8.index(text.utf8.startIndex, offsetBy: gap)
            guard let head = Self.groups(text[..<middle], tail: false),
                  let rest = Self.groups(text[text.utf8.index(middle, offsetBy: 2)...], tail: true),
                  head.count + rest.count <= 14 else { return nil }
            self = .v6(head + [UInt8](repeating: 0, count: 16 - head.count - rest.count) + rest)
        } else {
            guard let all = Self.groups(text[...], tail: true), all.count == 16 else { return nil }
            self = .v6(all)
        }
    }

    /// IPv6 groups between colons (none for an empty text), the last one dotted IPv4 when
    /// `tail` allows it.
    private static func groups(_ text: Substring, tail: Bool) -> [UInt8]? {
        guard !text.isEmpty else { return [] }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        var out: [UInt8] = []
        for (k, part) in parts.enumerated() {
            if tail, k == parts.count - 1, part.contains(".") {
                guard let v4 = dotted(part) else { return nil }
                out += [UInt8(v4 >> 24), UInt8(v4 >> 16 & 0xFF), UInt8(v4 >> 8 & 0xFF), UInt8(v4 & 0xFF)]
                continue
            }
            guard !part.isEmpty, part.utf8.count <= 4, part.allSatisfy(\.isHexDigit), let value = UInt16(part, radix: 16) else { return nil }
            out += [UInt8(value >> 8), UInt8(value & 0xFF)]
        }
        return out
    }

    /// A dotted IPv4 address (four decimal parts of 0 to 255).
    private static func dotted(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.utf8.count <= 3, part.allSatisfy(\.isASCII), let byte = UInt8(part) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    /// Whom a request comes from, as far as limits per sender go: an IPv4 address (or the
    /// one an IPv4-mapped IPv6 address stands for), an IPv6 address's /64 (a host is given a
    /// /64 and picks addresses within it at will).
    public var sender: String {
        if let v4 = mappedV4 { return "\(NetworkAddress.v4(v4))" }
        guard case let .v6(b) = self else { return description }
        return NetworkAddress.v6(Array(b[0..<8]) + [UInt8](repeating: 0, count: 8)).description + "/64"
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
    /// The internet only: no private, loopback or link-local address, nor any other in IANA's
    /// special-purpose registries (benchmarking, documentation, NAT64, reserved...).
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
            if address.isSpecialPurpose { return "reserved for a special purpose (IANA's special-purpose address registry)" }
            return nil
        }
    }
}
