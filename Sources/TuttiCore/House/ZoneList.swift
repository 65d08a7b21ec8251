/// A zone of the house: rooms that play one stream together, with its own queue and
/// transport. Every room belongs to exactly one; the default zone always exists.
public struct ZoneInfo: Codable, Equatable, Sendable {
    /// The default zone's id: rooms with no zone of their own, and those of a removed zone.
    public static let defaultID = "default"
    /// Its key: never changes (a rename changes the name only).
    public var id: String
    /// The name people see.
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// Why a zone command was refused.
public enum ZoneError: Error, Equatable, Sendable, CustomStringConvertible {
    case noSuchZone(String, known: [String])
    case nameTaken(String)
    case badName(String)
    case tooMany(limit: Int)
    case defaultStays

    public var description: String {
        switch self {
        case let .noSuchZone(name, known): "no zone named '\(name)'; the zones are: \(known.joined(separator: ", "))"
        case let .nameTaken(name): "a zone is already called '\(name)'"
        case let .badName(name): "'\(String(decoding: name.utf8.prefix(256), as: UTF8.self))' is not a usable zone name (1 to 64 characters in at most 256 bytes, not blank)"
        case let .tooMany(limit): "a house has at most \(limit) zones"
        case .defaultStays: "the default zone cannot be removed (its rooms are where removed zones' rooms go)"
        }
    }
}

/// The house's zones, the default one first. Pure.
public struct ZoneList: Codable, Equatable, Sendable {
    /// At most this many zones (each is a stream and a sender thread of the coordinator's).
    public static let limit = 16
    public private(set) var zones: [ZoneInfo]

    /// `saved`: the zones as saved (the default one is added, or put first, if it is not).
    public init(saved: [ZoneInfo] = [], defaultName: String = "Default") {
        var zones = saved.filter { $0.id != ZoneInfo.defaultID && Self.isValidName($0.name) }
        zones.insert(saved.first { $0.id == ZoneInfo.defaultID } ?? ZoneInfo(id: ZoneInfo.defaultID, name: defaultName), at: 0)
        var seen = Set<String>()
        self.zones = Array(zones.filter { seen.insert($0.id).inserted }.prefix(Self.limit))
    }

    public var ids: [String] { zones.map(\.id) }

    public func contains(id: String) -> Bool { zones.contains { $0.id == id } }

    public func zone(id: String) -> ZoneInfo? { zones.first { $0.id == id } }

    /// The id of the zone called `name` (its name or its id, in any case).
    public func find(_ name: String) throws(ZoneError) -> String {
        let wanted = name.trimmingWhitespace().lowercased()
        if let zone = zones.first(where: { $0.name.lowercased() == wanted || $0.id == wanted }) { return zone.id }
        throw .noSuchZone(name, known: zones.map(\.name))
    }

    /// Adds a zone called `name`; returns its id (the name in lower case, its spaces as
    /// dashes, made unique).
    public mutating func add(_ name: String) throws(ZoneError) -> String {
        let trimmed = name.trimmingWhitespace()
        guard Self.isValidName(trimmed) else { throw .badName(name) }
        guard zones.count < Self.limit else { throw .tooMany(limit: Self.limit) }
        if let other = zones.first(where: { $0.name.lowercased() == trimmed.lowercased() }) { throw .nameTaken(other.name) }
        let base = Self.slug(trimmed)
        var id = base
        var n = 2
        while contains(id: id) || id == ZoneInfo.defaultID {
            id = "\(base)-\(n)"
            n += 1
        }
        zones.append(ZoneInfo(id: id, name: trimmed))
        return id
    }

    public mutating func rename(_ zone: String, to name: String) throws(ZoneError) {
        let id = try find(zone)
        let trimmed = name.trimmingWhitespace()
        guard Self.isValidName(trimmed) else { throw .badName(name) }
        if let other = zones.first(where: { $0.id != id && $0.name.lowercased() == trimmed.lowercased() }) { throw .nameTaken(other.name) }
        zones[zones.firstIndex { $0.id == id }!].name = trimmed
    }

    /// Removes a zone (not the default one); returns its id.
    public mutating func remove(_ zone: String) throws(ZoneError) -> String {
        let id = try find(zone)
        guard id != ZoneInfo.defaultID else { throw .defaultStays }
        zones.removeAll { $0.id == id }
        return id
    }

    public static func isValidName(_ name: String) -> Bool {
        RoomReport.isValidName(name)
    }

    /// An id for a name: letters and digits in lower case, the rest as single dashes.
    static func slug(_ name: String) -> String {
        var out = ""
        for c in name.lowercased() {
            if c.isLetter || c.isNumber {
                out.append(c)
            } else if !out.isEmpty, out.last != "-" {
                out.append("-")
            }
        }
        while out.last == "-" { out.removeLast() }
        return out.isEmpty ? "zone" : String(out.prefix(32))
    }
}

/// Which codec each zone's stream carries (`--codec`, `--zone-codec ZONE=CODEC`): the
/// house's default, and the zones given one of their own, by name or id.
public struct ZoneCodecs: Sendable, Equatable {
    public var fallback: StreamCodec
    /// By zone id (a name as given is made an id as `ZoneList.add` makes it).
    public private(set) var byZone: [String: StreamCodec] = [:]

    public init(_ fallback: StreamCodec = .opus) {
        self.fallback = fallback
    }

    /// Zone `zone` (its name or its id) carries `codec`.
    public mutating func set(_ codec: StreamCodec, forZone zone: String) {
        let name = zone.trimmingWhitespace()
        byZone[name.lowercased() == ZoneInfo.defaultID ? ZoneInfo.defaultID : ZoneList.slug(name)] = codec
    }

    /// The codec of the zone with id `id`.
    public func codec(forZone id: String) -> StreamCodec { byZone[id] ?? fallback }

    /// Every codec some zone may carry.
    public var all: Set<StreamCodec> { Set(byZone.values).union([fallback]) }

    /// Parses `ZONE=CODEC` (`--zone-codec`).
    public static func parse(_ text: String) -> (zone: String, codec: StreamCodec)? {
        guard let eq = text.lastIndex(of: "=") else { return nil }
        let zone = String(text[..<eq]).trimmingWhitespace()
        guard ZoneList.isValidName(zone), let codec = StreamCodec(rawValue: text[text.index(after: eq)...].lowercased()) else { return nil }
        return (zone, codec)
    }
}
