import AsyncHTTPClient
import Foundation
import NIOCore
import TuttiCore
import TuttiNet

/// The download: a task that asks the server, reads its answer into the buffer (waiting for
/// space beyond `BufferPolicy.aheadBytes`), takes ICY metadata out, and asks again when the
/// connection drops.
extension RemoteStream {
    func current(_ g: Int) -> Bool { shared.withLock { g == $0.generation && !$0.closed } }

    func download(generation g: Int, from first: Int64) async {
        var attempts = 0
        var lastError = ""
        var offset = first
        while current(g), !Task.isCancelled {
            let before = shared.withLock { $0.loadedOffset }
            defer {
                // A connection that brought bytes before it dropped starts the count again.
                if shared.withLock({ $0.loadedOffset }) > before { attempts = 0 }
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
                let known = shared.withLock { $0.facts != nil }
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
            shared.withLock { if g == $0.generation { $0.phase = .reconnecting } }
            // 0.25 s, 0.5, 1, 2, then 4 s between tries.
            let pause = min(4.0, 0.25 * Double(1 << min(attempts - 1, 4)))
            try? await Task.sleep(for: .seconds(pause))
            offset = shared.withLock { $0.loadedOffset }
        }
    }

    func fail(_ g: Int, _ error: RemoteError) {
        shared.post { s in
            guard g == s.generation else { return }
            s.failure = error
            s.phase = .failed
        }
    }

    /// One connection: reads the answer into the buffer. Returns true when the stream should
    /// be asked for again (it ended early), false when it is done.
    func connect(generation g: Int, at offset: Int64) async throws(RemoteError) -> Bool {
        let known = shared.withLock { $0.facts }
        let live = known?.isLive ?? false
        // A live stream is asked for from "now"; a file from where it stopped, by a range
        // when the server serves them, else from the start (the bytes before are skipped).
        let ranged = !live && offset > 0 && known?.canSeek == true
        let answer = try await fetcher.get(url, from: ranged ? offset : nil, icy: true)
        if ranged && answer.status != 206 {
            throw .status(url: url, code: answer.status, reason: "the server did not serve the range asked for")
        }
        // An HLS stream (a live radio in segments): its own loop.
        if let playlist = try await Self.hlsPlaylist(answer, url: url) {
            try await hls(generation: g, playlist: playlist.text, base: playlist.base)
            return false
        }
        let facts = try Self.facts(of: answer, url: url, offset: ranged ? offset : 0, known: known)
        var skip = !live && !ranged ? offset : 0
        var demuxer = answer.header("icy-metaint").flatMap { Int($0.trimmingSpaces()) }.flatMap(IcyDemuxer.init(interval:))
        guard shared.withLock({ s -> Bool in
            guard g == s.generation else { return false }
            s.facts = facts
            s.rateMark = nil
            if s.phase != .ready { s.phase = .buffering }
            if facts.isLive, offset > 0 || !s.buffer.isEmpty { s.junctions.append(s.loadedOffset) }
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
        let whole = shared.withLock { s -> Bool in
            guard let size = s.facts?.size, !(s.facts?.isLive ?? true) else { return false }
            return s.loadedOffset >= size
        }
        if whole || (!facts.isLive && facts.size == nil) {
            finished(g)
            return false
        }
        return true
    }

    func append(_ audio: [UInt8], metadata: [IcyMetadata], generation g: Int) -> Bool {
        let change = { (s: inout Shared) -> Bool in
            guard g == s.generation, !s.closed else { return false }
            s.buffer += audio
            let now = SystemClock.hostNanoseconds(), loaded = s.loadedOffset
            if let mark = s.rateMark {
                let seconds = Double(now - mark.at) / 1e9
                if seconds >= 1 {
                    s.rate = Double(loaded - mark.bytes) / seconds
                    s.rateMark = (now, loaded)
                }
            } else {
                s.rateMark = (now, loaded)
            }
            for block in metadata where block.streamTitle != s.title && block.fields["StreamTitle"] != nil {
                s.title = block.streamTitle
            }
            return true
        }
        // The reader is woken only when there is something for it.
        return audio.isEmpty ? shared.withLock(change) : shared.post(change)
    }

    func waitForSpace(_ g: Int) async {
        let ahead = policy.aheadBytes
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = shared.withLock { s -> Bool in
                guard g == s.generation, !s.closed, s.buffer.count - s.head >= ahead else { return false }
                s.spaceWaiter = continuation
                s.rateMark = nil  // the server waits on us: not its speed
                return true
            }
            if !waits { continuation.resume() }
        }
    }

    /// The whole stream is loaded (a file's end, or an HLS playlist's).
    func finished(_ g: Int) {
        shared.post { s in
            guard g == s.generation else { return }
            s.complete = true
            s.phase = .loaded
        }
    }

    /// What an answer says the stream is; throws when it says it is not audio.
    static func facts(of answer: RemoteFetcher.Answer, url: String, offset: Int64, known: Facts?) throws(RemoteError) -> Facts {
        let type = answer.contentType?.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() }
        if let type, PlaylistParser.Format(contentType: type) != nil {
            throw .playlistAsTrack(url: url, contentType: type)
        }
        // Audio of a kind FFmpeg reads, or bytes of no stated kind; a web page, an image
        // and the like are refused here rather than after a megabyte the decoder cannot read.
        if let type, !RemoteFormats.mayBeAudio(contentType: type) { throw .notAudio(url: url, contentType: type) }
        let icy = answer.header("icy-metaint") != nil || answer.header("icy-name") != nil || answer.header("icy-br") != nil
        // The whole size: from Content-Range for a range, else the length.
        // Within a petabyte (`OutsideNumber.bytes`); the offset asked for is the decoder's,
        // whose seeks a file's own index steers, so the sum is checked too.
        let size = answer.rangeTotal ?? answer.contentLength.flatMap { length in
            let (sum, overflow) = length.addingReportingOverflow(offset)
            return overflow ? nil : sum
        }
        let live = known?.isLive ?? (icy || size == nil)
        let ranges = answer.header("Accept-Ranges")?.lowercased().contains("bytes") == true || answer.status == 206
        return Facts(size: live ? nil : size, isLive: live, canSeek: !live && (ranges || known?.canSeek == true),
                     station: answer.header("icy-name").map { String($0.trimmingSpaces()) }.flatMap { $0.isEmpty ? nil : $0 },
                     genre: answer.header("icy-genre"), contentType: type,
                     announcedBitRate: answer.header("icy-br").flatMap {
                         OutsideNumber.integer($0.split(separator: ",").first ?? "", in: OutsideNumber.kilobitsPerSecond)
                     })
    }
}
