import Foundation
import TuttiCore
import TuttiMedia
import TuttiNet
import TuttiRemote

/// A remote source decoded by FFmpeg on a thread of its own: the thread reads the stream's
/// bytes as they come (waiting for them, which the player's thread never does), decodes a
/// few seconds ahead into a queue, and the player takes from the queue without waiting. A
/// seek or a stop calls the thread away from a read that waits.
final class StreamDecoding: @unchecked Sendable {
    /// Frames decoded at one rate (interleaved stereo).
    struct Chunk {
        var rate: Int
        var samples: [Float]
    }

    /// What the decoder found when it opened the stream.
    struct Opened {
        /// Its length, when known.
        var length: MediaFrames?
        var bitRate: Int?
        /// Its text tags (no pictures).
        var tags: TrackTags
        var format: String
        var codec: String
    }

    let url: String
    let stream: RemoteStream
    private let input: RemoteStreamInput
    /// Seconds decoded ahead at most.
    static let ahead = 3.0

    /// What the player's thread and the decoder's share.
    private struct Shared {
        var chunks: [Chunk] = []
        var queued = 0.0
        /// Where to go on from (frames at 48 kHz, as the decode thread counts).
        var seekTarget: Int64?
        var stopping = false
        var opened: Opened?
        var failure: (any Error)?
        var ended = false
        var title: String?
        /// Since the decoder opened (or sought): the input's bytes taken then, and the
        /// seconds decoded since.
        var takenMark: Int64 = 0
        var decodedSince = 0.0
    }
    private let shared = Inbox(Shared())
    private let log = Log("coordinator")

    init(url: String, stream: RemoteStream) {
        self.url = url
        self.stream = stream
        input = RemoteStreamInput(stream: stream)
        startThread("tutti-decode") { [self] in run() }
    }

    // MARK: - The player's side

    /// Lets the stream go: the thread ends at once (a read that waits gives up).
    func stop() {
        shared.post { $0.stopping = true }
        input.interruption.store(true, ordering: .relaxed)
    }

    /// Goes on from media position `position`: what was decoded is dropped.
    func seek(to position: MediaFrames) {
        let input = input
        shared.post { shared in
            shared.seekTarget = position.count
            shared.chunks.removeAll()
            shared.queued = 0
            shared.ended = false
            // With the command, under its lock: the decoder's thread takes both at once.
            // Set after the lock, it could land once the thread had taken the target and
            // sought, and call away the read of the seek's first bytes: the thread then
            // opened a decoder where the input was, mid-file, and played from the block
            // boundary there, up to a block off the timeline (a remote FLAC: 4,608 frames).
            input.interruption.store(true, ordering: .relaxed)
        }
    }

    /// The next decoded frames, if any.
    func take() -> Chunk? {
        shared.post { shared in
            guard !shared.chunks.isEmpty else { return nil }
            let chunk = shared.chunks.removeFirst()
            shared.queued -= Double(chunk.samples.count / 2) / Double(chunk.rate)
            return chunk
        }
    }

    /// Sleeps until frames come (or the stream ends or fails), at most `seconds`.
    func wait(seconds: Double) {
        shared.wait(timeout: Int64(seconds * 1e9)) { !$0.chunks.isEmpty || $0.ended || $0.failure != nil }
    }

    /// Seconds decoded and waiting.
    var bufferedSeconds: Double { shared.withLock { max(0, $0.queued) } }

    /// Seconds of audio the decoder has taken in but not yet given out (what FFmpeg holds
    /// while it reads a stream's first packets, or a frame's worth): at a stream's bit rate,
    /// the bytes taken less what was decoded of them; at most a second.
    func heldSeconds(bitRate: Int) -> Double {
        let taken = input.taken.load(ordering: .relaxed)
        return shared.withLock {
            max(0, min(1, Double(taken - $0.takenMark) * 8 / Double(max(8_000, bitRate)) - $0.decodedSince))
        }
    }

    private func mark() {
        let taken = input.taken.load(ordering: .relaxed)
        shared.withLock {
            $0.takenMark = taken
            $0.decodedSince = 0
        }
    }
    var opened: Opened? { shared.withLock { $0.opened } }
    /// Why decoding stopped for good, if it did.
    var failure: (any Error)? { shared.withLock { $0.failure } }
    /// Everything there is has been decoded (a finite file's end).
    var ended: Bool { shared.withLock { $0.ended } }
    /// The live title the stream carries in its own bytes (a chained Ogg stream's comments).
    var inBandTitle: String? { shared.withLock { $0.title } }

    // MARK: - The thread

    private enum Next { case open, decode, rest, exit }

    private func run() {
        var decoder: MediaDecoder?
        var scratch: [Float] = []
        scratch.reserveCapacity(16_384)
        /// Frames to drop before this media position (a seek on a stream that cannot seek).
        var skipUntil: Int64?
        var position: Int64 = 0
        let input = input
        while true {
            // A command first: a stop, or a seek.
            let (stop, target) = shared.withLock { shared -> (Bool, Int64?) in
                defer { shared.seekTarget = nil }
                // The call-away that came with the command (`seek`) is taken with it.
                input.interruption.store(false, ordering: .relaxed)
                return (shared.stopping, shared.seekTarget)
            }
            if stop { return }
            if let target {
                // Whether the stream can seek is known once the server has answered.
                guard waitForStart() else { return }
                if stream.facts?.isLive == true {
                    // A live stream plays from now.
                } else if let d = decoder, input.canSeek {
                    do {
                        try d.seek(to: TrackFrames(MediaFrames(target), rate: d.sampleRate),
                                   fast: fastSeek(target, decoder: d))
                        mark()
                        position = target
                        skipUntil = nil
                    } catch {
                        // The read it was called away from left FFmpeg's input in error: afresh.
                        decoder = nil
                        requeue(target)
                        continue
                    }
                } else {
                    // No seeking: from the start, decoding forward (from where it is when the
                    // target lies ahead).
                    if decoder == nil || target < position {
                        decoder = nil
                        if stream.facts?.canSeek == true || position > 0 {
                            do { try stream.move(to: 0) } catch { fail(error); return }
                        }
                        position = 0
                        input.beginAgain()
                    }
                    skipUntil = target
                    if decoder == nil, input.canSeek {
                        // A seekable stream whose decoder was lost: open, then seek properly.
                        requeue(target)
                        skipUntil = nil
                    }
                }
            }
            if decoder == nil {
                guard waitForStart() else { return }
                mark()
                do {
                    let d = try MediaDecoder(input: input, name: url, formatHint: RemoteFormats.demuxer(forContentType: stream.facts?.contentType),
                                             seekingToOpen: false)
                    decoder = d
                    let length = stream.facts?.isLive == true ? nil : d.length?.media
                    shared.withLock {
                        $0.opened = Opened(length: length, bitRate: d.bitRate, tags: d.tags, format: d.formatName, codec: d.codecName)
                    }
                    log.debug("\(url): \(d.formatName)/\(d.codecName), \(d.sampleRate) Hz")
                } catch {
                    if interrupted() { continue }
                    if input.reachedJunction {
                        input.beginAgain()
                        continue
                    }
                    fail(stream.failure ?? error)
                    return
                }
                continue
            }
            // Room in the queue (or a command)?
            let proceed = shared.wait(timeout: nil) { $0.queued < Self.ahead || $0.stopping || $0.seekTarget != nil } then: { shared, _ in
                !shared.stopping && shared.seekTarget == nil
            }
            guard proceed else { continue }
            scratch.removeAll(keepingCapacity: true)
            let n: Int
            do {
                n = try decoder!.read(into: &scratch)
            } catch {
                if interrupted() {
                    // FFmpeg's input is in error after the read it was called away from: a
                    // decoder afresh, which goes on from here by a seek unless a command
                    // says otherwise (a decoder opened where the input is, mid-file, would
                    // count its first block from where it thought it was).
                    decoder = nil
                    requeue(position)
                    continue
                }
                if input.reachedJunction {
                    // A new connection before this one gave any audio: afresh on it.
                    decoder = nil
                    input.beginAgain()
                    continue
                }
                fail(stream.failure ?? error)
                return
            }
            if n == 0 {
                if input.reachedJunction {
                    // A live stream's new connection: a new decoder on what it sends.
                    decoder = nil
                    input.beginAgain()
                    continue
                }
                shared.post { $0.ended = true }
                // Until a seek or a stop.
                shared.wait(timeout: nil) { $0.seekTarget != nil || $0.stopping }
                continue
            }
            let rate = decoder!.sampleRate
            var samples = scratch
            let start = position
            position += AudioFormat.frames(Int64(n), at: rate)
            if let until = skipUntil {
                if position <= until { continue }
                let drop = Int(AudioFormat.frames(until - start, at: AudioFormat.sampleRate, to: rate))
                samples.removeFirst(min(samples.count, max(0, drop) * 2))
                skipUntil = nil
            }
            let title = decoder!.takeChangedTags().flatMap(Self.title)
            shared.post { shared in
                shared.decodedSince += Double(n) / Double(rate)
                if shared.seekTarget == nil {
                    shared.chunks.append(Chunk(rate: rate, samples: samples))
                    shared.queued += Double(samples.count / 2) / Double(rate)
                }
                if let title { shared.title = title }
            }
        }
    }

    /// Waits until the server has answered (the input's size and seeking are known then).
    private func waitForStart() -> Bool {
        while stream.facts == nil, stream.failure == nil {
            if shared.withLock({ $0.stopping }) { return false }
            stream.waitForBytes(beyond: 0, seconds: 0.05)
        }
        return !shared.withLock { $0.stopping }
    }

    private func interrupted() -> Bool {
        input.interruption.load(ordering: .relaxed) || shared.withLock { $0.stopping || $0.seekTarget != nil }
    }

    private func requeue(_ target: Int64) {
        shared.withLock { if $0.seekTarget == nil { $0.seekTarget = target } }
    }

    private func fail(_ error: any Error) {
        shared.post { $0.failure = error }
    }

    /// Whether finding `target` exactly would mean waiting for a download: its bytes lie
    /// beyond what is loaded by more than a second of the server's speed.
    private func fastSeek(_ target: Int64, decoder: MediaDecoder) -> Bool {
        guard let length = decoder.length, length.count > 0, let size = stream.facts?.size else { return false }
        let native = TrackFrames(MediaFrames(target), rate: length.rate).count
        let estimate = Int64(Double(native) / Double(length.count) * Double(size))
        let missing = Double(estimate - stream.loadedOffset)
        return missing > 0 && missing > (stream.bytesPerSecond ?? 0)
    }

    /// "Artist - Title" from a stream's in-band tags.
    static func title(_ tags: TrackTags) -> String? {
        guard let title = tags.title else { return nil }
        return tags.artist.map { "\($0) - \(title)" } ?? title
    }
}
