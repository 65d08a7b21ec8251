import Dispatch

/// Work that waits on a disk (reading tags and lyrics, walking folders, writing with
/// fsync), done on a thread of its own, never on Swift concurrency's cooperative pool: the
/// caller awaits it, and an actor that awaits it serves others meanwhile.
enum Blocking {
    /// Reads for the house: tags, lengths, lyrics, artwork, playlists (one at a time).
    static let disk = DispatchQueue(label: "tutti.disk")
    /// Heavy arithmetic on the house's behalf (a calibration's recording).
    static let analysis = DispatchQueue(label: "tutti.analysis")

    /// Runs `body` on `queue` (a serial queue has a thread of its own) and returns its result.
    static func run<T: Sendable, E: Error>(on queue: DispatchQueue = disk,
                                           _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(E) -> T in try body() }) }
        }
        return try result.get()
    }
}
