import Foundation
import Synchronization
import TuttiAPI
import TuttiCore
import TuttiNet

/// What a critical section of the house asks of the world: messages to the rooms, log
/// lines, and the state to save. Gathered under the lock, done once it is released, so
/// that no thread waits on a disk or a socket for the house.
struct Aftermath {
    var actions: [() -> Void] = []
    /// The state to save and its version (the house's changes, counted).
    var save: (state: HouseState, version: Int)?
}

/// Writes the house's state, newest first: a version older than the one on disk is not
/// written again (a newer state already holds its change). Its lock only orders the writers.
final class StateSaver: Sendable {
    private let store: StateStore
    private let written = Mutex(0)

    init(store: StateStore) { self.store = store }

    /// Returns once `version`, or a newer one, is on disk.
    func save(_ state: HouseState, version: Int) throws {
        try written.withLock { written in
            guard version > written else { return }
            try store.save(state)
            written = version
        }
    }
}

extension House {
    /// Runs `body` under the house's lock, keeping its error's type; what it asked for
    /// (`later`, `saveLocked`) is done after the lock is released. A save that fails is
    /// logged: use `changing` where it must refuse the change.
    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let (result, after) = critical(body)
        try? finish(after)
        return try result.get()
    }

    /// A change from the control API: runs `body` under the lock, then saves what it
    /// changed before returning, so that nothing is acknowledged before it is on disk. A
    /// save that fails refuses the change (a 500).
    func changing<T>(_ body: () throws(ControlError) -> T) throws(ControlError) -> T {
        let (result, after) = critical(body)
        do throws(ControlError) {
            try finish(after)
        } catch {
            if case .success = result { throw error }
        }
        return try result.get()
    }

    /// Queues `action` for when the lock is released (call under the lock).
    func later(_ action: @escaping () -> Void) {
        aftermath.actions.append(action)
    }

    /// Asks for the house to be saved once the lock is released (call under the lock).
    func saveLocked() {
        let snapshot = transport.snapshot(at: now)
        let state = HouseState(queue: transport.queue, position: snapshot.state == .stopped ? 0 : snapshot.position,
                               epoch: transport.epoch, rooms: registry.savedSettings, feedback: feedbackLog)
        saveVersion += 1
        aftermath.save = (state, saveVersion)
        lastSaved = Date()
    }

    private func critical<T, E: Error>(_ body: () throws(E) -> T) -> (Result<T, E>, Aftermath) {
        lock.lock()
        defer { lock.unlock() }
        let result = Result { () throws(E) -> T in try body() }
        let after = aftermath
        aftermath = Aftermath()
        return (result, after)
    }

    private func finish(_ after: Aftermath) throws(ControlError) {
        for action in after.actions { action() }
        guard let save = after.save else { return }
        do {
            try saver.save(save.state, version: save.version)
        } catch {
            log.error("the house's state could not be saved: \(error)")
            throw ControlError(status: 500, "the change could not be saved: \(error)")
        }
    }
}
