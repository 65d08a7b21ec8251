/// A room's settings: kept (and saved) by the coordinator, applied by the room's follower.
public struct RoomSettings: Codable, Equatable, Sendable {
    /// The name people see; the follower's own name stays the room's key.
    public var name: String
    /// 0 to 1, on a perceptual scale (the follower applies it as a cubic gain).
    public var volume: Double
    public var muted: Bool
    /// Extra delay of the room's device after its sound server (HDMI, Bluetooth).
    public var outputDelayMilliseconds: Double
    /// Bumped on every change; a follower reports the version it has applied.
    public var version: UInt32
    /// The zone it plays in (`ZoneInfo.id`); nil: the default zone (as in states saved
    /// before zones).
    public var zone: String?
    /// Its last calibration (nil: never calibrated).
    public var calibration: RoomCalibration?

    public init(name: String, volume: Double = 1, muted: Bool = false, outputDelayMilliseconds: Double = 0, version: UInt32 = 1,
                zone: String? = nil) {
        self.name = name
        self.volume = volume
        self.muted = muted
        self.outputDelayMilliseconds = outputDelayMilliseconds
        self.version = version
        self.zone = zone
    }

    /// The zone it plays in.
    public var zoneID: String { zone ?? ZoneInfo.defaultID }

    /// The linear gain for a volume: cubic, so that equal steps sound like equal steps.
    public static func gain(volume: Double, muted: Bool) -> Float {
        muted ? 0 : Float(pow3(min(max(volume, 0), 1)))
    }

    private static func pow3(_ x: Double) -> Double { x * x * x }
}

/// What a room's follower is doing: locking its clock to the coordinator's, waiting (for the
/// stream, or for its first packet's time), or playing. Reports, the API and events carry
/// the raw values.
public enum RoomState: String, Codable, Sendable, CaseIterable {
    case acquiringClock = "acquiring-clock"
    case waiting
    case playing
}

/// What a follower says about itself, about once a second, on the clock port.
public struct RoomReport: Codable, Equatable, Sendable {
    /// A room's name (its key in the house): 1 to 64 characters in at most 256 bytes (a
    /// character may carry any number of combining marks: one letter with 20,000 of them is
    /// one character), not blank, no control characters. Rooms named "" or " " could join
    /// and never be removed.
    public static func isValidName(_ name: String) -> Bool {
        !name.trimmingWhitespace().isEmpty && name.utf8.count <= 256 && name.count <= 64
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// The follower's configured name (`--name`): the room's key.
    public var name: String
    public var state: RoomState
    /// The sound server asked this room to pause for another stream (a phone call).
    public var interrupted: Bool
    public var clockOffsetMicroseconds: Double
    public var clockUncertaintyMicroseconds: Double
    public var roundTripMicroseconds: Double
    public var bufferedPackets: Int
    /// How far ahead of being heard the room writes its audio (sound server latency plus
    /// output delay): a command must reach it earlier than this.
    public var outputLatencyMilliseconds: Double
    public var packetsReceived: Int
    public var packetsLost: Int
    public var packetsRecovered: Int
    public var framesConcealed: Int
    public var packetsLate: Int
    /// The room's current timing error against the presentation times: its skew estimate.
    public var timingErrorMicroseconds: Double
    /// The `RoomSettings.version` the follower has applied.
    public var settingsVersion: UInt32
    /// The epoch it plays, if any.
    public var epoch: UInt32?
    /// The output delay it applies now (its `--output-delay-ms` until told otherwise).
    public var outputDelayMilliseconds: Double
    /// Packets the network lost, and of those the ones retransmitted in time (absent from
    /// followers older than retransmission).
    public var packetsMissed: Int?
    public var packetsRetransmitted: Int?
    /// Timing errors stepped out (an audible jump: at a start, after an outage, or too large
    /// to slew) and slewed out (beyond a sample, corrected by resampling: inaudible).
    public var steps: Int?
    public var slews: Int?
    /// Times the stream stopped coming and playback stopped until it returned.
    public var outages: Int?
    /// Holes the room's follower caused (its device ran dry while it played), and packets'
    /// worth of audio it made up for missing ones (concealed): what the listener heard as
    /// holes, counted since the follower started (absent from followers older than them).
    public var holes: Int?
    public var concealments: Int?
    /// What the stream's packets that came closest to their time had to spare, once the
    /// room's output latency is taken off (ms, over its last seconds): negative, some came
    /// too late to be heard. A live zone's latency is made to cover the worst of its rooms'
    /// (`LatencyTuner`). Absent from older followers, and before a packet came.
    public var headroomMilliseconds: Double?
    /// The same of the retransmissions that made good the network's losses over its last
    /// seconds (one that came after its packet was given up included): a live zone's latency
    /// is made to leave a lost packet time to be asked for again. Absent from older
    /// followers, and while nothing was lost.
    public var recoveryHeadroomMilliseconds: Double?
    /// How the room plays: nil for a tutti follower, `sendspin` for a Sendspin player the
    /// coordinator streams to itself (its settings go to it over its session, not the clock
    /// port).
    public var via: String?
    public static let sendspin = "sendspin"

    public init(name: String, state: RoomState = .waiting, interrupted: Bool = false, clockOffsetMicroseconds: Double = 0,
                clockUncertaintyMicroseconds: Double = 0, roundTripMicroseconds: Double = 0, bufferedPackets: Int = 0,
                outputLatencyMilliseconds: Double = 0, packetsReceived: Int = 0, packetsLost: Int = 0,
                packetsRecovered: Int = 0, framesConcealed: Int = 0, packetsLate: Int = 0,
                timingErrorMicroseconds: Double = 0, settingsVersion: UInt32 = 0, epoch: UInt32? = nil,
                outputDelayMilliseconds: Double = 0, packetsMissed: Int? = nil, packetsRetransmitted: Int? = nil,
                steps: Int? = nil, slews: Int? = nil, outages: Int? = nil, holes: Int? = nil, concealments: Int? = nil,
                headroomMilliseconds: Double? = nil, recoveryHeadroomMilliseconds: Double? = nil, via: String? = nil) {
        self.via = via
        self.headroomMilliseconds = headroomMilliseconds
        self.recoveryHeadroomMilliseconds = recoveryHeadroomMilliseconds
        self.holes = holes
        self.concealments = concealments
        self.name = name
        self.state = state
        self.interrupted = interrupted
        self.clockOffsetMicroseconds = clockOffsetMicroseconds
        self.clockUncertaintyMicroseconds = clockUncertaintyMicroseconds
        self.roundTripMicroseconds = roundTripMicroseconds
        self.bufferedPackets = bufferedPackets
        self.outputLatencyMilliseconds = outputLatencyMilliseconds
        self.packetsReceived = packetsReceived
        self.packetsLost = packetsLost
        self.packetsRecovered = packetsRecovered
        self.framesConcealed = framesConcealed
        self.packetsLate = packetsLate
        self.timingErrorMicroseconds = timingErrorMicroseconds
        self.settingsVersion = settingsVersion
        self.epoch = epoch
        self.outputDelayMilliseconds = outputDelayMilliseconds
        self.packetsMissed = packetsMissed
        self.packetsRetransmitted = packetsRetransmitted
        self.steps = steps
        self.slews = slews
        self.outages = outages
    }
}

/// Why a room command was refused.
public enum RoomError: Error, Equatable, Sendable, CustomStringConvertible {
    case noSuchRoom(String, known: [String])
    case nameTaken(String)
    case badName(String)
    case outOfRange(what: String, value: Double, range: ClosedRange<Double>)

    public var description: String {
        switch self {
        case let .noSuchRoom(name, known):
            known.isEmpty ? "no room named '\(name)': no rooms have joined yet"
                : "no room named '\(name)'; the rooms are: \(known.joined(separator: ", "))"
        case let .nameTaken(name): "a room is already called '\(name)'"
        case let .badName(name): "'\(String(decoding: name.utf8.prefix(256), as: UTF8.self))' is not a usable room name (1 to 64 characters in at most 256 bytes, not blank)"
        case let .outOfRange(what, value, range):
            "\(what) \(value.formatted2) is out of range (\(range.lowerBound.formatted2) to \(range.upperBound.formatted2))"
        }
    }
}

extension Double {
    /// At most two decimals, none when whole; any value (a request's 1e300 or infinity is
    /// shown as it is, never converted to an integer, which would trap).
    var formatted2: String {
        guard isFinite, abs(self) < 1e15 else { return "\(self)" }
        return self == rounded() ? String(Int(self)) : String((self * 100).rounded() / 100)
    }
}
