import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TuttiNet

/// A loop on a thread of its own (it waits on sockets or paces audio in real time, so it
/// does not belong on the cooperative pool), as a ServiceLifecycle service: `run` returns
/// when the loop does; a graceful shutdown, or cancellation, asks the loop to stop.
struct ThreadService: Service, CustomStringConvertible {
    let name: String
    let loop: @Sendable () -> Void
    let stop: @Sendable () -> Void

    var description: String { name }

    func run() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    startThread(name) {
                        loop()
                        done.resume()
                    }
                }
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
    }
}

/// The house's own service: its notices and its time, until the graceful shutdown; then
/// a last save, so that a restart resumes where it was.
struct HouseService: Service, CustomStringConvertible {
    let house: House
    var description: String { "house" }

    func run() async {
        await cancelWhenGracefulShutdown { await house.run() }
        await house.saveOnExit()
    }
}

/// Work that runs until the group shuts down (then it is cancelled). Work that ends sooner
/// leaves the service waiting for the shutdown: a service that returns would end the group.
struct TaskService: Service, CustomStringConvertible {
    let name: String
    let work: @Sendable () async -> Void
    var description: String { name }

    func run() async {
        await cancelWhenGracefulShutdown { await work() }
        try? await gracefulShutdown()
    }
}

/// A service that names what failed: `what` and the error, and `hint`.
struct Explained: Service, CustomStringConvertible {
    let service: any Service
    let what: String
    let hint: String
    var description: String { what }

    func run() async throws {
        do {
            try await service.run()
        } catch {
            throw StateError("\(what): \(error)\(hint.isEmpty ? "" : " (\(hint))")")
        }
    }
}

/// A service the house can do without: when it fails (its port is taken) the failure, in
/// its `Explained` words, is logged and the rest of the group runs on until it shuts down.
struct Dispensable: Service, CustomStringConvertible {
    let service: Explained
    var description: String { service.description }

    func run() async throws {
        do {
            try await service.run()
        } catch {
            Log("coordinator").error("\(error); going on without it")
            try? await gracefulShutdown()
        }
    }
}

/// Holds a running service group so that `stop()`, from any thread, can shut it down,
/// even before it runs.
final class ShutdownTrigger: Sendable {
    private let state = Mutex<(group: ServiceGroup?, pending: Bool)>((nil, false))

    func set(_ group: ServiceGroup) {
        let stopNow = state.withLock { state -> Bool in
            state.group = group
            return state.pending
        }
        if stopNow { Task { await group.triggerGracefulShutdown() } }
    }

    func trigger() {
        let group = state.withLock { state -> ServiceGroup? in
            state.pending = true
            return state.group
        }
        if let group { Task { await group.triggerGracefulShutdown() } }
    }
}

extension Logger {
    /// ServiceLifecycle's own messages, only with TUTTI_DEBUG=1 (tutti logs what matters).
    static var services: Logger {
        var logger = Logger(label: "tutti.services")
        logger.logLevel = ProcessInfo.processInfo.environment["TUTTI_DEBUG"] == "1" ? .debug : .critical
        return logger
    }
}
