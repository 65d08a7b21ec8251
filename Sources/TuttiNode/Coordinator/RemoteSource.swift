import TuttiCodecs
import TuttiCore
import TuttiRemote

/// An MP3 file or an internet radio station over HTTP(S), as the player reads it: bytes from
/// a `RemoteStream` (downloading ahead), decoded as they come. It is paced like a file; when
/// its buffer runs dry it says so (`read` gives nil), and plays again once `BufferPolicy`
/// says enough is loaded.
final class RemoteSource: FrameSource {
    let url: String
    let stream: RemoteStream
    private var decoder: MP3StreamDecoder
    private let policy: BufferPolicy
    /// Playing (enough was loaded), or waiting for the buffer to fill.
    private var playing = false
    /// Decoded frames before this one are dropped (a seek done by decoding forward).
    private var skipTo: Int64?
    /// A seek asked for before the stream's first frame was read.
    private var pendingSeek: Int64?
    private var sizeSet = false
    /// The file's first bytes, until its ID3v2 tag (if any) has been read from them.
    private var head: [UInt8]? = []
    /// Its tags, once read (text only).
    private var tags: TrackTags?
    /// A tag larger than this (pictures, mostly) is not read.
    static let maximumTag = 1 << 20

    init(url: String, policy: BufferPolicy = BufferPolicy(), fetcher: RemoteFetcher = .shared) throws {
        self.url = url
        self.policy = policy
        stream = RemoteStream(url: url, fetcher: fetcher, policy: policy)
        decoder = try MP3StreamDecoder(name: url)
        stream.open()
    }

    deinit { stream.close() }

    var name: String { url }
    /// Paced like a file, from its buffer: not stamped on arrival.
    var isLive: Bool { false }
    var framesRead: Int64 { decoder.framesDecoded }
    var sampleRate: Int { decoder.sampleRate }
    var loudness: Loudness? { tags?.loudness ?? Loudness() }
    var length: Int64? { stream.facts?.isLive == true ? nil : decoder.length.map { AudioFormat.frames($0, at: decoder.sampleRate) } }
    var seeksInPlace: Bool { stream.facts?.isLive == false }
    var closesWhenIdle: Bool { stream.facts?.isLive == true }

    /// Seconds of audio loaded ahead (bytes over the bit rate, 128 kbit/s until known).
    var bufferedSeconds: Double {
        let rate = decoder.bitRate ?? stream.facts?.announcedBitRate.map { $0 * 1000 } ?? 128_000
        return Double(stream.bufferedBytes) * 8 / Double(max(8_000, rate))
    }

    var status: StreamStatus? {
        let facts = stream.facts
        var s = StreamStatus(isLive: facts?.isLive ?? false, canSeek: facts?.canSeek ?? false, station: facts?.station,
                             streamTitle: stream.streamTitle, bufferedSeconds: bufferedSeconds, bitRate: decoder.bitRate,
                             length: decoder.isReady ? length : nil, tags: tags)
        if let size = facts?.size, size > 0 { s.loadedFraction = min(1, Double(stream.loadedOffset) / Double(size)) }
        switch stream.phase {
        case .failed: s.phase = .failed
        case .connecting: s.phase = .connecting
        case .reconnecting where !playing: s.phase = .reconnecting
        default: s.phase = playing ? (stream.isComplete ? .loaded : .ready) : .buffering
        }
        return s
    }

    func read(into output: inout [Float]) throws -> Int? {
        if !sizeSet, let size = stream.facts?.size {
            decoder.setSize(size)
            sizeSet = true
        }
        // Not playing (starting, or the buffer ran dry): wait until enough is loaded. A seek
        // still to be placed reads the stream's first frame first.
        if !playing, pendingSeek == nil {
            let loaded = stream.bufferedBytes
            if !policy.shouldPlay(playing: false, seconds: bufferedSeconds, hasData: loaded > 0, complete: stream.isComplete) {
                if let failure = stream.failure { throw failure }
                stream.waitForBytes(beyond: loaded, seconds: 0.02)
                return nil
            }
        }
        while true {
            if let n = try decodeSome(into: &output) {
                playing = true
                return n
            }
            // The decoder wants bytes.
            // Small pieces: what the decoder holds is not counted as loaded ahead.
            guard let piece = stream.take(maximum: 4096) else {
                if stream.isComplete { return 0 }
                if let failure = stream.failure { throw failure }
                playing = false  // ran dry: buffering
                stream.waitForBytes(beyond: 0, seconds: 0.02)
                return nil
            }
            if piece.startsAnew { decoder = try MP3StreamDecoder(name: url) }
            if head != nil { readTags(piece.bytes) }
            try piece.bytes.withUnsafeBytes { try decoder.feed($0) }
        }
    }

    /// Collects the stream's first bytes until its ID3v2 tag is whole, and reads it.
    private func readTags(_ bytes: ArraySlice<UInt8>) {
        head! += bytes
        guard head!.count >= 10 else { return }
        let length = ID3Reader.tagLength(header: Array(head!.prefix(10)))
        guard length > 0, length <= Self.maximumTag else {
            head = nil
            return
        }
        guard head!.count >= length else { return }
        var read = ID3Reader.read(head!)
        read.pictures = []
        read.lyrics = []
        read.syncedLyrics = []
        tags = read
        head = nil
    }

    /// Decodes what the bytes fed allow: frames (past any skip), or nil when it needs more.
    private func decodeSome(into output: inout [Float]) throws -> Int? {
        while true {
            let before = output.count
            guard case let .frames(n) = try decoder.decode(into: &output) else { return nil }
            if let target = pendingSeek {
                output.removeSubrange(before...)
                pendingSeek = nil
                try seek(toFrame: target)
                continue
            }
            if let target = skipTo {
                let end = decoder.framesDecoded
                if end <= target {
                    output.removeSubrange(before...)
                    continue
                }
                let drop = Int(max(0, target - (end - Int64(n))))
                output.removeSubrange(before..<(before + drop * 2))
                skipTo = nil
                return n - drop
            }
            return n
        }
    }

    /// Moves to media position `frame` (48 kHz): by a range request (exact once decoded that far, else as the file's
    /// seek table places it), or, on a server without ranges, by decoding forward (from the
    /// start when the frame lies behind). A live stream ignores it: it plays from now.
    func seek(toFrame position: Int64) throws {
        guard stream.facts?.isLive != true else { return }
        guard decoder.isReady else {
            pendingSeek = position
            return
        }
        let frame = AudioFormat.frames(position, at: AudioFormat.sampleRate, to: decoder.sampleRate)
        skipTo = nil
        playing = false
        if stream.facts?.canSeek == true {
            // Exactly (reading forward from what the decoder has indexed) when the bytes on
            // the way are loaded, or come within a second at the server's speed; else a jump
            // to where the file's seek table places the frame (within about 1 % of its
            // length), by a range request.
            var fuzzy = false
            if let length = decoder.length, length > 0, let size = stream.facts?.size {
                let estimate = Int64(Double(frame) / Double(length) * Double(size))
                let missing = Double(estimate - stream.loadedOffset)
                fuzzy = missing > 0 && missing > (stream.bytesPerSecond ?? 0)
            }
            let offset = try decoder.seek(toFrame: frame, fuzzy: fuzzy)
            try stream.move(to: offset)
            return
        }
        if frame < decoder.framesDecoded {
            try stream.move(to: 0)
            decoder = try MP3StreamDecoder(name: url)
            sizeSet = false
        }
        skipTo = frame
    }
}
