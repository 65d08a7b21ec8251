import Synchronization
import TuttiCore

/// A zone's audio as its player encodes it, for listeners beside its stream (the Sendspin
/// players of the zone): each frame's samples (48 kHz, interleaved stereo, after loudness
/// and the house's rate: what the tutti rooms hear) with the coordinator time at which its
/// first sample is heard, and the cuts (a pause, a seek, another track: what was handed on
/// past the cut is void). A listener must only hand the event on (it runs on the player's
/// thread, under the tap's lock, so that it gets every event once and in order).
///
/// With `keeping`, the tap holds what is still to be heard (stored audio goes up to the
/// lookahead ahead: about 2 s; the last 3 s are kept, 1.2 MB) and hands it to a new listener first, so that a
/// player that joins hears the zone at once, as a tutti room that asks again for the
/// packets sent before it joined; without it, the player's thread posts only while someone
/// listens.
final class ZoneTap: Sendable {
    enum Event: Sendable {
        case audio([Float], heard: Int64)
        case cut(at: Int64)
    }

    private struct State {
        var listeners: [UInt64: @Sendable (Event) -> Void] = [:]
        var next: UInt64 = 1
        /// Frames not yet heard when last posted, oldest first.
        var recent: [(samples: [Float], heard: Int64)] = []
    }

    private let state = Mutex(State())
    private let count = Atomic<Int>(0)
    let keeping: Bool
    /// How far behind the newest frame what is kept reaches (ns): past it, nothing a
    /// listener could still play.
    static let kept: Int64 = 3_000_000_000

    init(keeping: Bool = false) {
        self.keeping = keeping
    }

    /// Whether the player's thread must post (someone listens, or the tap keeps).
    var isListened: Bool { keeping || count.load(ordering: .relaxed) > 0 }

    /// Adds a listener, first handed what is kept and heard after `after` (coordinator ns);
    /// returns its id, for `stopListening`.
    func listen(after: Int64 = .max, _ listener: @escaping @Sendable (Event) -> Void) -> UInt64 {
        state.withLock { state in
            let id = state.next
            state.next += 1
            for frame in state.recent where frame.heard > after { listener(.audio(frame.samples, heard: frame.heard)) }
            state.listeners[id] = listener
            count.store(state.listeners.count, ordering: .relaxed)
            return id
        }
    }

    func stopListening(_ id: UInt64) {
        state.withLock { state in
            state.listeners[id] = nil
            count.store(state.listeners.count, ordering: .relaxed)
        }
    }

    func post(_ event: Event) {
        state.withLock { state in
            if keeping {
                switch event {
                case let .audio(samples, heard):
                    state.recent.append((samples, heard))
                    let oldest = heard - Self.kept
                    if let first = state.recent.firstIndex(where: { $0.heard >= oldest }), first > 0 { state.recent.removeFirst(first) }
                case let .cut(at):
                    state.recent.removeAll { $0.heard >= at }
                }
            }
            for listener in state.listeners.values { listener(event) }
        }
    }
}

/// The zones' taps, by zone id, made when first asked for (a listener may come before the
/// zone's player, and stays across a player's restart); `keeping`: each keeps what is
/// still to be heard, for players that join (a house with a Sendspin server).
final class ZoneTaps: Sendable {
    private let taps = Mutex<[String: ZoneTap]>([:])
    let keeping: Bool

    init(keeping: Bool = false) {
        self.keeping = keeping
    }

    func tap(_ zone: String) -> ZoneTap {
        taps.withLock { taps in
            if let tap = taps[zone] { return tap }
            let tap = ZoneTap(keeping: keeping)
            taps[zone] = tap
            return tap
        }
    }
}
