/// A calibration: each room plays a probe of its own in turn, on the shared clock, while a
/// microphone where people listen records them all; where each probe arrived in the
/// recording, against when its room was told to play it, says how much later (or earlier)
/// than the others that room is heard there. Only differences count, so the microphone's
/// own latency (a phone's is unknown, and tens of milliseconds) cancels.
///
/// The first room is the reference: it plays before every other room and after the last
/// (A B A C A …; with two rooms A B A B A, so that it plays at least three times). Its
/// arrivals draw the recording's clock against the house's (a phone's crystal 50 ppm off
/// moves a probe 8 s later by 0.4 ms), and each other room is measured against the
/// reference's arrivals on either side of it. A recording that lost or gained sound between
/// two of them (a browser's capture now and then shifts by a render quantum, 2.7 ms) puts
/// one of them off the line its neighbours draw, and is not believed. Probes are `spacing`
/// apart, enough for a room up to `maximumOffset` early or late (a Bluetooth speaker, a TV)
/// and its echo to stay clear of the next probe. Pure.
public struct CalibrationPlan: Codable, Sendable, Equatable {
    public struct Probe: Codable, Sendable, Equatable {
        /// The room's key.
        public var room: String
        public var seed: UInt32
        /// When it is to be heard (coordinator time, ns).
        public var at: Int64
    }

    public var id: String
    public var probes: [Probe]
    /// The probes' level (0 to 1, of full scale).
    public var level: Double

    /// Between two probes' starts (2.5 s: a 1 s probe, up to 0.5 s either way, and echo).
    public static let spacing: Int64 = 2_500_000_000
    /// From the plan to its first probe: the rooms hear of it (their command lead) and a
    /// recording that began just before catches it.
    public static let lead: Int64 = 1_000_000_000
    /// The largest offset a room may have against the first (ms): a Bluetooth speaker or a
    /// TV's processing.
    public static let maximumOffset = 500.0
    /// How far the recording's clock may seem to run from the house's (ppm) for its offsets
    /// to be believed: a crystal's error and a browser's resampling come to 100 to 200; a
    /// recording that lost or gained sound between the first probe and the last reads as
    /// hundreds or thousands more (headless Chromium's first second: 670 to 700).
    public static let steadyPPM = 500.0
    /// How far one of the reference room's arrivals may lie from where its neighbours put it
    /// (ms): a probe is found to some µs, and a phone held in the hand moves a few cm (0.1 ms
    /// at most); sound lost or gained between two probes moves every later one by what was
    /// lost (a render quantum: 2.7 ms), and so one arrival by half of it from its neighbours.
    public static let steadyStepMs = 0.5
    /// The largest output delay a room takes (ms; `RoomRegistry.setOutputDelay`).
    public static let maximumDelay = 2_000.0

    /// Rooms `rooms` (keys, the first the reference), the first probe `lead` after `now`.
    public init(id: String, rooms: [String], now: Int64, level: Double, lead: Int64 = CalibrationPlan.lead) {
        self.id = id
        self.level = min(max(level, 0), 1)
        let order = Self.order(rooms)
        // Seeds from the plan's id, so that probes of two calibrations differ.
        let base = id.utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 }
        probes = order.enumerated().map { i, room in
            Probe(room: room, seed: base &+ UInt32(i) &* 0x9E37_79B9, at: now + lead + Int64(i) * Self.spacing)
        }
    }

    /// The order the rooms play in: the reference before every other room and after the
    /// last; two rooms play twice each, so that the reference is heard three times.
    static func order(_ rooms: [String]) -> [String] {
        guard let reference = rooms.first, rooms.count > 1 else { return rooms }
        var others = Array(rooms.dropFirst())
        if others.count == 1 { others += others }
        return others.flatMap { [reference, $0] } + [reference]
    }

    /// The rooms, each once, in the order they first play.
    public var rooms: [String] {
        var seen: Set<String> = []
        return probes.map(\.room).filter { seen.insert($0).inserted }
    }

    /// When the last probe has been heard (and its echo has died away).
    public var end: Int64 { (probes.last?.at ?? 0) + Int64(CalibrationProbe.length) * 1_000_000_000 / 48_000 + 500_000_000 }

    /// What a recording says of the rooms: `arrivals` (one per probe, in the plan's order;
    /// nil: not found), each room's output delay now (ms), and the recording's rate.
    public func solve(_ arrivals: [ProbeArrival?], delays: [String: Double], rate: Double = 48_000) -> CalibrationOutcome {
        func arrival(_ i: Int) -> ProbeArrival? { i < arrivals.count ? arrivals[i] : nil }
        let heard = probes.indices.map { arrival($0).flatMap { $0.heard ? $0 : nil } }
        // Each probe on the house's schedule (s from the first) and in the recording (s).
        let scheduled = probes.map { Double($0.at - probes[0].at) / 1e9 }
        let reference = probes.first?.room
        let references = probes.indices.filter { probes[$0].room == reference && heard[$0] != nil }
        // The recording's clock against the house's: the line through the reference's
        // arrivals (least squares).
        var scale = 1.0
        if references.count >= 2 {
            let t = references.map { scheduled[$0] }, a = references.map { heard[$0]!.frame / rate }
            let tm = t.reduce(0, +) / Double(t.count), am = a.reduce(0, +) / Double(a.count)
            let sxy = zip(t, a).map { ($0 - tm) * ($1 - am) }.reduce(0, +), sxx = t.map { ($0 - tm) * ($0 - tm) }.reduce(0, +)
            scale = sxy / sxx
        }
        // How far each of its arrivals lies from where its two neighbours put it (ms): sound
        // lost or gained between two of them moves one half as far as what was lost.
        var offLine = 0.0
        if references.count >= 3 {
            for k in 1..<(references.count - 1) {
                let (b, i, n) = (references[k - 1], references[k], references[k + 1])
                let f = (scheduled[i] - scheduled[b]) / (scheduled[n] - scheduled[b])
                let expected = heard[b]!.frame * (1 - f) + heard[n]!.frame * f
                offLine = max(offLine, abs(heard[i]!.frame - expected) / rate * 1_000)
            }
        }
        // Each probe's lateness (ms): its arrival against its schedule, on the house's clock.
        func late(_ i: Int) -> Double { (heard[i]!.frame / rate / scale - scheduled[i]) * 1_000 }
        // The reference's lateness at a time: between its arrivals on either side, linearly.
        func referenceLate(at i: Int) -> Double? {
            let before = references.last { $0 < i }, after = references.first { $0 > i }
            switch (before, after) {
            case let (b?, a?):
                let f = (scheduled[i] - scheduled[b]) / (scheduled[a] - scheduled[b])
                return late(b) * (1 - f) + late(a) * f
            case let (b?, nil): return late(b)
            case let (nil, a?): return late(a)
            default: return nil
            }
        }
        var lateness: [String: [Double]] = [:]
        var confidence: [String: Double] = [:]
        var width: [String: Double] = [:]
        for (i, probe) in probes.enumerated() {
            // A room's weakest probe says how surely it was heard.
            confidence[probe.room] = min(confidence[probe.room] ?? .infinity, arrival(i)?.confidence ?? 0)
            if let w = heard[i]?.width { width[probe.room] = max(width[probe.room] ?? 0, w / rate * 1_000) }
            guard heard[i] != nil else { continue }
            if probe.room == reference {
                // The others are measured against it (its arrivals' scatter is `offLine`).
                lateness[probe.room] = [0]
            } else if let base = referenceLate(at: i) {
                lateness[probe.room, default: []].append(late(i) - base)
            } else {
                // The reference was never heard: against the schedule alone.
                lateness[probe.room, default: []].append(late(i))
            }
        }
        // A room that played twice: the two must agree as the reference's arrivals do.
        for values in lateness.values where values.count > 1 {
            offLine = max(offLine, values.max()! - values.min()!)
        }
        let rooms = self.rooms
        // A room not heard every time it played counts as not heard (the reference: when it
        // was heard at all, the others were measured against it).
        for room in rooms where room != reference && probes.indices.contains(where: { probes[$0].room == room && heard[$0] == nil }) {
            lateness[room] = nil
        }
        // Relative to the earliest heard room (every offset ≥ 0).
        let means = lateness.mapValues { $0.reduce(0, +) / Double($0.count) }
        let earliest = means.values.min() ?? 0
        var offsets: [String: Double] = [:]
        for (room, late) in means { offsets[room] = late - earliest }
        // Beyond the largest offset a room can have: another room's probe, or noise.
        let wild = offsets.filter { $0.value > 2 * Self.maximumOffset }.map(\.key)
        for room in wild { offsets[room] = nil }
        // A room heard late needs that much more output delay (it plays earlier by it);
        // the smallest delay stays where it was (0, or what the user set).
        let heardRooms = rooms.filter { offsets[$0] != nil }
        let floor = heardRooms.compactMap { delays[$0] }.min() ?? 0
        let wanted = heardRooms.map { (delays[$0] ?? 0) + offsets[$0]! }
        let least = wanted.min() ?? 0
        var results: [CalibrationOutcome.Room] = []
        for room in rooms {
            let now = delays[room] ?? 0
            if let offset = offsets[room] {
                let proposed = ((now + offset - least + floor) * 1_000).rounded() / 1_000
                results.append(.init(room: room, heard: true, offsetMs: offset, confidence: confidence[room] ?? 0, widthMs: width[room],
                                     delayMs: now, proposedDelayMs: min(Self.maximumDelay, max(0, proposed))))
            } else {
                results.append(.init(room: room, heard: false, offsetMs: nil, confidence: confidence[room] ?? 0, widthMs: nil,
                                     delayMs: now, proposedDelayMs: nil))
            }
        }
        let spread = offsets.isEmpty ? nil : (offsets.values.max()! - offsets.values.min()!)
        let ppm = (scale - 1) * 1e6
        return CalibrationOutcome(id: id, rooms: results, spreadMs: spread, clockPPM: ppm, offLineMs: offLine,
                                  steady: abs(ppm) <= Self.steadyPPM && offLine <= Self.steadyStepMs)
    }
}

/// What a calibration found: each room's offset (how much later than the earliest room its
/// sound arrived where the microphone was), and the output delay that would align it.
public struct CalibrationOutcome: Codable, Sendable, Equatable {
    public struct Room: Codable, Sendable, Equatable {
        public var room: String
        /// Whether its probe was heard clearly (`ProbeArrival.heardAbove`).
        public var heard: Bool
        /// How much later than the earliest heard room it arrived (ms); nil when not heard.
        public var offsetMs: Double?
        public var confidence: Double
        /// The first arrival's width at half its height (ms): a few hundredths for a clean
        /// path; wider when the room or the speaker smears the sound, and the offset is then
        /// less sure than its confidence says.
        public var widthMs: Double?
        /// Its output delay when it was measured (ms).
        public var delayMs: Double
        /// The output delay that aligns it with the others (ms); nil when not heard.
        public var proposedDelayMs: Double?

        public init(room: String, heard: Bool, offsetMs: Double?, confidence: Double, widthMs: Double?, delayMs: Double,
                    proposedDelayMs: Double?) {
            self.room = room
            self.heard = heard
            self.offsetMs = offsetMs
            self.confidence = confidence
            self.widthMs = widthMs
            self.delayMs = delayMs
            self.proposedDelayMs = proposedDelayMs
        }
    }

    public var id: String
    public var rooms: [Room]
    /// The largest offset between two heard rooms (ms): what is left to align, and after a
    /// calibration applied, its residual.
    public var spreadMs: Double?
    /// The recording's clock against the house's (ppm), as the reference room's probes said.
    public var clockPPM: Double
    /// How far one of the reference room's arrivals lay from where its neighbours put it, or
    /// a room's two measurements from each other (ms): some µs when the recording ran as a
    /// clock does.
    public var offLineMs: Double
    /// Whether the recording ran as a clock does (within `CalibrationPlan.steadyPPM` and
    /// `steadyStepMs`): a recording that lost or gained sound on the way says nothing true
    /// of its rooms.
    public var steady: Bool

    public init(id: String, rooms: [Room], spreadMs: Double?, clockPPM: Double, offLineMs: Double = 0, steady: Bool = true) {
        self.id = id
        self.rooms = rooms
        self.spreadMs = spreadMs
        self.clockPPM = clockPPM
        self.offLineMs = offLineMs
        self.steady = steady
    }
}

/// What a house remembers of a room's last calibration: when, by what (`ctl`, `web`), how
/// far off it was found (ms, against the earliest room), and what was left after the
/// calibration was applied, when a second pass measured it.
public struct RoomCalibration: Codable, Sendable, Equatable {
    /// Unix time (s).
    public var at: Double
    public var by: String
    public var offsetMs: Double
    /// The house's spread after the calibration was applied (ms), from the pass that
    /// verified it; nil until one did.
    public var residualMs: Double?
    /// Whether its output delay was changed by it.
    public var applied: Bool

    public init(at: Double, by: String, offsetMs: Double, residualMs: Double? = nil, applied: Bool) {
        self.at = at
        self.by = by
        self.offsetMs = offsetMs
        self.residualMs = residualMs
        self.applied = applied
    }
}
