/// Reads ID3v2.2, 2.3 and 2.4 tags (and ID3v1 at a file's end) into `TrackTags`.
///
/// Forgiving and bounded: unknown, compressed or encrypted frames are skipped; a frame
/// that runs past the tag ends the walk; malformed text keeps what decodes. Nothing here
/// traps on bad input, which is fuzzed in the tests.
public enum ID3Reader {
    /// How many bytes of a file's start a complete tag needs (0 when there is no tag), from
    /// its 10-byte header.
    public static func tagLength(header: [UInt8]) -> Int {
        guard header.count >= 10, header[0] == 0x49, header[1] == 0x44, header[2] == 0x33,  // "ID3"
              header[3] >= 2, header[3] <= 4, let size = syncsafe(header[6..<10]) else { return 0 }
        let footer = header[3] == 4 && header[5] & 0x10 != 0 ? 10 : 0
        return 10 + size + footer
    }

    /// Parses the tag at the start of `bytes` (the file's first `tagLength` bytes or more).
    public static func read(_ bytes: [UInt8]) -> TrackTags {
        var tags = TrackTags()
        let total = tagLength(header: Array(bytes.prefix(10)))
        guard total > 0 else { return tags }
        let version = bytes[3]
        let flags = bytes[5]
        var body = Array(bytes[10..<min(bytes.count, total)])
        if version < 4, flags & 0x80 != 0 { body = unsynchronised(body) }  // whole-tag unsynchronisation
        var offset = 0
        if flags & 0x40 != 0, version >= 3 {  // extended header
            guard body.count >= 4 else { return tags }
            let size = version == 4 ? (syncsafe(body[0..<4]) ?? body.count) : Int(be32(body, 0))
            offset = version == 4 ? size : size + 4
        }
        let idLength = version == 2 ? 3 : 4
        let headerLength = version == 2 ? 6 : 10
        while offset + headerLength <= body.count {
            let idBytes = body[offset..<offset + idLength]
            guard idBytes.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }) else { break }  // padding
            let id = String(decoding: idBytes, as: UTF8.self)
            let size: Int
            var frameFlags: UInt8 = 0
            if version == 2 {
                size = Int(body[offset + 3]) << 16 | Int(body[offset + 4]) << 8 | Int(body[offset + 5])
            } else if version == 4 {
                // Some writers used plain integers here; take whichever lands on a frame.
                let safe = syncsafe(body[offset + 4..<offset + 8]) ?? Int(be32(body, offset + 4))
                let plain = Int(be32(body, offset + 4))
                size = plausible(body, at: offset + headerLength + safe, idLength: idLength) ? safe : plain
                frameFlags = body[offset + 9]
            } else {
                size = Int(be32(body, offset + 4))
                frameFlags = body[offset + 9]
            }
            let start = offset + headerLength
            guard size >= 0, start + size <= body.count else { break }
            var content = Array(body[start..<start + size])
            offset = start + size
            if version == 3, frameFlags & 0xC0 != 0 { continue }  // compressed or encrypted
            if version == 4 {
                if frameFlags & 0x0C != 0 { continue }  // compressed or encrypted
                if frameFlags & 0x01 != 0 { content = content.count >= 4 ? Array(content.dropFirst(4)) : [] }  // data length
                if frameFlags & 0x02 != 0 || flags & 0x80 != 0 { content = unsynchronised(content) }
            }
            apply(frame: canonical(id), content, version: version, to: &tags)
        }
        return tags
    }

    /// Reads an ID3v1 tag from a file's last 128 bytes.
    public static func readV1(_ last128: [UInt8]) -> TrackTags {
        var tags = TrackTags()
        guard last128.count == 128, last128[0] == 0x54, last128[1] == 0x41, last128[2] == 0x47 else { return tags }  // "TAG"
        func field(_ r: Range<Int>) -> String? {
            let raw = last128[r].prefix { $0 != 0 }
            let text = TextDecoding.latin1(Array(raw)).trimmingSpaces()
            return text.isEmpty ? nil : text
        }
        tags.title = field(3..<33)
        tags.artist = field(33..<63)
        tags.album = field(63..<93)
        tags.year = field(93..<97)
        if last128[125] == 0, last128[126] != 0 { tags.trackNumber = Int(last128[126]) }
        tags.genre = Genres.name(Int(last128[127]))
        return tags
    }

    // MARK: - Frames

    /// ID3v2.2's three-letter names, as their v2.3 equivalents.
    static func canonical(_ id: String) -> String {
        let v22 = ["TT2": "TIT2", "TP1": "TPE1", "TP2": "TPE2", "TAL": "TALB", "TCO": "TCON", "TYE": "TYER",
                   "TRK": "TRCK", "TPA": "TPOS", "PIC": "APIC", "ULT": "USLT", "SLT": "SYLT", "TXX": "TXXX"]
        return v22[id] ?? id
    }

    static func apply(frame id: String, _ content: [UInt8], version: UInt8, to tags: inout TrackTags) {
        switch id {
        case "TIT2": tags.title = text(content)
        case "TPE1": tags.artist = text(content)
        case "TPE2": tags.albumArtist = text(content)
        case "TALB": tags.album = text(content)
        case "TCON": tags.genre = text(content).map(Genres.resolve)
        case "TYER", "TDRC": tags.year = text(content)
        case "TRCK": (tags.trackNumber, tags.trackCount) = fraction(text(content))
        case "TPOS": (tags.discNumber, tags.discCount) = fraction(text(content))
        case "APIC": if let p = picture(content, version: version) { tags.pictures.append(p) }
        case "USLT": if let l = lyrics(content) { tags.lyrics.append(l) }
        case "SYLT": if let s = synced(content) { tags.syncedLyrics.append(s) }
        case "TXXX": userText(content, to: &tags)
        default: break
        }
    }

    static func text(_ content: [UInt8]) -> String? {
        guard let encoding = content.first else { return nil }
        let value = TextDecoding.decode(Array(content.dropFirst()), id3Encoding: encoding)
            .split(separator: "\u{0}").first.map(String.init)?.trimmingSpaces()
        return value?.isEmpty == false ? value : nil
    }

    /// A user text frame (TXXX): ReplayGain's values are written as these.
    static func userText(_ c: [UInt8], to tags: inout TrackTags) {
        guard let encoding = c.first else { return }
        let (description, next) = terminated(c, from: 1, encoding: encoding)
        guard next <= c.count else { return }
        let key = description.lowercased()
        guard key.hasPrefix("replaygain_") || key.hasPrefix("r128_") else { return }
        let value = TextDecoding.decode(Array(c[next...]), id3Encoding: encoding).split(separator: "\u{0}").first.map(String.init) ?? ""
        ContainerTags.apply(key: description, value: value, to: &tags)
    }

    static func fraction(_ text: String?) -> (Int?, Int?) {
        guard let parts = text?.split(separator: "/") else { return (nil, nil) }
        return (parts.first.flatMap { Int($0.trimmingSpaces()) },
                parts.count > 1 ? Int(parts[1].trimmingSpaces()) : nil)
    }

    static func picture(_ c: [UInt8], version: UInt8) -> TrackTags.Picture? {
        guard let encoding = c.first else { return nil }
        var i = 1
        let mime: String
        if version == 2 {  // a three-letter image format
            guard c.count >= 4 else { return nil }
            let format = String(decoding: c[1..<4], as: UTF8.self).lowercased()
            mime = format == "png" ? "image/png" : "image/jpeg"
            i = 4
        } else {
            guard let end = c[i...].firstIndex(of: 0) else { return nil }
            mime = TextDecoding.latin1(Array(c[i..<end])).lowercased()
            i = end + 1
        }
        guard i < c.count else { return nil }
        let kind = c[i]
        i += 1
        let (description, next) = terminated(c, from: i, encoding: encoding)
        guard next <= c.count else { return nil }
        return TrackTags.Picture(mimeType: mime.isEmpty ? "image/jpeg" : mime, kind: kind, description: description,
                                 data: Array(c[next...]))
    }

    static func lyrics(_ c: [UInt8]) -> TrackTags.Lyrics? {
        guard c.count >= 4 else { return nil }
        let encoding = c[0]
        let language = TextDecoding.latin1(Array(c[1..<4]))
        let (description, next) = terminated(c, from: 4, encoding: encoding)
        guard next <= c.count else { return nil }
        let text = TextDecoding.decode(Array(c[next...]), id3Encoding: encoding)
        return TrackTags.Lyrics(language: language, description: description, text: text)
    }

    static func synced(_ c: [UInt8]) -> TrackTags.SyncedLyrics? {
        guard c.count >= 6 else { return nil }
        let encoding = c[0]
        let language = TextDecoding.latin1(Array(c[1..<4]))
        let format = c[4]  // 1: MPEG frames, 2: milliseconds
        guard c[5] == 1 || c[5] == 0 else { return nil }  // content type: 1 is lyrics; 0 "other" is common too
        let (description, start) = terminated(c, from: 6, encoding: encoding)
        var lines: [(milliseconds: Int, text: String)] = []
        var i = start
        while i < c.count {
            let (text, next) = terminated(c, from: i, encoding: encoding)
            guard next + 4 <= c.count else { break }
            let stamp = Int(be32(c, next))
            i = next + 4
            guard format == 2 else { continue }  // MPEG-frame stamps would need the frame rate
            lines.append((stamp, text))
        }
        guard !lines.isEmpty else { return nil }
        return TrackTags.SyncedLyrics(language: language, description: description, lines: lines)
    }

    /// A string ended by the encoding's terminator (one zero byte, or two aligned for
    /// UTF-16); returns it and the index after the terminator.
    static func terminated(_ c: [UInt8], from start: Int, encoding: UInt8) -> (String, Int) {
        guard start <= c.count else { return ("", c.count + 1) }
        let wide = encoding == 1 || encoding == 2
        var i = start
        while i < c.count {
            if wide {
                if i + 1 < c.count, c[i] == 0, c[i + 1] == 0 {
                    return (TextDecoding.decode(Array(c[start..<i]), id3Encoding: encoding), i + 2)
                }
                i += 2
            } else {
                if c[i] == 0 { return (TextDecoding.decode(Array(c[start..<i]), id3Encoding: encoding), i + 1) }
                i += 1
            }
        }
        return (TextDecoding.decode(Array(c[start...]), id3Encoding: encoding), c.count + 1)
    }

    // MARK: - Bytes

    static func syncsafe(_ b: ArraySlice<UInt8>) -> Int? {
        guard b.count == 4, b.allSatisfy({ $0 < 0x80 }) else { return nil }
        return b.reduce(0) { $0 << 7 | Int($1) }
    }

    static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard i >= 0, i + 4 <= b.count else { return 0 }
        return UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    /// Whether a frame header (or the padding, or the end) starts at `offset`.
    static func plausible(_ b: [UInt8], at offset: Int, idLength: Int) -> Bool {
        if offset == b.count { return true }
        guard offset + idLength <= b.count else { return false }
        let id = b[offset..<offset + idLength]
        return id.allSatisfy { $0 == 0 } || id.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// Undoes unsynchronisation: every 0xFF 0x00 becomes 0xFF.
    static func unsynchronised(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            out.append(b[i])
            if b[i] == 0xFF, i + 1 < b.count, b[i + 1] == 0 { i += 1 }
            i += 1
        }
        return out
    }
}
