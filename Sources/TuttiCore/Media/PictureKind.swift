/// What a picture is, by its bytes, and what its tag calls it.
public enum PictureKind {
    /// The MIME type of an image by its first bytes (JPEG, PNG, GIF, WebP, BMP); nil for
    /// anything else, which is not served as a picture at all.
    public static func mimeType(of bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("BM".utf8)), bytes.count > 26 { return "image/bmp" }
        return nil
    }

    /// ID3's picture type for the names FFmpeg gives them ("Cover (front)" is 3).
    public static func id3Type(_ name: String?) -> UInt8? {
        guard let name else { return nil }
        return names.firstIndex(of: name).map(UInt8.init)
    }

    static let names = [
        "Other", "32x32 pixels 'file icon'", "Other file icon", "Cover (front)", "Cover (back)", "Leaflet page",
        "Media (e.g. label side of CD)", "Lead artist/lead performer/soloist", "Artist/performer", "Conductor",
        "Band/Orchestra", "Composer", "Lyricist/text writer", "Recording Location", "During recording", "During performance",
        "Movie/video screen capture", "A bright coloured fish", "Illustration", "Band/artist logotype", "Publisher/Studio logotype",
    ]
}
