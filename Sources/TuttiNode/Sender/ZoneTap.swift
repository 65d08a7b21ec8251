import Synchronization
import TuttiCore

/// A zone's audio as its player encodes it, for listeners beside its stream (the Sendspin
/// players of the zone): each frame's samples (48 kHz, interleaved stereo, after loudness
/// and the house's rate: what the tutti rooms hear) with the coordinator time at which its
/// first sample is heard, and the cuts (a pause, a seek, another track: what was handed on
/// past the cut is void). The player's thread posts only while someone listens, and a
/// listener must only hand the event on (it runs on that thread).
final class ZoneTap: Sendable {
    enum Event: Sendable {
        case audio([Float], heard: Int64)
        case cut(at: Int64)
    }

    private let listeners = Mutex<[UInt64: @Sendable (Event) -> Void]>([:])
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<UInt64>(1)

    var isListened: Bool { count.load(ordering: .relaxed) > 0 }

    /// Adds a listener; returns its id, for `stopListening`.
    func listen(_ listener: @escaping @Sendable (Event) -> Void) -> UInt64 {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        listeners.withLock { $0[id] = listener; count.store($0.count, ordering: .relaxed) }
        return id
    }

    func stopListening(_ id: UInt64) {
        listeners.withLock { $0[id] = nil; count.store($0.count, ordering: .relaxed) }
    }

    func post(_ event: Event) {
        for listener in listeners.withLock({ Array($0.values) }) { listener(event) }
    }
}

/// The zones' taps, by zone id, made when first asked for (a listener may come before the
/// zone's player, and stays across a player's restart).
final class ZoneTaps: Sendable {
    private let taps = Mutex<[String: ZoneTap]>([:])

    func tap(_ zone: String) -> ZoneTap {
        taps.withLock { taps in
            if let tap = taps[zone] { return tap }
            let tap = ZoneTap()
            taps[zone] = tap
            return tap
        }
    }
}
