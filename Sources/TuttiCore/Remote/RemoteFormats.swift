/// What a web server's content type says a remote source is: audio tutti plays (and which
/// of FFmpeg's demuxers reads it), or not.
public enum RemoteFormats {
    /// Types that say nothing of the content: the bytes decide.
    static let unnamed: Set<String> = ["application/octet-stream", "binary/octet-stream", "application/x-octet-stream", "application/binary"]

    /// FFmpeg's demuxer for a content type, when the type names one.
    public static func demuxer(forContentType type: String?) -> String? {
        guard let type = type.map(normalized) else { return nil }
        switch type {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mp3", "audio/x-mpeg3", "audio/mpa", "audio/mpga":
            return "mp3"
        case "audio/aac", "audio/aacp", "audio/x-aac", "audio/aac-adts", "audio/x-hx-aac-adts": return "aac"
        case "audio/ogg", "application/ogg", "audio/x-ogg", "audio/opus", "audio/vorbis", "audio/x-vorbis+ogg", "audio/x-opus+ogg":
            return "ogg"
        case "audio/flac", "audio/x-flac": return "flac"
        case "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/x-mp4", "video/mp4", "audio/mp4a-latm": return "mp4"
        case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave": return "wav"
        case "audio/aiff", "audio/x-aiff": return "aiff"
        case "video/mp2t", "video/mpeg2-ts", "audio/mp2t": return "mpegts"
        case "audio/webm", "video/webm", "audio/x-matroska", "video/x-matroska": return "matroska"
        default: return nil
        }
    }

    /// Whether a server's content type can be audio tutti plays: a known audio type, any
    /// `audio/` type (the bytes decide), or no stated kind. HTML pages, images, text and
    /// the rest are refused before a byte is decoded.
    public static func mayBeAudio(contentType type: String?) -> Bool {
        guard let type = type.map(normalized) else { return true }
        return demuxer(forContentType: type) != nil || type.hasPrefix("audio/") || unnamed.contains(type)
    }

    static func normalized(_ type: String) -> String {
        (type.split(separator: ";").first.map { $0.trimmingSpaces() } ?? "").lowercased()
    }
}
