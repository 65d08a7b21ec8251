/// The rooms of the house: who has joined (from their reports), their settings, and the
/// group volume. Pure: times come in as arguments (coordinator time, nanoseconds).
public struct RoomRegistry: Sendable {
    public struct Room: Equatable, Sendable {
        /// The follower's configured name.
        public var key: String
        public var settings: RoomSettings
        public var report: RoomReport?
        /// Where its reports come from (for settings and timeline messages).
        public var address: String?
        public var lastSeen: Int64?
        public var connected: Bool
        /// Its holes (caused by its follower, or concealed), for the last hour's count.
        public var holes = HoleCount()
    }

    public enum Event: Equatable, Sendable {
        case joined(key: String)
        case left(key: String)
    }

    /// A room that has not reported for this long has left.
    public var timeout: Int64 = 5_000_000_000
    public private(set) var rooms: [String: Room] = [:]
    /// At most this many rooms, joined or remembered: reports under ever new names (a member
    /// gone wrong, or one that is no longer a friend) are not rooms, nor saved.
    public static let limit = 64
    /// Reports of rooms refused because the house was full.
    public private(set) var refused = 0

    public init(saved: [String: RoomSettings] = [:]) {
        // Rooms saved with names no follower can have any more ("", " ") are left behind.
        for (key, settings) in saved where RoomReport.isValidName(key) {
            rooms[key] = Room(key: key, settings: settings, report: nil, address: nil, lastSeen: nil, connected: false)
        }
    }

    /// Every room's settings, for saving.
    public var savedSettings: [String: RoomSettings] { rooms.mapValues(\.settings) }

    /// Rooms by name, connected first.
    public var list: [Room] {
        rooms.values.sorted { ($0.connected ? 0 : 1, $0.settings.name.lowercased()) < ($1.connected ? 0 : 1, $1.settings.name.lowercased()) }
    }

    public var connected: [Room] { list.filter(\.connected) }

    // MARK: - Presence

    public mutating func report(_ report: RoomReport, from address: String, now: Int64) -> [Event] {
        let key = report.name
        guard RoomReport.isValidName(key) else { return [] }
        guard rooms[key] != nil || rooms.count < Self.limit else {
            refused += 1
            return []
        }
        // A room new to the house keeps the output delay its follower was started with.
        var room = rooms[key] ?? Room(key: key, settings: RoomSettings(name: uniqueName(key), outputDelayMilliseconds: report.outputDelayMilliseconds),
                                      report: nil, address: nil, lastSeen: nil, connected: false)
        let joined = !room.connected
        // A follower that applied a newer version than the house's (the room was forgotten and
        // joins again, or the saved state is older than what it was told) takes only newer
        // ones: the house's settings go on from the follower's.
        if report.settingsVersion.isAfter(room.settings.version) {
            room.settings.version = report.settingsVersion &+ 1
        }
        room.report = report
        if report.holes != nil || report.concealments != nil {
            room.holes.record((report.holes ?? 0) + (report.concealments ?? 0), at: now)
        }
        room.address = address
        room.lastSeen = now
        room.connected = true
        rooms[key] = room
        return joined ? [.joined(key: key)] : []
    }

    public mutating func expire(now: Int64) -> [Event] {
        var events: [Event] = []
        for (key, room) in rooms where room.connected {
            if let seen = room.lastSeen, now - seen > timeout {
                rooms[key]?.connected = false
                events.append(.left(key: key))
            }
        }
        return events.sorted { "\($0)" < "\($1)" }
    }

    /// Rooms whose follower has not applied their current settings yet.
    public var undelivered: [Room] {
        connected.filter { $0.report?.settingsVersion != $0.settings.version }
    }

    /// How far ahead of a command's effect every room must hear of it: for the slowest room,
    /// its output latency (it writes that far ahead) plus its round trip (the quickest one
    /// over twice the quickest way there: room for the path's jitter), plus a margin for the
    /// coordinator's own delay in sending it (8 ms: at 15 ms a pause in a house of 80 ms
    /// rooms was heard 100 ms after the command, the goal's limit).
    /// `zone`: of that zone's rooms only (a command of one zone's).
    public func commandLead(in zone: String? = nil, margin: Int64 = 8_000_000, minimum: Int64 = 40_000_000,
                            maximum: Int64 = 1_000_000_000) -> Int64 {
        let worst = connected.filter { zone == nil || $0.settings.zoneID == zone }.compactMap { room in
            room.report.map { $0.outputLatencyMilliseconds * 1e6 + $0.roundTripMicroseconds * 1e3 }
        }.filter(\.isFinite).max() ?? 0
        // A report is a stranger's word: clamp before converting.
        let lead = min(max(worst, 0), Double(maximum)) + Double(margin)
        return min(max(Int64(lead), minimum), maximum)
    }

    // MARK: - Finding

    /// The key of the room called `name` (its shown name, or its key), in any case.
    public func find(_ name: String) throws(RoomError) -> String {
        let wanted = name.lowercased()
        if let room = rooms.values.first(where: { $0.settings.name.lowercased() == wanted }) { return room.key }
        if let room = rooms.values.first(where: { $0.key.lowercased() == wanted }) { return room.key }
        throw .noSuchRoom(name, known: list.map(\.settings.name))
    }

    private func uniqueName(_ base: String) -> String {
        var name = base
        var n = 2
        while rooms.values.contains(where: { $0.settings.name.lowercased() == name.lowercased() }) {
            name = "\(base) \(n)"
            n += 1
        }
        return name
    }

    // MARK: - Settings

    public mutating func setVolume(_ name: String, to volume: Double) throws(RoomError) {
        try Self.check("volume", volume * 100, 0...100)
        try update(name) { $0.volume = volume }
    }

    public mutating func setMuted(_ name: String, _ muted: Bool) throws(RoomError) {
        try update(name) { $0.muted = muted }
    }

    public mutating func setOutputDelay(_ name: String, milliseconds: Double) throws(RoomError) {
        try Self.check("output delay (ms)", milliseconds, 0...2000)
        try update(name) { $0.outputDelayMilliseconds = milliseconds }
    }

    /// What a calibration found for the room (and, when `delay` is given, its new output
    /// delay, ms).
    public mutating func setCalibration(_ name: String, _ calibration: RoomCalibration?, delay: Double? = nil) throws(RoomError) {
        if let delay { try Self.check("output delay (ms)", delay, 0...2000) }
        try update(name) {
            $0.calibration = calibration
            if let delay { $0.outputDelayMilliseconds = delay }
        }
    }

    public mutating func rename(_ name: String, to newName: String) throws(RoomError) {
        let trimmed = newName.trimmingWhitespace()
        guard RoomReport.isValidName(trimmed) else { throw .badName(newName) }
        let key = try find(name)
        if let other = rooms.values.first(where: { $0.key != key && $0.settings.name.lowercased() == trimmed.lowercased() }) {
            throw .nameTaken(other.settings.name)
        }
        try update(key) { $0.name = trimmed }
    }

    /// Forgets a room and its settings (it joins again, as new, if its follower reports).
    /// Forgets a room (by its name or key); its key.
    @discardableResult
    public mutating func remove(_ name: String) throws(RoomError) -> String {
        let key = try find(name)
        rooms[key] = nil
        return key
    }

    // MARK: - Zones

    /// The rooms of a zone (by name, connected first).
    public func rooms(in zone: String) -> [Room] { list.filter { $0.settings.zoneID == zone } }

    /// Moves a room to another zone (its volume, delay and name go with it).
    public mutating func move(_ name: String, to zone: String) throws(RoomError) {
        try update(name) { $0.zone = zone == ZoneInfo.defaultID ? nil : zone }
    }

    /// Every room's settings count as changed (a new version), so that every follower is
    /// told them again: the zones' streams are new in a new run.
    public mutating func renewAll() {
        for key in rooms.keys { rooms[key]!.settings.version &+= 1 }
    }

    /// Every room of `zone` goes to the default zone (the zone is removed).
    public mutating func release(zone: String) {
        for room in rooms.values where room.settings.zoneID == zone { try? move(room.key, to: ZoneInfo.defaultID) }
    }

    /// Rooms in zones that are not among `zones` go to the default zone (a saved state that
    /// names a zone no longer there).
    public mutating func keep(zones: Set<String>) {
        for room in rooms.values where !zones.contains(room.settings.zoneID) { try? move(room.key, to: ZoneInfo.defaultID) }
    }

    /// The rooms a zone's volume and mute act on: its connected ones (all of them when none is).
    private func group(_ zone: String) -> [Room] {
        let members = rooms(in: zone)
        let online = members.filter(\.connected)
        return online.isEmpty ? members : online
    }

    /// A zone's volume: the average of its group's rooms.
    public func groupVolume(in zone: String = ZoneInfo.defaultID) -> Double {
        let pool = group(zone)
        guard !pool.isEmpty else { return 1 }
        return pool.map(\.settings.volume).reduce(0, +) / Double(pool.count)
    }

    /// Whether every connected room of a zone is muted.
    public func groupMuted(in zone: String = ZoneInfo.defaultID) -> Bool {
        let online = rooms(in: zone).filter(\.connected)
        return !online.isEmpty && online.allSatisfy(\.settings.muted)
    }

    /// Sets a zone's volume keeping its rooms' proportions: every room's volume is scaled by
    /// the same factor (rooms all at zero rise together).
    public mutating func setGroupVolume(_ volume: Double, in zone: String = ZoneInfo.defaultID) throws(RoomError) {
        try Self.check("volume", volume * 100, 0...100)
        let current = groupVolume(in: zone)
        for key in group(zone).map(\.key) {
            let old = rooms[key]!.settings.volume
            let new = current > 0 ? min(1, old * volume / current) : volume
            try update(key) { $0.volume = new }
        }
    }

    public mutating func setGroupMuted(_ muted: Bool, in zone: String = ZoneInfo.defaultID) {
        for key in group(zone).map(\.key) {
            try? update(key) { $0.muted = muted }
        }
    }

    private mutating func update(_ name: String, _ change: (inout RoomSettings) -> Void) throws(RoomError) {
        let key = rooms[name] != nil ? name : try find(name)
        var settings = rooms[key]!.settings
        let before = settings
        change(&settings)
        guard settings != before else { return }
        settings.version &+= 1
        rooms[key]!.settings = settings
    }

    private static func check(_ what: String, _ value: Double, _ range: ClosedRange<Double>) throws(RoomError) {
        guard value.isFinite, range.contains(value) else { throw .outOfRange(what: what, value: value, range: range) }
    }
}
