import TuttiCore
import TuttiLibrary
import TuttiMedia

/// How the library reads music files: with the decoder that plays them (FFmpeg, and the
/// ID3 reader before it), so that what the library lists is what the house plays.
enum LibraryReading {
    static let reader = MusicLibrary.Reader(tags: tags, picture: picture)

    /// A file's tags and length; nil when the decoder cannot open it (not music, or damaged).
    static func tags(_ path: String) -> ScannedTrack? {
        guard let (tags, length) = try? MediaDecoder.probe(path: path) else { return nil }
        let lyrics = tags.syncedLyrics.contains { !$0.lines.isEmpty } || tags.lyrics.contains { !$0.text.trimmingWhitespace().isEmpty }
        return ScannedTrack(title: tags.title, artist: tags.artist, album: tags.album, albumArtist: tags.albumArtist, genre: tags.genre,
                            year: year(tags.year), trackNumber: tags.trackNumber, discNumber: tags.discNumber,
                            duration: length?.seconds,
                            hasArtwork: !tags.pictures.isEmpty, hasLyrics: lyrics)
    }

    static func picture(_ path: String) -> (mimeType: String, data: [UInt8])? {
        guard let picture = (try? MediaDecoder.probe(path: path))?.tags.artwork else { return nil }
        return (picture.mimeType, picture.data)
    }

    /// The year of a date tag ("1969", "1969-09-26").
    static func year(_ text: String?) -> Int? {
        guard let text, text.count >= 4, let year = Int(text.prefix(4)), (1000...9999).contains(year) else { return nil }
        return year
    }
}
