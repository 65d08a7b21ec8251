/// Entries the queue holds that name something on a web server: `http://` and `https://`
/// URLs (an MP3 file, an internet radio station, or a playlist to expand).
public enum RemoteLocation {
    /// True when a queue entry names a URL rather than a file or a live input.
    public static func isRemote(_ entry: String) -> Bool {
        let lower = entry.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// What now playing calls a URL before anything else is known: its last path component
    /// without its extension (percent escapes decoded), else its host.
    public static func displayName(_ url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "?" && $0 != "#" }
        let parts = rest.split(separator: "/")
        let host = parts.first.map(String.init) ?? url
        guard parts.count > 1, var name = parts.last.map(String.init) else { return host }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        return percentDecoded(name) ?? name
    }

    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let b = iterator.next() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
                continue
            }
            guard let h = iterator.next(), let l = iterator.next(), let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(v)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

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
    public var length: Int64?
    /// A file's own ID3v2 tags, read from its first bytes (text only: no pictures, no lyrics).
    public var tags: TrackTags?

    public init(phase: Phase = .connecting, isLive: Bool = false, canSeek: Bool = false, station: String? = nil,
                streamTitle: String? = nil, bufferedSeconds: Double = 0, loadedFraction: Double? = nil, bitRate: Int? = nil,
                length: Int64? = nil, tags: TrackTags? = nil) {
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
