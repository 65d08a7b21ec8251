/// Text in the encodings tags and lyric files use, decoded in Swift: ISO-8859-1, UTF-8
/// (with or without a byte-order mark) and UTF-16 (with a mark, or big-endian). Malformed
/// sequences become U+FFFD; nothing traps.
public enum TextDecoding {
    /// ID3v2 text encodings: 0 ISO-8859-1, 1 UTF-16 with BOM, 2 UTF-16BE, 3 UTF-8.
    public static func decode(_ bytes: [UInt8], id3Encoding: UInt8) -> String {
        switch id3Encoding {
        case 1: utf16(bytes, bigEndianByDefault: false)
        case 2: utf16(bytes, bigEndianByDefault: true)
        case 3: utf8(bytes)
        default: latin1(bytes)
        }
    }

    public static func latin1(_ bytes: [UInt8]) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// UTF-8, dropping a leading byte-order mark.
    public static func utf8(_ bytes: [UInt8]) -> String {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        return String(decoding: body, as: UTF8.self)
    }

    /// UTF-16, in the order its byte-order mark says (or the default).
    public static func utf16(_ bytes: [UInt8], bigEndianByDefault: Bool) -> String {
        var big = bigEndianByDefault
        var start = 0
        if bytes.count >= 2 {
            if bytes[0] == 0xFE && bytes[1] == 0xFF { big = true; start = 2 }
            else if bytes[0] == 0xFF && bytes[1] == 0xFE { big = false; start = 2 }
        }
        var units: [UInt16] = []
        units.reserveCapacity((bytes.count - start) / 2)
        var i = start
        while i + 1 < bytes.count {
            units.append(big ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i]))
            i += 2
        }
        return String(decoding: units, as: UTF16.self)
    }
}
