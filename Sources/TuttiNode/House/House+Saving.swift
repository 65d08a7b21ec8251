import Dispatch
import Foundation
import Synchronization
import TuttiAPI
import TuttiCore
import TuttiNet

/// Writes the house's state on a thread of its own, newest first: a version older than the
/// one on disk is not written again (a newer state already holds its change).
final class StateSaver: Sendable {
    private let store: StateStore
    private let written = Mutex(0)
    private let queue: DispatchQueue

    /// `queue`: where the writes are done (a serial queue has a thread of its own).
    init(store: StateStore, queue: DispatchQueue = DispatchQueue(label: "tutti.state")) {
        self.store = store
        self.queue = queue
    }

    /// Returns once `version`, or a newer one, is on disk.
    func save(_ state: HouseState, version: Int) async throws {
        try await Blocking.run(on: queue) { try self.write(state, version: version) }
    }

    private func write(_ state: HouseState, version: Int) throws {
        try written.withLock { written in
            guard version > written else { return }
            try store.save(state)
            written = version
        }
    }
}

extension House {
    /// The house as it is saved, counted as the newest change.
    func stateToSave() -> (state: HouseState, version: Int) {
        let t = now
        func saved(_ info: ZoneInfo) -> SavedZone {
            let transport = plays[info.id]!.transport
            let snapshot = transport.snapshot(at: t)
            return SavedZone(info: info, queue: transport.queueAsHeard(at: t), position: snapshot.state == .stopped ? 0 : snapshot.position,
                             epoch: transport.epoch)
        }
        let home = saved(zoneList.zones[0])
        var state = HouseState(queue: home.queue, position: home.position, epoch: home.epoch, rooms: registry.savedSettings,
                               feedback: feedbackLog, replayGain: loudnessSetting)
        // The default zone's queue is saved where it always was; its name among the zones.
        state.zones = [SavedZone(info: zoneList.zones[0], queue: PlayQueue(), position: 0, epoch: 0)] + zoneList.zones.dropFirst().map(saved)
        saveVersion += 1
        lastSaved = clock.nanosecondsNow()
        return (state, saveVersion)
    }

    /// Saves the house as it is now and returns once it is on disk; a save that fails is a
    /// 500 (the caller's change is refused to its client, though made).
    func commit() async throws(ControlError) {
        let (state, version) = stateToSave()
        do {
            try await saver.save(state, version: version)
        } catch {
            log.error("the house's state could not be saved: \(error)")
            throw ControlError(status: 500, "the change could not be saved: \(error)")
        }
    }

    /// Saves the house as it is now without waiting (time passing, rooms joining); a
    /// failure is logged.
    func saveSoon() {
        let (state, version) = stateToSave()
        let (saver, log) = (saver, log)
        Task {
            do { try await saver.save(state, version: version) } catch { log.error("the house's state could not be saved: \(error)") }
        }
    }

    /// Saves where the house is, so that a restart resumes there.
    func saveOnExit() async {
        try? await commit()
    }
}
