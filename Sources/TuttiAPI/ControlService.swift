import TuttiCore

/// What the control API serves: the coordinator's house implements it. Calls return as
/// soon as the change is made and saved (the house schedules the sound; nothing waits for
/// it); a refused call throws a `ControlError` and changes nothing. The calls are async:
/// the house is an actor, and waits on disks only from threads of its own.
/// Each call about what plays (now playing, queue, transport, group volume, lyrics, events)
/// is for one zone: `zone` is a zone's name or id, nil for the default zone (an unknown
/// one is a 404); the extension below gives the calls without it, for the default zone.
public protocol ControlService: Sendable {
    func status(zone: String?) async throws(ControlError) -> Status
    func nowPlaying(zone: String?) async throws(ControlError) -> NowPlaying
    func queue(zone: String?) async throws(ControlError) -> QueueView
    func rooms() async -> [RoomView]
    func feedback() async -> [FeedbackEntry]
    /// The lyrics of a queue item (nil: the track heard now), with the now-playing card.
    func lyrics(itemID: Int?, zone: String?) async throws(ControlError) -> TrackLyrics?
    /// The coordinator's clock (ns), for the event stream's clock exchange.
    func coordinatorTime() -> Int64
    /// The artwork of a zone's queue item: its MIME type and bytes.
    func artwork(itemID: Int, zone: String?) async throws(ControlError) -> (mimeType: String, data: [UInt8])?

    func transport(_ command: TransportCommand, zone: String?) async throws(ControlError) -> NowPlaying
    func add(paths: [String], placement: PlayQueue.Placement, zone: String?) async throws(ControlError) -> [QueueEntry]
    func remove(itemID: Int, zone: String?) async throws(ControlError)
    func move(itemID: Int, to index: Int, zone: String?) async throws(ControlError)
    func clearQueue(zone: String?) async throws(ControlError)
    func setLoopMode(_ mode: LoopMode, zone: String?) async throws(ControlError)
    /// How the house evens out loudness, and a change of it.
    func replayGain() async -> ReplayGain
    func setReplayGain(_ update: ReplayGainUpdate) async throws(ControlError) -> ReplayGain
    /// A zone's group volume (0 to 1) and mute; either may be nil.
    func setGroup(volume: Double?, muted: Bool?, zone: String?) async throws(ControlError)
    /// Changes a room (its `zone`: moves it to that zone).
    func updateRoom(_ name: String, _ update: RoomUpdate) async throws(ControlError) -> RoomView
    func removeRoom(_ name: String) async throws(ControlError)
    /// Likes, dislikes or bookmarks what a zone plays now.
    func recordFeedback(_ kind: FeedbackKind, zone: String?) async throws(ControlError) -> FeedbackEntry
    func removeFeedback(id: Int) async throws(ControlError)

    /// The zones, the default one first, with their rooms and what each plays.
    func zones() async -> [ZoneView]
    /// Makes a zone called `name` (no rooms, an empty queue).
    func addZone(_ name: String) async throws(ControlError) -> ZoneView
    func renameZone(_ zone: String, to name: String) async throws(ControlError) -> ZoneView
    /// Removes a zone: its rooms go to the default zone (which cannot be removed).
    func removeZone(_ zone: String) async throws(ControlError)
    /// Every room into one zone (nil: the default zone).
    func party(zone: String?) async throws(ControlError) -> ZoneView

    /// A stream of events of one zone from now on (first a `hello` with the whole picture),
    /// with the house's (rooms, zones, feedback), ended when the subscriber goes away.
    func subscribe(zone: String?) async throws(ControlError) -> AsyncStream<Event>
    /// Whether `token` may change the house.
    func authorizes(token: String) -> Bool
    /// Shows a new one-time pairing code (replacing any open one).
    func openPairing() async throws(ControlError) -> PairingCode
    /// Pairs a new member with the open code: its answer carries the house key, sealed.
    func pair(_ request: PairingRequest, from sender: String) async throws(ControlError) -> PairingAnswer
    /// The members, and whether holders of the house key may enrol.
    func members() async -> MembersView
    /// Revokes a member (by id, or by its name or room's): it can neither hear nor steer the
    /// house from now on; the stream moves to a new key the others get by themselves.
    func revokeMember(_ member: String) async throws(ControlError) -> MembersView
    /// Opens or closes enrolment by the house key.
    func setEnrolment(_ open: Bool) async throws(ControlError) -> MembersView
    /// Begins a calibration: the rooms play their probes in turn from about a second on.
    func startCalibration(_ request: CalibrationRequest) async throws(ControlError) -> CalibrationStarted
    /// What the recording of calibration `id` (mono float samples at 48 kHz) says; with
    /// `apply`, the rooms' output delays become the ones that align them. `by`: who
    /// calibrated (`ctl`, `web`), as the house remembers it.
    func finishCalibration(_ id: String, recording: [Float], apply: Bool, by: String) async throws(ControlError) -> CalibrationReport
    /// Sets the output delays calibration `id` measured (after a look at its report).
    func applyCalibration(_ id: String, by: String) async throws(ControlError) -> CalibrationReport
    /// The Sendspin players paired with the house, and those waiting to be.
    func sendspinPlayers() async throws(ControlError) -> SendspinPlayersView
    /// Pairs a waiting Sendspin player by code.
    func pairSendspin(_ request: SendspinPairRequest) async throws(ControlError) -> SendspinPairAnswer
    /// Forgets a paired Sendspin player (by name or id): its session ends, and it waits to be
    /// paired again when it comes back.
    func unpairSendspin(_ player: String) async throws(ControlError) -> SendspinPlayersView
}

extension ControlService {
    public func startCalibration(_ request: CalibrationRequest) async throws(ControlError) -> CalibrationStarted {
        throw .conflict("this house cannot calibrate its rooms")
    }

    public func finishCalibration(_ id: String, recording: [Float], apply: Bool, by: String) async throws(ControlError) -> CalibrationReport {
        throw .conflict("this house cannot calibrate its rooms")
    }

    public func applyCalibration(_ id: String, by: String) async throws(ControlError) -> CalibrationReport {
        throw .conflict("this house cannot calibrate its rooms")
    }

    public func sendspinPlayers() async throws(ControlError) -> SendspinPlayersView {
        throw .conflict("this house serves no Sendspin players")
    }

    public func pairSendspin(_ request: SendspinPairRequest) async throws(ControlError) -> SendspinPairAnswer {
        throw .conflict("this house serves no Sendspin players")
    }

    public func unpairSendspin(_ player: String) async throws(ControlError) -> SendspinPlayersView {
        throw .conflict("this house serves no Sendspin players")
    }
}

/// The calls for the default zone (which always exists: they cannot fail for its sake).
extension ControlService {
    public func status() async -> Status { (try? await status(zone: nil))! }
    public func nowPlaying() async -> NowPlaying { (try? await nowPlaying(zone: nil))! }
    public func queue() async -> QueueView { (try? await queue(zone: nil))! }
    public func artwork(itemID: Int) async -> (mimeType: String, data: [UInt8])? {
        (try? await artwork(itemID: itemID, zone: nil)) ?? nil
    }
    public func lyrics(itemID: Int?) async -> TrackLyrics? { (try? await lyrics(itemID: itemID, zone: nil)) ?? nil }
    public func transport(_ command: TransportCommand) async throws(ControlError) -> NowPlaying {
        try await transport(command, zone: nil)
    }
    public func add(paths: [String], placement: PlayQueue.Placement) async throws(ControlError) -> [QueueEntry] {
        try await add(paths: paths, placement: placement, zone: nil)
    }
    public func remove(itemID: Int) async throws(ControlError) { try await remove(itemID: itemID, zone: nil) }
    public func move(itemID: Int, to index: Int) async throws(ControlError) { try await move(itemID: itemID, to: index, zone: nil) }
    public func clearQueue() async throws(ControlError) { try await clearQueue(zone: nil) }
    public func setLoopMode(_ mode: LoopMode) async throws(ControlError) { try await setLoopMode(mode, zone: nil) }
    public func setGroup(volume: Double?, muted: Bool?) async throws(ControlError) {
        try await setGroup(volume: volume, muted: muted, zone: nil)
    }
    public func recordFeedback(_ kind: FeedbackKind) async throws(ControlError) -> FeedbackEntry {
        try await recordFeedback(kind, zone: nil)
    }
    public func subscribe() async -> AsyncStream<Event> {
        (try? await subscribe(zone: nil)) ?? AsyncStream { $0.finish() }
    }
}

/// A refused call: an HTTP status and a message that says what was wrong.
public struct ControlError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String

    public init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    public static func badRequest(_ message: String) -> ControlError { ControlError(status: 400, message) }
    public static func notFound(_ message: String) -> ControlError { ControlError(status: 404, message) }
    public static func conflict(_ message: String) -> ControlError { ControlError(status: 409, message) }

    public var description: String { "\(status): \(message)" }

    /// The status and message for an error from the house's core logic.
    public init(_ error: TransportError) {
        switch error {
        case .emptyQueue: self = .conflict(error.description)
        case let .queue(queueError): self.init(queueError)
        case .seekOutOfRange: self = .badRequest(error.description)
        case .cannotSeek: self = .conflict(error.description)
        }
    }

    public init(_ error: QueueError) {
        switch error {
        case .noSuchItem: self = .notFound(error.description)
        case .indexOutOfRange: self = .badRequest(error.description)
        case .empty: self = .conflict(error.description)
        }
    }

    public init(_ error: ZoneError) {
        switch error {
        case .noSuchZone: self = .notFound(error.description)
        case .nameTaken, .defaultStays, .tooMany: self = .conflict(error.description)
        case .badName: self = .badRequest(error.description)
        }
    }

    public init(_ error: RoomError) {
        switch error {
        case .noSuchRoom: self = .notFound(error.description)
        case .nameTaken: self = .conflict(error.description)
        case .badName, .outOfRange: self = .badRequest(error.description)
        }
    }
}
