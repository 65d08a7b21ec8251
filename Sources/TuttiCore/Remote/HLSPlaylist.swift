/// HTTP Live Streaming playlists (RFC 8216) as radio stations serve them: a multivariant
/// ("master") playlist naming variants of the stream, or a media playlist naming its
/// segments. URIs are resolved against the playlist's own URL.
public enum HLSPlaylist: Equatable, Sendable {
    case multivariant([Variant])
    case media(Media)

    /// A playlist that says something no stream can be (a number out of its range): the
    /// source is refused with `reason`, and the queue goes on.
    public struct Invalid: Error, Equatable, Sendable {
        public var reason: String
    }

    /// The media sequence numbers read (RFC 8216 allows up to 2^64 - 1; a station counts
    /// from wherever it likes, and a playlist adds at most a million to it).
    public static let sequences: ClosedRange<Int> = 0...(1 << 62)

    public struct Variant: Equatable, Sendable {
        public var url: String
        public var bandwidth: Int?
        public var codecs: String?
        /// The URL of the variant's audio rendition, when its audio comes apart from it
        /// (`EXT-X-MEDIA:TYPE=AUDIO` with a URI).
        public var audioRendition: String?

        /// True when the variant carries audio only (its codecs name no video).
        public var isAudioOnly: Bool {
            guard let codecs = codecs?.lowercased() else { return false }
            let video = ["avc", "hvc", "hev", "vp0", "vp8", "vp9", "av01", "mp4v", "dvh"]
            return !codecs.split(separator: ",").contains { c in video.contains { c.trimmingSpaces().hasPrefix($0) } }
        }
    }

    public struct Segment: Equatable, Sendable {
        public var url: String
        /// Seconds.
        public var duration: Double
        /// Its media sequence number.
        public var sequence: Int
        /// The stream's encoding may change here (`EXT-X-DISCONTINUITY`): the decoder starts afresh.
        public var discontinuity: Bool
        /// The title its `EXTINF` gives, if any.
        public var title: String?
        /// The initialization section it needs (`EXT-X-MAP`), if any.
        public var map: String?
    }

    public struct Media: Equatable, Sendable {
        public var targetDuration: Double
        public var segments: [Segment]
        /// No more segments will come (`EXT-X-ENDLIST`): a recording, not a live stream.
        public var ended: Bool
        /// The encryption its segments are under, when not none (`EXT-X-KEY:METHOD=AES-128`).
        public var encryption: String?

        /// Where a live stream starts: no closer to its end than three target durations
        /// (RFC 8216 §6.3.3), and at its last segment at the latest (segments of no
        /// duration, a target duration of zero); a recording starts at its first segment.
        public var startIndex: Int {
            guard !ended, !segments.isEmpty else { return 0 }
            var index = segments.count - 1
            var held = segments[index].duration
            while index > 0, held < 3 * targetDuration {
                index -= 1
                held += segments[index].duration
            }
            return index
        }

        /// How long to wait before asking for a live playlist again: a target duration, half
        /// of one when the last reload brought nothing new (RFC 8216 §6.3.4), within half a
        /// second and half a minute (a station's target duration of an hour would otherwise
        /// leave the house silent for it).
        public func reloadWait(fresh: Bool) -> Double {
            min(30, max(0.5, targetDuration * (fresh ? 1 : 0.5)))
        }
    }

    /// True when an M3U text is an HLS playlist (not a list of tracks).
    public static func isHLS(_ text: Substring) -> Bool {
        let markers = ["#EXT-X-TARGETDURATION", "#EXT-X-STREAM-INF", "#EXT-X-MEDIA-SEQUENCE", "#EXT-X-ENDLIST", "#EXT-X-VERSION"]
        return text.contains("#EXTM3U") && markers.contains { text.contains($0) }
    }

    /// Parses `text`, served at `base`; nil when it is not an HLS playlist. Throws for a
    /// number out of its range: durations within a day (`OutsideNumber.playlistSeconds`),
    /// sequence numbers within `sequences`.
    public static func parse(_ text: String, base: String) throws(Invalid) -> HLSPlaylist? {
        guard isHLS(text[...]) else { return nil }
        let lines = PlaylistParser.lines(text)
        var variants: [Variant] = []
        var audioGroups: [String: String] = [:]
        var pendingVariant: Variant?
        var pendingGroup: String?
        var media = Media(targetDuration: 0, segments: [], ended: false, encryption: nil)
        var sequence = 0
        var pending: (duration: Double, title: String?)?
        var discontinuity = false
        var map: String?
        for line in lines {
            if line.hasPrefix("#") {
                let (tag, value) = split(line)
                switch tag {
                case "#EXT-X-STREAM-INF":
                    let a = attributes(value)
                    pendingVariant = Variant(url: "", bandwidth: a["BANDWIDTH"].flatMap { Int($0) }, codecs: a["CODECS"])
                    pendingGroup = a["AUDIO"]
                case "#EXT-X-MEDIA":
                    let a = attributes(value)
                    if a["TYPE"] == "AUDIO", let group = a["GROUP-ID"], let uri = a["URI"], audioGroups[group] == nil || a["DEFAULT"] == "YES" {
                        audioGroups[group] = PlaylistParser.resolve(uri, against: base)
                    }
                case "#EXT-X-TARGETDURATION":
                    guard let seconds = OutsideNumber.decimal(value, in: OutsideNumber.playlistSeconds) else {
                        throw Invalid(reason: "its HLS playlist's target duration (\(value.prefix(40))) is not a number of seconds within a day")
                    }
                    media.targetDuration = seconds
                case "#EXT-X-MEDIA-SEQUENCE":
                    guard let first = OutsideNumber.integer(value, in: sequences) else {
                        throw Invalid(reason: "its HLS playlist's media sequence (\(value.prefix(40))) is not a number from 0 to 2^62")
                    }
                    sequence = first
                case "#EXT-X-ENDLIST": media.ended = true
                case "#EXT-X-DISCONTINUITY": discontinuity = true
                case "#EXT-X-KEY":
                    let method = attributes(value)["METHOD"] ?? "NONE"
                    media.encryption = method == "NONE" ? nil : method
                case "#EXT-X-MAP":
                    map = attributes(value)["URI"].map { PlaylistParser.resolve($0, against: base) }
                case "#EXTINF":
                    let parts = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
                    let title = parts.count > 1 ? parts[1].trimmingSpaces() : ""
                    let stated = (parts.first.map(String.init) ?? "").trimmingSpaces()
                    // "-1" or nothing: unknown, as plain M3U writes it (some stations do).
                    let unknown = stated.isEmpty || stated == "-1"
                    guard let duration = unknown ? 0 : OutsideNumber.decimal(stated, in: OutsideNumber.playlistSeconds) else {
                        throw Invalid(reason: "its HLS playlist gives a segment a duration (\(stated.prefix(40))) that is not a number of seconds within a day")
                    }
                    pending = (duration, title.isEmpty ? nil : title)
                default: break
                }
                continue
            }
            let url = PlaylistParser.resolve(line, against: base)
            if var variant = pendingVariant {
                variant.url = url
                variant.audioRendition = pendingGroup.flatMap { audioGroups[$0] }
                variants.append(variant)
                pendingVariant = nil
                pendingGroup = nil
            } else if let segment = pending {
                media.segments.append(Segment(url: url, duration: segment.duration, sequence: sequence, discontinuity: discontinuity,
                                              title: segment.title, map: map))
                sequence += 1
                pending = nil
                discontinuity = false
            }
        }
        if !variants.isEmpty { return .multivariant(variants) }
        if media.targetDuration <= 0 { media.targetDuration = media.segments.map(\.duration).max() ?? 0 }
        return .media(media)
    }

    /// The variant to play: among audio-only variants the one of the highest bandwidth;
    /// else the variant of the lowest (its video is not played; the less of it the better),
    /// or its audio rendition when it has one.
    public static func choose(_ variants: [Variant]) -> String? {
        let audio = variants.filter(\.isAudioOnly)
        if let best = audio.max(by: { ($0.bandwidth ?? 0) < ($1.bandwidth ?? 0) }) { return best.url }
        if let rendition = variants.compactMap(\.audioRendition).first { return rendition }
        return variants.min { ($0.bandwidth ?? .max) < ($1.bandwidth ?? .max) }?.url
    }

    static func split(_ line: String) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        return (String(line[..<colon]), String(line[line.index(after: colon)...]))
    }

    /// An attribute list (`KEY=VALUE,KEY="quoted, with commas"`).
    static func attributes(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var key = "", value = "", inKey = true, quoted = false
        func flush() {
            let k = key.trimmingSpaces()
            if !k.isEmpty { result[k] = value }
            key = ""
            value = ""
            inKey = true
        }
        for c in text {
            if inKey {
                if c == "=" { inKey = false } else if c == "," { flush() } else { key.append(c) }
            } else if c == "\"" {
                quoted.toggle()
            } else if c == ",", !quoted {
                flush()
            } else {
                value.append(c)
            }
        }
        flush()
        return result
    }
}
