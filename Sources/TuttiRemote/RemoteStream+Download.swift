import AsyncHTTPClient
import Foundation
import NIOCore
import TuttiCore

/// The download: a task that asks the server, reads its answer into the buffer (waiting for
/// space beyond `BufferPolicy.aheadBytes`), takes ICY metadata out, and asks again when the
/// connection drops.
extension RemoteStream {
    func current(_ g: Int) -> Bool { condition.withLock { g == generation && !closed } }

    func download(generation g: Int, from first: Int64) async {
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

    func fail(_ g: Int, _ error: RemoteError) {
        condition.withLock {
            guard g == generation else { return }
            failure_ = error
            phase_ = .failed
            condition.broadcast()
        }
    }

    /// One connection: reads the answer into the buffer. Returns true when the stream should
    /// be asked for again (it ended early), false when it is done.
    func connect(generation g: Int, at offset: Int64) async throws(RemoteError) -> Bool {
        let known = condition.withLock { facts_ }
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

    func append(_ audio: [UInt8], metadata: [IcyMetadata], generation g: Int) -> Bool {
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
        }
        if !audio.isEmpty { condition.broadcast() }
        return true
    }

    func waitForSpace(_ g: Int) async {
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
