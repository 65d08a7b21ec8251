import Foundation
import Testing
import TuttiCore
@testable import TuttiCodecs
import TuttiNet

/// Lyric files in the legacy Chinese encodings, made with the system's iconv, read back.
@Suite("Legacy text encodings")
struct LegacyTextTests {
    static func encode(_ text: String, to encoding: String) throws -> [UInt8] {
        let input = NSTemporaryDirectory() + "tutti-iconv-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let output = input + ".out"
        defer { unlink(input); unlink(output) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: input))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/iconv")
        p.arguments = ["-f", "UTF-8", "-t", encoding, input, "-o", output]
        try p.run()
        p.waitUntilExit()
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
    }

    static let simplified = "[ti:月亮代表我的心]\n[00:12.00]你问我爱你有多深\n[00:18.50]我爱你有几分\n[00:24.00]这么远的梦\n"
    static let traditional = "[ti:月亮代表我的心]\n[00:12.00]你問我愛你有多深\n[00:18.50]我愛你有幾分\n[00:24.00]這麼遠的夢\n"

    @Test(arguments: [("GB18030", simplified), ("GBK", simplified), ("GB2312", simplified), ("BIG5", traditional)])
    func detectsAndDecodes(encoding: String, text: String) throws {
        let bytes = try Self.encode(text, to: encoding)
        #expect(String(validating: bytes, as: UTF8.self) == nil, "the fixture is not UTF-8")
        let (decoded, detected) = LyricsText.decode(bytes, legacy: LegacyText.decode)
        #expect(decoded == text)
        #expect(detected == (encoding == "BIG5" ? "BIG5" : "GB18030"))
        let lyrics = LRCParser.parse(decoded)
        #expect(lyrics.metadata["ti"] == "月亮代表我的心" && lyrics.lines.count == 3)
    }

    @Test func invalidBytesAreNil() {
        #expect(LegacyText.decode([0xFF, 0xFF, 0xFF], from: "BIG5") == nil)
        #expect(LegacyText.decode([0x61], from: "NO-SUCH-ENCODING") == nil)
        #expect(LegacyText.decode(Array("abc".utf8), from: "GB18030") == "abc")
    }
}
