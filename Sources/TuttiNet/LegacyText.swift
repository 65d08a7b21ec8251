import Glibc

/// Decodes text in legacy encodings (GB18030, Big5, ...) with the C library's iconv: what
/// Foundation on Linux cannot. Used for lyric files; `LyricsText` decides when.
public enum LegacyText {
    /// The bytes as text, or nil when they are not valid in `encoding` (or it is unknown).
    public static func decode(_ bytes: [UInt8], from encoding: String) -> String? {
        let converter = iconv_open("UTF-8", encoding)
        guard let converter, converter != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(converter) }
        var input = bytes.map { CChar(bitPattern: $0) }
        var output = [CChar](repeating: 0, count: bytes.count * 4 + 16)
        let ok = input.withUnsafeMutableBufferPointer { inBuffer -> Bool in
            output.withUnsafeMutableBufferPointer { outBuffer -> Bool in
                var inPointer: UnsafeMutablePointer<CChar>? = inBuffer.baseAddress
                var inLeft = inBuffer.count
                var outPointer: UnsafeMutablePointer<CChar>? = outBuffer.baseAddress
                var outLeft = outBuffer.count
                let rc = iconv(converter, &inPointer, &inLeft, &outPointer, &outLeft)
                guard rc != -1, inLeft == 0 else { return false }
                let written = outBuffer.count - outLeft
                outBuffer[written] = 0
                return true
            }
        }
        guard ok else { return nil }
        return output.withUnsafeBufferPointer { String(validatingCString: $0.baseAddress!) }
    }
}
