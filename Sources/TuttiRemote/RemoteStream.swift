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

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var buffer: [UInt8] = []
    /// The stream offset of buffer[0]; the reader is at `start + head`.
    private var start: Int64 = 0
    private var head = 0
    /// Where each connection's bytes begin (for live streams), not yet reached by the reader.
    private var junctions: [Int64] = []
    private var facts_: Facts?
    private var title_: String?
    private var phase_ = StreamStatus.Phase.connecting
    private var complete_ = false
    private var failure_: RemoteError?
    private var generation = 0
    private var task: Task<Void, Never>?
    private var spaceWaiter: CheckedContinuation<Void, Never>?
    private var closed = false
    /// Metadata changes seen so far (the reader compares).
    private var titleChanges_ = 0
    /// How fast the server sends: bytes over the last second or more of a connection.
    private var rateMark: (at: ContinuousClock.Instant, bytes: Int64)?
    private var rate_: Double?

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
    public var titleChanges: Int { condition.withLock { titleChanges_ } }
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

    // MARK: - The download (a task)

    private func current(_ g: Int) -> Bool { condition.withLock { g == generation && !closed } }

    private func download(generation g: Int, from first: Int64) async {
        var attempts = 0
        var lastError = ""
        var offset = first
        while current(g), !Task.isCancelled {
            let before = condition.withLock { start + Int64(buffer.count) }
            defer {
                // A connection that brought bytes before it dropped starts the count again.
                if condition.withLock({ start + Int64(buffer.count) }) > before { attempts = 0 }
            }
            do throws(RemoteError) {
                let more = try await connect(generation: g, at: offset)
                guard more else { return }
                attempts = 0
                lastError = "the server closed the connection"
            } catch {
                if Task.isCancelled || !current(g) { return }
                // Before the server has ever answered, an error ends the source at once, with
                // its reason (the client has already tried to connect for its connect timeout);
                // after, a transient one is asked again up to `maximumAttempts` times in a row.
                let known = condition.withLock { facts_ != nil }
                if !error.isTransient || !known || attempts >= maximumAttempts {
                    fail(g, known && error.isTransient ? .gaveUp(url: url, attempts: attempts, last: "\(error)") : error)
                    return
                }
                lastError = "\(error)"
            }
            attempts += 1
            if attempts > maximumAttempts {
                fail(g, .gaveUp(url: url, attempts: attempts - 1, last: lastError))
                return
            }
            condition.withLock { if g == generation { phase_ = .reconnecting } }
            // 0.25 s, 0.5, 1, 2, then 4 s between tries.
            let pause = min(4.0, 0.25 * Double(1 << min(attempts - 1, 4)))
            try? await Task.sleep(for: .seconds(pause))
            offset = condition.withLock { start + Int64(buffer.count) }
        }
    }

    private func fail(_ g: Int, _ error: RemoteError) {
        condition.withLock {
            guard g == generation else { return }
            failure_ = error
            phase_ = .failed
            condition.broadcast()
        }
    }

    /// One connection: reads the answer into the buffer. Returns true when the stream should
    /// be asked for again (it ended early), false when it is done.
    private func connect(generation g: Int, at offset: Int64) async throws(RemoteError) -> Bool {
        let known = condition.withLock { facts_ }
        let live = known?.isLive ?? false
        // A live stream is asked for from "now"; a file from where it stopped, by a range
        // when the server serves them, else from the start (the bytes before are skipped).
        let ranged = !live && offset > 0 && known?.canSeek == true
        let answer = try await fetcher.get(url, from: ranged ? offset : nil, icy: true)
        if ranged && answer.status != 206 {
            throw .status(url: url, code: answer.status, reason: "the server did not serve the range asked for")
        }
        let facts = try Self.facts(of: answer, url: url, offset: ranged ? offset : 0, known: known)
        var skip = !live && !ranged ? offset : 0
        var demuxer = answer.header("icy-metaint").flatMap { Int($0.trimmingSpaces()) }.flatMap(IcyDemuxer.init(interval:))
        guard condition.withLock({ () -> Bool in
            guard g == generation else { return false }
            facts_ = facts
            rateMark = nil
            if phase_ != .ready { phase_ = .buffering }
            if facts.isLive, offset > 0 || !buffer.isEmpty { junctions.append(start + Int64(buffer.count)) }
            return true
        }) else { return false }
        var audio: [UInt8] = []
        do {
            for try await chunk in answer.body {
                audio.removeAll(keepingCapacity: true)
                var metadata: [IcyMetadata] = []
                if demuxer != nil {
                    metadata = demuxer!.push(chunk.readableBytesView, audio: &audio)
                } else {
                    audio.append(contentsOf: chunk.readableBytesView)
                }
                if skip > 0 {
                    let n = Int(min(skip, Int64(audio.count)))
                    audio.removeFirst(n)
                    skip -= Int64(n)
                }
                guard append(audio, metadata: metadata, generation: g) else { return false }
                await waitForSpace(g)
            }
        } catch {
            if Task.isCancelled || !current(g) { return false }
            throw RemoteError(error, url: url)
        }
        // The body ended: a file that is whole is done; anything else is asked for again.
        let whole = condition.withLock { () -> Bool in
            guard let size = facts_?.size, !(facts_?.isLive ?? true) else { return false }
            return start + Int64(buffer.count) >= size
        }
        if whole || (!facts.isLive && facts.size == nil) {
            condition.withLock {
                if g == generation {
                    complete_ = true
                    phase_ = .loaded
                    condition.broadcast()
                }
            }
            return false
        }
        return true
    }

    private func append(_ audio: [UInt8], metadata: [IcyMetadata], generation g: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard g == generation, !closed else { return false }
        buffer += audio
        let now = ContinuousClock.now, loaded = start + Int64(buffer.count)
        if let mark = rateMark {
            let seconds = Double((now - mark.at).components.attoseconds) / 1e18 + Double((now - mark.at).components.seconds)
            if seconds >= 1 {
                rate_ = Double(loaded - mark.bytes) / seconds
                rateMark = (now, loaded)
            }
        } else {
            rateMark = (now, loaded)
        }
        for block in metadata where block.streamTitle != title_ && block.fields["StreamTitle"] != nil {
            title_ = block.streamTitle
            titleChanges_ += 1
        }
        if !audio.isEmpty { condition.broadcast() }
        return true
    }

    private func waitForSpace(_ g: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if g == generation, !closed, buffer.count - head >= policy.aheadBytes {
                spaceWaiter = continuation
                rateMark = nil  // the server waits on us: not its speed
                condition.unlock()
            } else {
                condition.unlock()
                continuation.resume()
            }
        }
    }

    /// Content types under which servers send MP3.
    static let mp3Types: Set<String> = [
        "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mp3", "audio/x-mpeg3", "audio/mpa", "audio/mpga",
        "application/octet-stream", "binary/octet-stream", "application/x-octet-stream",
    ]

    /// What an answer says the stream is; throws when it says it is not audio.
    static func facts(of answer: RemoteFetcher.Answer, url: String, offset: Int64, known: Facts?) throws(RemoteError) -> Facts {
        let type = answer.contentType?.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() }
        if let type, PlaylistParser.Format(contentType: type) != nil {
            throw .notAudio(url: url, contentType: "a playlist (\(type)), which must be added as one")
        }
        // MP3 (under its many names) or bytes of no stated kind; AAC, Ogg and the rest are
        // refused here rather than after a megabyte the decoder cannot read.
        if let type, !Self.mp3Types.contains(type) { throw .notAudio(url: url, contentType: type) }
        let icy = answer.header("icy-metaint") != nil || answer.header("icy-name") != nil || answer.header("icy-br") != nil
        // The whole size: from Content-Range for a range, else the length.
        var size = answer.contentLength.map { $0 + offset }
        if let range = answer.header("Content-Range"), let total = range.split(separator: "/").last.flatMap({ Int64($0) }) {
            size = total
        }
        let live = known?.isLive ?? (icy || size == nil)
        let ranges = answer.header("Accept-Ranges")?.lowercased().contains("bytes") == true || answer.status == 206
        return Facts(size: live ? nil : size, isLive: live, canSeek: !live && (ranges || known?.canSeek == true),
                     station: answer.header("icy-name").map { String($0.trimmingSpaces()) }.flatMap { $0.isEmpty ? nil : $0 },
                     genre: answer.header("icy-genre"), contentType: type,
                     announcedBitRate: answer.header("icy-br").flatMap { Int($0.split(separator: ",").first ?? "") })
    }
}
