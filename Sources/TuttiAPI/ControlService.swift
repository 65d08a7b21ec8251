import TuttiCore

/// What the control API serves: the coordinator's house implements it. Calls return as
/// soon as the change is made and saved (the house schedules the sound; nothing waits for
/// it); a refused call throws a `ControlError` and changes nothing. The calls are async:
/// the house is an actor, and waits on disks only from threads of its own.
public protocol ControlService: Sendable {
    func status() async -> Status
    func nowPlaying() async -> NowPlaying
    func queue() async -> QueueView
    func rooms() async -> [RoomView]
    func feedback() async -> [FeedbackEntry]
    /// The lyrics of a queue item (nil: the track heard now), with the now-playing card.
    func lyrics(itemID: Int?) async -> TrackLyrics?
    /// The coordinator's clock (ns), for the event stream's clock exchange.
    func coordinatorTime() -> Int64
    /// The artwork of a queue item: its MIME type and bytes.
    func artwork(itemID: Int) async -> (mimeType: String, data: [UInt8])?

    func transport(_ command: TransportCommand) async throws(ControlError) -> NowPlaying
    func add(paths: [String], placement: PlayQueue.Placement) async throws(ControlError) -> [QueueEntry]
    func remove(itemID: Int) async throws(ControlError)
    func move(itemID: Int, to index: Int) async throws(ControlError)
    func clearQueue() async throws(ControlError)
    func setLoopMode(_ mode: LoopMode) async throws(ControlError)
    /// How the house evens out loudness (ReplayGain), and a change of it.
    func replayGain() async -> ReplayGain
    func setReplayGain(_ update: ReplayGainUpdate) async throws(ControlError) -> ReplayGain
    /// Group volume (0 to 1) and mute; either may be nil.
    func setGroup(volume: Double?, muted: Bool?) async throws(ControlError)
    func updateRoom(_ name: String, _ update: RoomUpdate) async throws(ControlError) -> RoomView
    func removeRoom(_ name: String) async throws(ControlError)
    func recordFeedback(_ kind: FeedbackKind) async throws(ControlError) -> FeedbackEntry
    func removeFeedback(id: Int) async throws(ControlError)

    /// A stream of events from now on (first a `hello` with the whole picture), ended when
    /// the subscriber goes away.
    func subscribe() async -> AsyncStream<Event>
    /// Whether `token` may change the house.
    func authorizes(token: String) -> Bool
    /// Shows a new one-time pairing code (replacing any open one).
    func openPairing() async throws(ControlError) -> PairingCode
    /// Pairs a new member with the open code: its answer carries the house key, sealed.
    func pair(_ request: PairingRequest) async throws(ControlError) -> PairingAnswer
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

    public init(_ error: RoomError) {
        switch error {
        case .noSuchRoom: self = .notFound(error.description)
        case .nameTaken: self = .conflict(error.description)
        case .badName, .outOfRange: self = .badRequest(error.description)
        }
    }
}
