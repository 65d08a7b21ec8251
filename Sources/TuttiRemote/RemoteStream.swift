import AsyncHTTPClient
import Foundation
import NIOCore
import TuttiCore
import TuttiNet

/// One remote MP3 source, downloading ahead of the player: a task reads the server's
/// answer into a buffer (at most `BufferPolicy.aheadBytes` ahead of the reader, the rest
/// waits in TCP), takes ICY metadata out, and asks again when the connection drops (with
/// backoff; from the byte it had reached, by a range request when the server serves them).
/// The player's thread takes bytes out without waiting; `waitForBytes` lets it sleep until
/// some come.
public final class RemoteStream: @unchecked Sendable {
    /// What the server said the stream is.
    public struct Facts: Equatable, Sendable {
        /// The whole file's size in bytes, for a finite file.
        public var size: Int64?
        /// An endless stream: internet radio.
        public var isLive: Bool
        /// The server serves byte ranges.
        public var canSeek: Bool
        public var station: String?
        public var genre: String?
        public var contentType: String?
        /// The bit rate the server announced (`icy-br`, kbit/s), if it did.
        public var announcedBitRate: Int?
    }

    /// A part of the stream taken by the reader.
    public struct Piece {
        public var bytes: ArraySlice<UInt8>
        /// True when these bytes begin a new connection's stream (a live stream asked for
        /// again): the decoder should start afresh.
        public var startsAnew: Bool
    }

    public let url: String
    let fetcher: RemoteFetcher
    let policy: BufferPolicy
    /// Tries in a row after a dropped connection before giving up.
    public var maximumAttempts = 8
    /// Bytes kept behind the reader, so that a seek a little back needs no new request.
    let keptBehind = 512 * 1024

    /// What the download and the reader share.
    struct Shared {
        var buffer: [UInt8] = []
        /// The stream offset of buffer[0]; the reader is at `start + head`.
        var start: Int64 = 0
        var head = 0
        /// Where each connection's bytes begin (for live streams), not yet reached by the reader.
        var junctions: [Int64] = []
        var facts: Facts?
        var title: String?
        var phase = StreamStatus.Phase.connecting
        var complete = false
        var failure: RemoteError?
        var generation = 0
        var task: Task<Void, Never>?
        var spaceWaiter: CheckedContinuation<Void, Never>?
        var closed = false
        /// How fast the server sends: bytes over the last second or more of a connection.
        var rateMark: (at: Int64, bytes: Int64)?
        var rate: Double?

        /// The stream offset up to which bytes are loaded.
        var loadedOffset: Int64 { start + Int64(buffer.count) }
    }
    let shared = Inbox(Shared())

    public init(url: String, fetcher: RemoteFetcher = .shared, policy: BufferPolicy = BufferPolicy()) {
        self.url = url
        self.fetcher = fetcher
        self.policy = policy
    }

    deinit { close() }

    // MARK: - The reader's side (the player's thread)

    /// Starts downloading (from the start).
    public func open() {
        restart(at: 0)
    }

    /// Stops the download for good.
    public func close() {
        let (t, waiter) = shared.withLock { s in
            s.closed = true
            defer { (s.task, s.spaceWaiter) = (nil, nil) }
            return (s.task, s.spaceWaiter)
        }
        t?.cancel()
        waiter?.resume()
    }

    public var facts: Facts? { shared.withLock { $0.facts } }
    public var streamTitle: String? { shared.withLock { $0.title } }
    public var phase: StreamStatus.Phase { shared.withLock { $0.phase } }
    /// True when the whole (finite) file has been loaded.
    public var isComplete: Bool { shared.withLock { $0.complete } }
    /// Why the stream stopped for good, if it did.
    public var failure: RemoteError? { shared.withLock { $0.failure } }
    /// Bytes loaded ahead of the reader.
    public var bufferedBytes: Int { shared.withLock { $0.buffer.count - $0.head } }
    /// How fast the server has been sending (bytes a second), once measured.
    public var bytesPerSecond: Double? { shared.withLock { $0.rate } }
    /// The stream offset up to which bytes are loaded.
    public var loadedOffset: Int64 { shared.withLock { $0.loadedOffset } }

    /// Takes up to `maximum` bytes (nil when none are loaded), stopping at the start of a
    /// new connection's bytes.
    public func take(maximum: Int) -> Piece? {
        let (keptBehind, ahead) = (keptBehind, policy.aheadBytes)
        return shared.withLock { s in
            let at = s.start + Int64(s.head)
            var anew = false
            if let first = s.junctions.first, first <= at {
                s.junctions.removeFirst()
                anew = true
            }
            var end = min(s.buffer.count, s.head + maximum)
            if let next = s.junctions.first { end = min(end, Int(next - s.start)) }
            guard end > s.head else { return nil }
            let piece = Piece(bytes: s.buffer[s.head..<end], startsAnew: anew)
            s.head = end
            // Forget what lies far behind (keeping some, for short seeks back).
            if s.head > keptBehind * 2 {
                let drop = s.head - keptBehind
                s.buffer.removeFirst(drop)
                s.start += Int64(drop)
                s.head -= drop
            }
            if let waiter = s.spaceWaiter, s.buffer.count - s.head < ahead / 2 {
                s.spaceWaiter = nil
                waiter.resume()
            }
            return piece
        }
    }

    /// Sleeps until more than `loaded` bytes are loaded ahead, the stream ends or fails, or
    /// `seconds` pass.
    public func waitForBytes(beyond loaded: Int, seconds: Double) {
        shared.wait(timeout: Int64(seconds * 1e9)) { s in s.buffer.count - s.head > loaded || s.complete || s.failure != nil || s.closed }
    }

    /// Moves the reader to stream offset `offset`: within what is loaded when it can, else by
    /// asking the server again from there (which must serve ranges, or `offset` is 0).
    public func move(to offset: Int64) throws(RemoteError) {
        let (moved, canSeek) = shared.withLock { s -> (Bool, Bool) in
            guard offset >= s.start, offset <= s.loadedOffset, s.junctions.isEmpty else { return (false, s.facts?.canSeek ?? false) }
            s.head = Int(offset - s.start)
            return (true, true)
        }
        if moved { return }
        guard canSeek || offset == 0 else { throw .status(url: url, code: 416, reason: "this stream cannot seek (the server serves no byte ranges)") }
        restart(at: offset)
    }

    private func restart(at offset: Int64) {
        let (old, waiter) = shared.withLock { s in
            s.generation += 1
            let g = s.generation
            let old = s.task
            s.buffer.removeAll(keepingCapacity: true)
            s.start = offset
            s.head = 0
            s.junctions.removeAll()
            s.complete = false
            s.failure = nil
            s.phase = .connecting
            s.rateMark = nil
            let waiter = s.spaceWaiter
            s.spaceWaiter = nil
            s.task = s.closed ? nil : Task { [weak self] in await self?.download(generation: g, from: offset) }
            return (old, waiter)
        }
        old?.cancel()
        waiter?.resume()
    }
}
