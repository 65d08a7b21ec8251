/// Reads the text tags of every container into `TrackTags`: Vorbis comments (FLAC, Ogg
/// Vorbis, Ogg Opus), MP4's iTunes atoms, ID3 frames and RIFF/AIFF chunks, under the names
/// FFmpeg gives them (its own for the common ones, the writer's for the rest), in any case.
public enum ContainerTags {
    /// Applies one tag to `tags`; a field already set keeps its first value.
    public static func apply(key rawKey: String, value rawValue: String, to tags: inout TrackTags) {
        let value = rawValue.trimmingSpaces()
        guard !value.isEmpty else { return }
        let key = normalized(rawKey)
        func set(_ field: inout String?) { if field == nil { field = value } }
        switch key {
        case "title": set(&tags.title)
        case "artist": set(&tags.artist)
        case "album": set(&tags.album)
        case "albumartist": set(&tags.albumArtist)
        case "genre": if tags.genre == nil { tags.genre = Genres.resolve(value) }
        case "date", "year", "originaldate": if tags.year == nil { tags.year = String(value.prefix(4)) }
        case "track", "tracknumber":
            let (n, of) = fraction(value)
            tags.trackNumber = tags.trackNumber ?? n
            tags.trackCount = tags.trackCount ?? of
        case "tracktotal", "totaltracks": tags.trackCount = tags.trackCount ?? Int(value)
        case "disc", "discnumber":
            let (n, of) = fraction(value)
            tags.discNumber = tags.discNumber ?? n
            tags.discCount = tags.discCount ?? of
        case "disctotal", "totaldiscs": tags.discCount = tags.discCount ?? Int(value)
        case "replaygaintrackgain": tags.loudness.trackGain = tags.loudness.trackGain ?? Loudness.gain(parsing: value)
        case "replaygaintrackpeak": tags.loudness.trackPeak = tags.loudness.trackPeak ?? Loudness.peak(parsing: value)
        case "replaygainalbumgain": tags.loudness.albumGain = tags.loudness.albumGain ?? Loudness.gain(parsing: value)
        case "replaygainalbumpeak": tags.loudness.albumPeak = tags.loudness.albumPeak ?? Loudness.peak(parsing: value)
        case "r128trackgain": tags.loudness.trackGain = tags.loudness.trackGain ?? Loudness.r128(parsing: value)
        case "r128albumgain": tags.loudness.albumGain = tags.loudness.albumGain ?? Loudness.r128(parsing: value)
        case "lyrics", "unsyncedlyrics", "uslt":
            tags.lyrics.append(TrackTags.Lyrics(language: "", description: rawKey, text: rawValue))
        default:
            // FFmpeg names ID3's USLT "lyrics-LANG" (and "lyrics-LANG-DESCRIPTION").
            if key.hasPrefix("lyrics-") {
                let language = String(key.dropFirst("lyrics-".count).prefix(3))
                tags.lyrics.append(TrackTags.Lyrics(language: language, description: rawKey, text: rawValue))
            }
        }
    }

    /// Lowercase, without the separators writers put in (`REPLAYGAIN_TRACK_GAIN`,
    /// `replaygain_track_gain`, `ALBUM ARTIST`, `album_artist`).
    static func normalized(_ key: String) -> String {
        let lower = key.lowercased()
        if lower.hasPrefix("lyrics-") { return lower }
        return String(lower.unicodeScalars.filter { $0 != "_" && $0 != " " && $0 != "-" }.map(Character.init))
    }

    /// "3/12" as (3, 12); "3" as (3, nil).
    static func fraction(_ text: String) -> (Int?, Int?) {
        let parts = text.split(separator: "/")
        return (parts.first.flatMap { Int($0.trimmingSpaces()) }, parts.count > 1 ? Int(parts[1].trimmingSpaces()) : nil)
    }
}
