/// Where a follower's receiver stands, as a machine: it acquires the clock, then buffers
/// (waits for the first packet due), then plays; a timing error too large to step (a
/// resync) or a stream that stopped coming (an outage) stops playback, and it starts again
/// in place once there is something due. The room's report carries the coarser `RoomState`.
public struct ReceiverState: Equatable, Sendable {
    public enum Phase: String, Equatable, Sendable {
        case acquiringClock = "acquiring clock"
        case buffering
        case playing
        case resyncing
        case outage
    }

    public enum Event: Equatable, Sendable {
        /// The clock's estimate is usable; `playing`: playback runs (it went on while the
        /// clock was lost).
        case clockLocked(playing: Bool)
        /// The clock's estimate was withdrawn (a remembered one the coordinator disproved).
        case clockLost
        /// Playback began (the first frame due was found).
        case started
        /// Playback stopped: the timing error was too large.
        case resynced
        /// Playback stopped: nothing came for the outage's length.
        case streamStopped
        /// Playback stopped otherwise: a cut, a new stream, the end of a segment.
        case stopped
    }

    public private(set) var phase: Phase = .acquiringClock

    public init() {}

    public mutating func handle(_ event: Event) {
        switch (phase, event) {
        case let (.acquiringClock, .clockLocked(playing)): phase = playing ? .playing : .buffering
        case (_, .clockLost): phase = .acquiringClock
        case (.acquiringClock, _): break  // nothing plays before the clock
        case (_, .clockLocked): break
        case (_, .started): phase = .playing
        case (_, .resynced): phase = .resyncing
        case (_, .streamStopped): phase = .outage
        case (.playing, .stopped): phase = .buffering
        case (_, .stopped): break  // a resync or an outage stays one until playback starts again
        }
    }

    /// What the room's report says.
    public var roomState: RoomState {
        switch phase {
        case .acquiringClock: .acquiringClock
        case .playing: .playing
        case .buffering, .resyncing, .outage: .waiting
        }
    }
}
