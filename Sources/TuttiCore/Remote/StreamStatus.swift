/// How a remote source is doing, as the player reports it to the house: what the server
/// said it is, the live title, and how much is loaded ahead.
public struct StreamStatus: Equatable, Sendable {
    public enum Phase: String, Codable, Equatable, Sendable {
        /// Asking the server (the first request, or after a seek).
        case connecting
        /// Connected, loading until enough is ahead to play (at the start, or after the
        /// buffer ran dry).
        case buffering
        /// Enough is loaded: it plays.
        case ready
        /// The connection dropped: asking again, with backoff.
        case reconnecting
        /// Everything is loaded (a finite file).
        case loaded
        /// It cannot play (the reason is in the player's failure).
        case failed
    }

    public var phase: Phase
    /// An endless stream (internet radio): no duration, no seeking, pause stops listening.
    public var isLive: Bool
    /// The server serves byte ranges, so the source can seek.
    public var canSeek: Bool
    /// The station's name (`icy-name`).
    public var station: String?
    /// The station's live title (ICY `StreamTitle`), as sent.
    public var streamTitle: String?
    /// Seconds of audio loaded ahead of what is being played.
    public var bufferedSeconds: Double
    /// How much of a finite file is loaded (0 to 1), nil for a live stream or an unknown length.
    public var loadedFraction: Double?
    /// The audio's bit rate (bits per second), once known.
    public var bitRate: Int?
    /// A finite file's length in frames, once known (from its header, or its size).
    public var length: MediaFrames?
    /// A file's own ID3v2 tags, read from its first bytes (text only: no pictures, no lyrics).
    public var tags: TrackTags?
    /// Where the sender of a receiver's stream (AirPlay) takes commands back, once it said.
    public var remote: SenderRemote?

    public init(phase: Phase = .connecting, isLive: Bool = false, canSeek: Bool = false, station: String? = nil,
                streamTitle: String? = nil, bufferedSeconds: Double = 0, loadedFraction: Double? = nil, bitRate: Int? = nil,
                length: MediaFrames? = nil, tags: TrackTags? = nil, remote: SenderRemote? = nil) {
        self.remote = remote
        self.length = length
        self.tags = tags
        self.phase = phase
        self.isLive = isLive
        self.canSeek = canSeek
        self.station = station
        self.streamTitle = streamTitle
        self.bufferedSeconds = bufferedSeconds
        self.loadedFraction = loadedFraction
        self.bitRate = bitRate
    }

    /// The same status with its figures rounded, so that reports change only when what a
    /// buffering bar shows does: while it waits for audio, the buffer to a tenth of a second
    /// (up to 2 s) and the fraction to a percent; while it plays, whole seconds and 5 %.
    public var rounded: StreamStatus {
        var s = self
        let waiting = phase == .connecting || phase == .buffering || phase == .reconnecting
        s.bufferedSeconds = waiting && bufferedSeconds < 2 ? (bufferedSeconds * 10).rounded() / 10 : bufferedSeconds.rounded()
        s.loadedFraction = loadedFraction.map { waiting ? ($0 * 100).rounded() / 100 : ($0 * 20).rounded() / 20 }
        return s
    }
}

/// When a remote source has enough loaded to play: a start (or a restart after the buffer
/// ran dry) waits for `start` seconds ahead, or the end of the file; once playing, it plays
/// until nothing is left. Pure.
public struct BufferPolicy: Equatable, Sendable {
    /// Seconds that must be loaded ahead before the sound starts or comes back.
    public var start: Double
    /// Bytes kept loaded ahead at most (the download waits beyond it).
    public var aheadBytes: Int

    public init(start: Double = 1.0, aheadBytes: Int = 4 << 20) {
        self.start = start
        self.aheadBytes = aheadBytes
    }

    /// Whether a source that is `playing` (or waiting, when false) should play now, with
    /// `seconds` loaded ahead and the download `complete` or not.
    public func shouldPlay(playing: Bool, seconds: Double, hasData: Bool, complete: Bool) -> Bool {
        if playing { return hasData }
        return complete ? hasData : seconds >= start
    }
}
