import Foundation
import Testing
import TuttiTesting
@testable import TuttiCore

@Suite("LRC lyrics")
struct LRCParserTests {
    @Test(arguments: [
        ("01:02.34", 62_340), ("01:02", 62_000), ("01:02.345", 62_345), ("01:02:34", 62_340), ("1:02.3", 62_300),
        ("100:00.00", 6_000_000), ("00:59.99", 59_990), ("00:00,50", 500),
    ])
    func timeTagForms(tag: String, ms: Int) {
        #expect(LRCParser.timeTag(tag) == ms)
    }

    @Test(arguments: ["01:60.00", "ab:cd", "1:2:3:4", "1234:00", "00:0x.00", "", ":", "00:01.0000"])
    func badTimeTags(tag: String) {
        #expect(LRCParser.timeTag(tag) == nil)
    }

    @Test func metadataOffsetRepeatsAndOrder() {
        let text = """
        [ti:Tutti]
        [ar:The tutti band]
        [al:tutti demo]
        [au:Someone]
        [by:me]
        [length: 03:25]
        [re:tool]
        [ve:1.0]
        [offset:+500]
        [00:45.10]Second
        [00:21.10][01:05.00]Chorus
        [00:10.00]First
        """
        let lyrics = LRCParser.parse(text)
        #expect(lyrics.metadata["ti"] == "Tutti" && lyrics.metadata["ar"] == "The tutti band" && lyrics.metadata["length"] == "03:25")
        #expect(lyrics.metadata.keys.sorted() == ["al", "ar", "au", "by", "length", "re", "ti", "ve"])
        // Sorted, the repeated line expanded, everything 500 ms sooner.
        #expect(lyrics.lines.map(\.time) == [9_500, 20_600, 44_600, 64_500])
        #expect(lyrics.lines.map(\.text) == ["First", "Chorus", "Second", "Chorus"])
        #expect(lyrics.skipped == 0 && lyrics.isSynced)
    }

    @Test func negativeOffsetShowsLater() {
        let lyrics = LRCParser.parse("[offset:-250]\n[00:01.00]a")
        #expect(lyrics.lines.first?.time == 1_250)
    }

    @Test func absurdOffsetIsSkippedNotACrash() {
        let lyrics = LRCParser.parse("[offset:-9223372036854775807]\n[00:01.00]a")
        #expect(lyrics.lines.first?.time == 1_000)
        #expect(lyrics.skipped == 1)
    }

    @Test func enhancedWordTiming() throws {
        let lyrics = LRCParser.parse("[00:02.00]<00:02.00>Every <00:02.52>room <00:03.07>sings<00:04.57>")
        let line = try #require(lyrics.lines.first)
        #expect(line.text == "Every room sings")
        #expect(line.words == [LyricWord(time: 2_000, end: 2_520, text: "Every"), LyricWord(time: 2_520, end: 3_070, text: "room"),
                               LyricWord(time: 3_070, end: 4_570, text: "sings")])
    }

    @Test func repeatedEnhancedLinesMoveTheirWords() {
        let lyrics = LRCParser.parse("[00:10.00][00:20.00]<00:10.00>la <00:10.50>la<00:11.00>")
        #expect(lyrics.lines.map { $0.words.map(\.time) } == [[10_000, 10_500], [20_000, 20_500]])
    }

    @Test func duetVoicesAndClearingLines() {
        let lyrics = LRCParser.parse("[00:01.00]M: I sing\n[00:02.00]F:You sing\n[00:03.00]D: We sing\n[00:04.00]\n[00:05.00]Mi: not a voice")
        #expect(lyrics.lines.map(\.voice) == [.male, .female, .duet, nil, nil])
        #expect(lyrics.lines.map(\.text) == ["I sing", "You sing", "We sing", "", "Mi: not a voice"])
    }

    @Test func garbageIsSkippedAndCounted() {
        let lyrics = LRCParser.parse("[00:01.00]ok\n[00:0x.00]bad time\n[unclosed\nstray text\n[ti:Title]extra\n[00:02.00]<oops>fine")
        #expect(lyrics.lines.map(\.text) == ["ok", "<oops>fine"])
        #expect(lyrics.skipped == 4)
    }

    @Test func noTimedLinesIsPlainText() {
        let lyrics = LRCParser.parse("[ar:Someone]\nFirst line\n\nSecond line\r\n")
        #expect(!lyrics.isSynced && lyrics.plain == ["First line", "Second line"])
        #expect(lyrics.metadata["ar"] == "Someone")
    }

    /// Random bytes, random damage to a good file: never a trap.
    @Test func fuzzedInputNeverCrashes() {
        var random = SeededRandom(seed: 41)
        let good = Array("[ti:x]\n[00:01.00]<00:01.00>a <00:01.50>b<00:02.00>\n[00:03.00][00:04.00]M: c\n".utf8)
        for _ in 0..<4_000 {
            var bytes = good
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...127, using: &random)
            }
            _ = LRCParser.parse(String(decoding: bytes, as: UTF8.self))
            let noise = (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = LRCParser.parse(String(decoding: noise, as: UTF8.self))
        }
    }

    // MARK: - Encodings

    @Test func utf8WithAndWithoutMarkAndUTF16() {
        let text = "[00:01.00]Café — 咖啡"
        let none: LyricsText.LegacyDecoder = { _, _ in nil }
        #expect(LyricsText.decode(Array(text.utf8), legacy: none).text == text)
        #expect(LyricsText.decode([0xEF, 0xBB, 0xBF] + Array(text.utf8), legacy: none).text == text)
        let le: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let be: [UInt8] = [0xFE, 0xFF] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        #expect(LyricsText.decode(le, legacy: none) == (text, "UTF-16"))
        #expect(LyricsText.decode(be, legacy: none).text == text)
        #expect(LyricsText.decode([0x61, 0xE9], legacy: none) == ("aé", "ISO-8859-1"), "neither UTF-8 nor legacy: Latin-1")
    }

    /// With both legacy decodings succeeding, the more plausible script wins.
    @Test func theMorePlausibleLegacyDecodingWins() {
        let simplified = "[00:01.00]我们的爱这么远"
        let traditional = "[00:01.00]我們的愛這麼遠"
        let fake: (String, String) -> LyricsText.LegacyDecoder = { gb, big5 in { _, encoding in encoding == "BIG5" ? big5 : gb } }
        #expect(LyricsText.decode([0xB0], legacy: fake(simplified, "[00:01.00]扂蠅腔")).encoding == "GB18030")
        #expect(LyricsText.decode([0xB0], legacy: fake("[00:01.00]扂鍔腔", traditional)).encoding == "BIG5")
    }

    // MARK: - The cursor

    static let demo = LRCParser.parse("""
    [00:02.00]<00:02.00>Every <00:02.52>room <00:03.07>sings<00:04.57>
    [00:06.00]Plain words here
    [00:09.00]
    [00:10.00]Last line
    """)

    @Test func lineAndWordAtEachMoment() {
        let cursor = LyricCursor(lyrics: Self.demo)
        #expect(cursor.position(atMilliseconds: 1_000) == .none)
        let p = cursor.position(atMilliseconds: 2_800)
        #expect(p.line == 0 && p.word == 1 && p.words == ["Every", "room", "sings"])
        #expect(abs(p.wordProgress - 280.0 / 550.0) < 1e-9)
        #expect(abs(p.lineProgress - 0.2) < 1e-9)
        #expect(cursor.position(atMilliseconds: 4_600).word == 2 && cursor.position(atMilliseconds: 4_600).wordProgress == 1)
        // No word timing: words fill in in proportion through the line (3 s).
        let q = cursor.position(atMilliseconds: 7_500)
        #expect(q.line == 1 && q.lineProgress == 0.5 && q.word == 1)
        #expect(cursor.position(atMilliseconds: 9_500).line == 2, "an empty line clears the display")
        #expect(cursor.position(atMilliseconds: 14_000).lineProgress == 0.8)
        #expect(cursor.position(atMilliseconds: 99_000).line == 3)
    }

    /// A position computed from the shared clock: a pause freezes it, a seek moves it, an
    /// offset shifts everything.
    @Test func acrossPausesSeeksAndOffsets() {
        let cursor = LyricCursor(lyrics: Self.demo)
        let origin: Int64 = 5_000_000_000  // coordinator time of media position 0
        func at(_ now: Int64, origin: Int64) -> LyricPosition { cursor.position(atMilliseconds: Int((now - origin) / 1_000_000)) }
        #expect(at(origin + 2_600_000_000, origin: origin).word == 1)
        // Paused at 2.6 s for an hour: the position stays.
        let paused = 2_600
        #expect(cursor.position(atMilliseconds: paused).word == 1)
        // Resumed: a new origin, an hour later.
        let resumed = origin + 3_600_000_000_000
        #expect(at(resumed + 2_600_000_000 + 1_000_000_000, origin: resumed).line == 0)
        // A seek to 10 s: the origin moves back by 10 s from now.
        let now: Int64 = 9_000_000_000_000
        #expect(at(now, origin: now - 10_000_000_000).line == 3)
        let shifted = LyricCursor(lyrics: LRCParser.parse("[offset:1000]\n[00:05.00]x"))
        #expect(shifted.position(atMilliseconds: 4_000).line == 0)
    }
}

@Suite("Lyric screen layout")
struct LyricLayoutTests {
    static func input(at ms: Int, lyrics: Lyrics? = LRCParserTests.demo) -> LyricLayout.Input {
        LyricLayout.Input(title: "Tutti", artist: "The tutti band", status: "▶ Kitchen", lyrics: lyrics,
                          position: lyrics.map { LyricCursor(lyrics: $0).position(atMilliseconds: ms) } ?? .none,
                          elapsed: Double(ms) / 1000, duration: 32)
    }

    @Test func currentLineInTheMiddleWithItsSungPartAndTheOthersDimmed() throws {
        let layout = LyricLayout(Self.input(at: 2_800), width: 60, height: 20)
        #expect(layout.currentLine == 0)
        let current = try #require(layout.texts.first { $0.style == .current })
        #expect(current.row == 10 && current.text == "Every room sings")
        #expect(current.column == (60 - 16) / 2)
        #expect(current.sung == 6 + 2, "\"Every \" sung and half of \"room\"")
        #expect(layout.texts.contains { $0.style == .dim && $0.text == "Plain words here" && $0.row == 12 })
        #expect(layout.texts.first { $0.style == .title }?.text == "Tutti — The tutti band")
        let bar = try #require(layout.texts.first { $0.style == .progress })
        #expect(bar.row == 19 && bar.text.hasSuffix(" 0:02 / 0:32"))
    }

    @Test func noLyricsPlainLyricsAndNarrowScreens() {
        #expect(LyricLayout(Self.input(at: 0, lyrics: nil), width: 40, height: 10).texts.contains { $0.style == .card })
        let plain = LyricLayout(Self.input(at: 0, lyrics: LRCParser.parse("one\ntwo")), width: 40, height: 12)
        #expect(plain.texts.filter { $0.style == .dim }.map(\.text) == ["(lyrics without timing)", "one", "two"])
        let narrow = LyricLayout(Self.input(at: 2_800), width: 10, height: 4)
        #expect(narrow.texts.allSatisfy { $0.column + $0.text.count <= 20 && $0.row < 8 }, "clamped to 20 × 8 at least")
        #expect(LyricLayout.fit("Every room sings", 8) == "Every r…")
    }
}
