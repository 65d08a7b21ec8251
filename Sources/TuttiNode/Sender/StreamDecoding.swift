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
        /// Frames at 48 kHz, when known.
        var length: Int64?
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

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var chunks: [Chunk] = []
    private var queued = 0.0
    private var seekTarget: Int64?
    private var stopping = false
    private var opened_: Opened?
    private var failure_: (any Error)?
    private var ended_ = false
    private var title_: String?
    /// Since the decoder opened (or sought): the input's bytes taken then, and the seconds
    /// decoded since.
    private var takenMark: Int64 = 0
    private var decodedSince = 0.0
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
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
        input.interruption.store(true, ordering: .relaxed)
    }

    /// Goes on from media position `position` (48 kHz): what was decoded is dropped.
    func seek(to position: Int64) {
        condition.withLock {
            seekTarget = position
            chunks.removeAll()
            queued = 0
            ended_ = false
            condition.broadcast()
        }
        input.interruption.store(true, ordering: .relaxed)
    }

    /// The next decoded frames, if any.
    func take() -> Chunk? {
        condition.withLock {
            guard !chunks.isEmpty else { return nil }
            let chunk = chunks.removeFirst()
            queued -= Double(chunk.samples.count / 2) / Double(chunk.rate)
            condition.broadcast()
            return chunk
        }
    }

    /// Sleeps until frames come (or the stream ends or fails), at most `seconds`.
    func wait(seconds: Double) {
        condition.lock()
        if chunks.isEmpty, !ended_, failure_ == nil {
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
        condition.unlock()
    }

    /// Seconds decoded and waiting.
    var bufferedSeconds: Double { condition.withLock { max(0, queued) } }

    /// Seconds of audio the decoder has taken in but not yet given out (what FFmpeg holds
    /// while it reads a stream's first packets, or a frame's worth): at a stream's bit rate,
    /// the bytes taken less what was decoded of them; at most a second.
    func heldSeconds(bitRate: Int) -> Double {
        let taken = input.taken.load(ordering: .relaxed)
        return condition.withLock {
            max(0, min(1, Double(taken - takenMark) * 8 / Double(max(8_000, bitRate)) - decodedSince))
        }
    }

    private func mark() {
        let taken = input.taken.load(ordering: .relaxed)
        condition.withLock {
            takenMark = taken
            decodedSince = 0
        }
    }
    var opened: Opened? { condition.withLock { opened_ } }
    /// Why decoding stopped for good, if it did.
    var failure: (any Error)? { condition.withLock { failure_ } }
    /// Everything there is has been decoded (a finite file's end).
    var ended: Bool { condition.withLock { ended_ } }
    /// The live title the stream carries in its own bytes (a chained Ogg stream's comments).
    var inBandTitle: String? { condition.withLock { title_ } }

    // MARK: - The thread

    private enum Next { case open, decode, rest, exit }

    private func run() {
        var decoder: MediaDecoder?
        var scratch: [Float] = []
        scratch.reserveCapacity(16_384)
        /// Frames to drop before this media position (a seek on a stream that cannot seek).
        var skipUntil: Int64?
        var position: Int64 = 0
        while true {
            // A command first: a stop, or a seek.
            let (stop, target) = condition.withLock { () -> (Bool, Int64?) in
                let t = seekTarget
                seekTarget = nil
                return (stopping, t)
            }
            if stop { return }
            input.interruption.store(false, ordering: .relaxed)
            if let target {
                // Whether the stream can seek is known once the server has answered.
                guard waitForStart() else { return }
                if stream.facts?.isLive == true {
                    // A live stream plays from now.
                } else if let d = decoder, input.canSeek {
                    do {
                        try d.seek(toFrame: AudioFormat.frames(target, at: AudioFormat.sampleRate, to: d.sampleRate),
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
                    let length = stream.facts?.isLive == true ? nil : d.length.map { AudioFormat.frames($0, at: d.sampleRate) }
                    condition.withLock {
                        opened_ = Opened(length: length, bitRate: d.bitRate, tags: d.tags, format: d.formatName, codec: d.codecName)
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
            let proceed = condition.withLock { () -> Bool in
                while queued >= Self.ahead, !stopping, seekTarget == nil {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 0.2))
                }
                return !stopping && seekTarget == nil
            }
            guard proceed else { continue }
            scratch.removeAll(keepingCapacity: true)
            let n: Int
            do {
                n = try decoder!.read(into: &scratch)
            } catch {
                if interrupted() {
                    decoder = nil
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
                condition.withLock {
                    ended_ = true
                    condition.broadcast()
                    // Until a seek or a stop.
                    while seekTarget == nil, !stopping { _ = condition.wait(until: Date(timeIntervalSinceNow: 1)) }
                }
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
            condition.withLock {
                decodedSince += Double(n) / Double(rate)
                if seekTarget == nil {
                    chunks.append(Chunk(rate: rate, samples: samples))
                    queued += Double(samples.count / 2) / Double(rate)
                }
                if let title { title_ = title }
                condition.broadcast()
            }
        }
    }

    /// Waits until the server has answered (the input's size and seeking are known then).
    private func waitForStart() -> Bool {
        while stream.facts == nil, stream.failure == nil {
            if condition.withLock({ stopping }) { return false }
            stream.waitForBytes(beyond: 0, seconds: 0.05)
        }
        return !condition.withLock { stopping }
    }

    private func interrupted() -> Bool {
        input.interruption.load(ordering: .relaxed) || condition.withLock { stopping || seekTarget != nil }
    }

    private func requeue(_ target: Int64) {
        condition.withLock { if seekTarget == nil { seekTarget = target } }
    }

    private func fail(_ error: any Error) {
        condition.withLock {
            failure_ = error
            condition.broadcast()
        }
    }

    /// Whether finding `target` exactly would mean waiting for a download: its bytes lie
    /// beyond what is loaded by more than a second of the server's speed.
    private func fastSeek(_ target: Int64, decoder: MediaDecoder) -> Bool {
        guard let length = decoder.length, length > 0, let size = stream.facts?.size else { return false }
        let native = AudioFormat.frames(target, at: AudioFormat.sampleRate, to: decoder.sampleRate)
        let estimate = Int64(Double(native) / Double(length) * Double(size))
        let missing = Double(estimate - stream.loadedOffset)
        return missing > 0 && missing > (stream.bytesPerSecond ?? 0)
    }

    /// "Artist - Title" from a stream's in-band tags.
    static func title(_ tags: TrackTags) -> String? {
        guard let title = tags.title else { return nil }
        return tags.artist.map { "\($0) - \(title)" } ?? title
    }
}
