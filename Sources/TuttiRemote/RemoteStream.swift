import AsyncHTTPClient
import Foundation
import NIOCore
import TuttiCore

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

    let condition = NSCondition()
    // Guarded by `condition`.
    var buffer: [UInt8] = []
    /// The stream offset of buffer[0]; the reader is at `start + head`.
    var start: Int64 = 0
    var head = 0
    /// Where each connection's bytes begin (for live streams), not yet reached by the reader.
    var junctions: [Int64] = []
    var facts_: Facts?
    var title_: String?
    var phase_ = StreamStatus.Phase.connecting
    var complete_ = false
    var failure_: RemoteError?
    var generation = 0
    var task: Task<Void, Never>?
    var spaceWaiter: CheckedContinuation<Void, Never>?
    var closed = false
    /// How fast the server sends: bytes over the last second or more of a connection.
    var rateMark: (at: ContinuousClock.Instant, bytes: Int64)?
    var rate_: Double?

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
        condition.lock()
        closed = true
        let t = task
        task = nil
        let waiter = spaceWaiter
        spaceWaiter = nil
        condition.unlock()
        t?.cancel()
        waiter?.resume()
    }

    public var facts: Facts? { condition.withLock { facts_ } }
    public var streamTitle: String? { condition.withLock { title_ } }
    public var phase: StreamStatus.Phase { condition.withLock { phase_ } }
    /// True when the whole (finite) file has been loaded.
    public var isComplete: Bool { condition.withLock { complete_ } }
    /// Why the stream stopped for good, if it did.
    public var failure: RemoteError? { condition.withLock { failure_ } }
    /// Bytes loaded ahead of the reader.
    public var bufferedBytes: Int { condition.withLock { buffer.count - head } }
    /// How fast the server has been sending (bytes a second), once measured.
    public var bytesPerSecond: Double? { condition.withLock { rate_ } }
    /// The stream offset up to which bytes are loaded.
    public var loadedOffset: Int64 { condition.withLock { start + Int64(buffer.count) } }

    /// Takes up to `maximum` bytes (nil when none are loaded), stopping at the start of a
    /// new connection's bytes.
    public func take(maximum: Int) -> Piece? {
        condition.lock()
        defer { condition.unlock() }
        let at = start + Int64(head)
        var anew = false
        if let first = junctions.first, first <= at {
            junctions.removeFirst()
            anew = true
        }
        var end = min(buffer.count, head + maximum)
        if let next = junctions.first { end = min(end, Int(next - start)) }
        guard end > head else { return nil }
        let piece = Piece(bytes: buffer[head..<end], startsAnew: anew)
        head = end
        // Forget what lies far behind (keeping some, for short seeks back).
        if head > keptBehind * 2 {
            let drop = head - keptBehind
            buffer.removeFirst(drop)
            start += Int64(drop)
            head -= drop
        }
        if let waiter = spaceWaiter, buffer.count - head < policy.aheadBytes / 2 {
            spaceWaiter = nil
            waiter.resume()
        }
        return piece
    }

    /// Sleeps until more than `loaded` bytes are loaded ahead, the stream ends or fails, or
    /// `seconds` pass.
    public func waitForBytes(beyond loaded: Int, seconds: Double) {
        condition.lock()
        if buffer.count - head <= loaded, !complete_, failure_ == nil, !closed {
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
        condition.unlock()
    }

    /// Moves the reader to stream offset `offset`: within what is loaded when it can, else by
    /// asking the server again from there (which must serve ranges, or `offset` is 0).
    public func move(to offset: Int64) throws(RemoteError) {
        condition.lock()
        if offset >= start, offset <= start + Int64(buffer.count), junctions.isEmpty {
            head = Int(offset - start)
            condition.unlock()
            return
        }
        let canSeek = facts_?.canSeek ?? false
        condition.unlock()
        guard canSeek || offset == 0 else { throw .status(url: url, code: 416, reason: "this stream cannot seek (the server serves no byte ranges)") }
        restart(at: offset)
    }

    private func restart(at offset: Int64) {
        condition.lock()
        generation += 1
        let g = generation
        let old = task
        buffer.removeAll(keepingCapacity: true)
        start = offset
        head = 0
        junctions.removeAll()
        complete_ = false
        failure_ = nil
        phase_ = .connecting
        rateMark = nil
        let waiter = spaceWaiter
        spaceWaiter = nil
        task = closed ? nil : Task { [weak self] in await self?.download(generation: g, from: offset) }
        condition.unlock()
        old?.cancel()
        waiter?.resume()
    }
}
