import TuttiCore
import TuttiMedia
import TuttiRemote

/// A file or an internet radio station over HTTP(S), in any format FFmpeg reads (MP3, AAC,
/// Ogg Vorbis and Opus, FLAC, M4A, WAV; HLS's segments), as the player reads it: bytes from
/// a `RemoteStream` (downloading ahead), decoded on a thread of their own
/// (`StreamDecoding`). It is paced like a file; when its buffer runs dry it says so (`read`
/// gives nil), and plays again once `BufferPolicy` says enough is loaded.
final class RemoteSource: FrameSource {
    let url: String
    let stream: RemoteStream
    private let decoding: StreamDecoding
    private let policy: BufferPolicy
    /// Playing (enough was loaded), or waiting for the buffer to fill.
    private var playing = false
    private(set) var framesRead: Int64 = 0
    private(set) var sampleRate = AudioFormat.sampleRate

    init(url: String, policy: BufferPolicy = BufferPolicy(), fetcher: RemoteFetcher = .shared) throws {
        self.url = url
        self.policy = policy
        stream = RemoteStream(url: url, fetcher: fetcher, policy: policy)
        stream.open()
        decoding = StreamDecoding(url: url, stream: stream)
    }

    deinit {
        decoding.stop()
        stream.close()
    }

    var name: String { url }
    /// Paced like a file, from its buffer: not stamped on arrival.
    var isLive: Bool { false }
    /// A file on a server (not a station, nor one whose kind is not known yet).
    var isStored: Bool { stream.facts?.isLive == false }
    var length: MediaFrames? { stream.facts?.isLive == true ? nil : decoding.opened?.length }
    var loudness: Loudness? { decoding.opened?.tags.loudness ?? Loudness() }
    var seeksInPlace: Bool { stream.facts?.isLive == false }
    var closesWhenIdle: Bool { stream.facts?.isLive == true }

    /// The audio's bit rate: the decoder's, else what the server announced.
    var bitRate: Int? { decoding.opened?.bitRate ?? stream.facts?.announcedBitRate.map { $0 * 1000 } }

    /// Seconds of audio loaded ahead: decoded, held inside the decoder, and the bytes still
    /// to decode over the bit rate (128 kbit/s until known).
    var bufferedSeconds: Double {
        let rate = bitRate ?? 128_000
        return decoding.bufferedSeconds + decoding.heldSeconds(bitRate: rate) + Double(stream.bufferedBytes) * 8 / Double(max(8_000, rate))
    }

    var status: StreamStatus? {
        let facts = stream.facts
        let opened = decoding.opened
        var s = StreamStatus(isLive: facts?.isLive ?? false, canSeek: facts?.canSeek ?? false, station: facts?.station,
                             streamTitle: stream.streamTitle ?? decoding.inBandTitle, bufferedSeconds: bufferedSeconds, bitRate: bitRate,
                             length: length, tags: opened.map { $0.tags })
        if let size = facts?.size, size > 0 { s.loadedFraction = min(1, Double(stream.loadedOffset) / Double(size)) }
        switch stream.phase {
        case .failed: s.phase = .failed
        case .connecting: s.phase = .connecting
        case .reconnecting where !playing: s.phase = .reconnecting
        default: s.phase = playing ? (stream.isComplete ? .loaded : .ready) : .buffering
        }
        if decoding.failure != nil { s.phase = .failed }
        return s
    }

    func read(into output: inout [Float]) throws -> Int? {
        // Not playing (starting, or the buffer ran dry): wait until enough is loaded.
        if !playing {
            let ended = decoding.ended
            if !policy.shouldPlay(playing: false, seconds: bufferedSeconds, hasData: decoding.bufferedSeconds > 0,
                                  complete: ended || stream.isComplete) {
                if let failure = decoding.failure { throw failure }
                if ended, decoding.bufferedSeconds == 0 { return 0 }
                decoding.wait(seconds: 0.02)
                return nil
            }
        }
        if let chunk = decoding.take() {
            output += chunk.samples
            sampleRate = chunk.rate
            let n = chunk.samples.count / 2
            framesRead += Int64(n)
            playing = true
            return n
        }
        if decoding.ended { return 0 }
        if let failure = decoding.failure { throw failure }
        playing = false  // ran dry: buffering
        decoding.wait(seconds: 0.02)
        return nil
    }

    /// Moves to media position `position`: by a range request where the server
    /// serves them (exactly, or, for an MP3 far beyond what is loaded, where its seek table
    /// places it), else by decoding forward from the start. A live stream ignores it: it
    /// plays from now.
    func seek(to position: MediaFrames) throws {
        guard stream.facts?.isLive != true else { return }
        playing = false
        decoding.seek(to: position)
    }
}
