/// Which files the house takes for music, by their names: what a folder's walk picks up and
/// what the queue takes from a path. Their content decides in the end (a `.flac` that is
/// text fails when it plays, with its reason).
public enum AudioFiles {
    /// The extensions of the formats FFmpeg decodes for the house, lowercase.
    public static let extensions: Set<String> = [
        "mp3", "mp2", "mpga", "flac", "m4a", "m4b", "mp4", "aac", "adts", "alac", "caf", "ogg", "oga", "opus", "spx",
        "wav", "wave", "w64", "aif", "aiff", "aifc", "wv", "ape", "wma", "asf", "mka", "webm", "tta", "mpc", "ac3", "dsf",
    ]

    /// How the formats are named to people.
    public static let described = "FLAC, ALAC, AAC (.m4a), Ogg Vorbis, Opus, WAV, AIFF, MP3, WavPack and more"

    /// True when `path`'s name says it is music.
    public static func isAudio(_ path: String) -> Bool {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
        return extensions.contains(path[path.index(after: dot)...].lowercased())
    }
}
