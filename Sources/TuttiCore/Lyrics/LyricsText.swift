/// Turns a lyric file's bytes into text, whatever its encoding: UTF-8 (with or without a
/// byte-order mark), UTF-16 with a mark, or, for bytes that are not UTF-8, the legacy Chinese
/// encodings GB18030 (GBK, GB2312) and Big5, which lyric files often use.
///
/// The legacy decoding itself (iconv) is injected, so that this stays pure: `legacy` decodes
/// bytes from a named encoding, or returns nil when they are not valid in it. When both
/// decode, the one whose text is full of the most common Chinese characters (in the script
/// each encoding serves) wins.
public enum LyricsText {
    public typealias LegacyDecoder = (_ bytes: [UInt8], _ encoding: String) -> String?

    public static let legacyEncodings = ["GB18030", "BIG5"]

    public static func decode(_ bytes: [UInt8], legacy: LegacyDecoder) -> (text: String, encoding: String) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return (TextDecoding.utf8(bytes), "UTF-8") }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            return (TextDecoding.utf16(bytes, bigEndianByDefault: false), "UTF-16")
        }
        if let text = String(validating: bytes, as: UTF8.self) { return (text, "UTF-8") }
        var best: (text: String, encoding: String, score: Int)?
        for encoding in legacyEncodings {
            guard let text = legacy(bytes, encoding) else { continue }
            let score = Self.score(text, encoding: encoding)
            if best == nil || score > best!.score { best = (text, encoding, score) }
        }
        if let best { return (best.text, best.encoding) }
        return (TextDecoding.latin1(bytes), "ISO-8859-1")
    }

    /// How Chinese the text looks in the script `encoding` serves: common characters count,
    /// characters from the far corners of the code space count against.
    static func score(_ text: String, encoding: String) -> Int {
        let script = encoding == "BIG5" ? traditional : simplified
        var score = 0
        for scalar in text.unicodeScalars {
            if shared.contains(scalar) { score += 2 }
            if script.contains(scalar) { score += 3 }
            let v = scalar.value
            if (0xE000...0xF8FF).contains(v) || v == 0xFFFD || (0x3400...0x4DBF).contains(v) || v > 0x20000 { score -= 3 }
        }
        return score
    }

    /// Very common in both scripts.
    static let shared = Set("的一是不了人我在有他你她们大小天心中上下好爱想去走看你也就都要会可以没有还到说这那里".unicodeScalars)
    /// Common simplified characters that Big5 text decoded as GB18030 rarely produces.
    static let simplified = Set("这们个来为国说时会对过还发样没经问么长见电开关东门马风鸟书头车间听话语让谁爱梦泪忆恋离别远飞轻声".unicodeScalars)
    /// Their traditional forms.
    static let traditional = Set("這們個來為國說時會對過還發樣沒經問麼長見電開關東門馬風鳥書頭車間聽話語讓誰愛夢淚憶戀離別遠飛輕聲".unicodeScalars)
}
