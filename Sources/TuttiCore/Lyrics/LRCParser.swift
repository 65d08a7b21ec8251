/// Parses LRC lyrics, forgivingly.
///
/// Understands `[mm:ss.xx]`, `[mm:ss]`, `[mm:ss.xxx]` and `[mm:ss:xx]` time tags, several on
/// one line (`[00:21.10][00:45.10]Chorus`, one line each), metadata tags (`[ti:]`, `[ar:]`,
/// `[al:]`, `[au:]`, `[by:]`, `[length:]`, `[re:]`, `[ve:]`, kept), `[offset:±ms]` (applied:
/// positive shows lyrics sooner), enhanced word timing (`<mm:ss.xx>` before each word, a
/// trailing one ending the last), duet prefixes (`M:`, `F:`, `D:`) and empty timed lines
/// (they clear the display). Lines come out sorted by time. A line it cannot read is
/// skipped and counted; a file without a single timed line is plain, unsynced text.
public enum LRCParser {
    public static func parse(_ text: String, source: String? = nil) -> Lyrics {
        var lyrics = Lyrics(source: source)
        var untimed: [String] = []
        var offset = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = raw.trimmingSpaces()
            if line.isEmpty { continue }
            switch parseLine(Substring(line)) {
            case let .timed(times, body):
                lyrics.lines += times.map { time in makeLine(at: time, body: body, firstTime: times[0]) }
            case let .metadata(key, value):
                if key == "offset" {
                    // Within a day: beyond that it is garbage (and would overflow the times).
                    if let ms = Int(value.filter { $0 != " " }), abs(ms) <= 86_400_000 {
                        offset = ms
                    } else {
                        lyrics.skipped += 1
                    }
                } else {
                    lyrics.metadata[key] = value
                }
            case let .text(body):
                untimed.append(body)
            case .garbage:
                lyrics.skipped += 1
            }
        }
        if lyrics.lines.isEmpty {
            lyrics.plain = untimed
        } else {
            lyrics.skipped += untimed.count
            if offset != 0 { lyrics.lines = lyrics.lines.map { shifted($0, by: -offset) } }
            lyrics.lines = lyrics.lines.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        }
        return lyrics
    }

    // MARK: - Lines

    enum Parsed {
        case timed([Int], Substring)
        case metadata(String, String)
        case text(String)
        case garbage
    }

    static func parseLine(_ line: Substring) -> Parsed {
        guard line.hasPrefix("[") else { return .text(String(line)) }
        var rest = line
        var times: [Int] = []
        while rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return .garbage }
            let inside = rest[rest.index(after: rest.startIndex)..<close]
            if let time = timeTag(inside) {
                times.append(time)
                rest = rest[rest.index(after: close)...]
            } else if times.isEmpty, let colon = inside.firstIndex(of: ":") {
                let key = inside[..<colon].trimmingSpaces().lowercased()
                guard !key.isEmpty, key.allSatisfy({ $0.isLetter }), rest[rest.index(after: close)...].trimmingSpaces().isEmpty else {
                    return .garbage
                }
                return .metadata(key, inside[inside.index(after: colon)...].trimmingSpaces())
            } else {
                return times.isEmpty ? .garbage : .timed(times, rest)  // text that happens to start with "["
            }
        }
        return times.isEmpty ? .garbage : .timed(times, rest)
    }

    /// `mm:ss`, `mm:ss.x`, `mm:ss.xx`, `mm:ss.xxx` or `mm:ss:xx`, in milliseconds.
    static func timeTag<S: StringProtocol>(_ tag: S) -> Int? {
        let text = Substring(tag)
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        guard let minutes = number(parts[0], maxDigits: 3) else { return nil }
        var secondsPart = parts[1]
        var fraction: Substring?
        if parts.count == 3 {
            fraction = parts[2]
        } else if let dot = secondsPart.firstIndex(where: { $0 == "." || $0 == "," }) {
            fraction = secondsPart[secondsPart.index(after: dot)...]
            secondsPart = secondsPart[..<dot]
        }
        guard let seconds = number(secondsPart, maxDigits: 2), seconds < 60 else { return nil }
        var ms = 0
        if let fraction {
            guard let value = number(fraction, maxDigits: 3) else { return nil }
            ms = fraction.count == 1 ? value * 100 : fraction.count == 2 ? value * 10 : value
        }
        return (minutes * 60 + seconds) * 1000 + ms
    }

    private static func number<S: StringProtocol>(_ s: S, maxDigits: Int) -> Int? {
        let digits = s.trimmingSpaces()
        guard !digits.isEmpty, digits.count <= maxDigits, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    // MARK: - Words

    /// A line's text, words and voice; word times of a repeated line move with it.
    static func makeLine(at time: Int, body: Substring, firstTime: Int) -> LyricLine {
        var (text, words) = self.words(body)
        var voice: LyricVoice?
        if let v = duetVoice(text) {
            voice = v
            text = String(text.dropFirst(2)).trimmingSpaces()
            if var first = words.first, duetVoice(first.text) != nil {
                first.text = String(first.text.dropFirst(2)).trimmingSpaces()
                words[0] = first
                if first.text.isEmpty { words.removeFirst() }
            }
        }
        let shift = time - firstTime
        return LyricLine(time: time, text: text,
                         words: words.map { LyricWord(time: $0.time + shift, end: $0.end.map { $0 + shift }, text: $0.text) },
                         voice: voice)
    }

    static func duetVoice(_ text: String) -> LyricVoice? {
        guard text.count >= 2, text.dropFirst().first == ":", let v = LyricVoice(rawValue: String(text.prefix(1))) else { return nil }
        return v
    }

    /// Splits `<mm:ss.xx>word <mm:ss.xx>word<mm:ss.xx>` into timed words; plain text has none.
    static func words(_ body: Substring) -> (String, [LyricWord]) {
        guard body.contains("<") else { return (body.trimmingSpaces(), []) }
        var words: [LyricWord] = []
        var leading = ""
        var rest = body
        while let open = rest.firstIndex(of: "<") {
            let before = rest[..<open]
            if words.isEmpty { leading += before } else { words[words.count - 1].text += before }
            guard let close = rest[open...].firstIndex(of: ">"), let time = timeTag(rest[rest.index(after: open)..<close]) else {
                // Not a time tag after all: keep it as text.
                if words.isEmpty { leading += "<" } else { words[words.count - 1].text += "<" }
                rest = rest[rest.index(after: open)...]
                continue
            }
            if !words.isEmpty { words[words.count - 1].end = time }
            words.append(LyricWord(time: time, text: ""))
            rest = rest[rest.index(after: close)...]
        }
        if words.isEmpty { return ((leading + rest).trimmingSpaces(), []) }
        words[words.count - 1].text += rest
        // A trailing tag with nothing after it only ends the word before it.
        if words.count > 1, words.last!.text.trimmingSpaces().isEmpty { words.removeLast() }
        let text = (leading + words.map(\.text).joined()).trimmingSpaces()
        words = words.map { LyricWord(time: $0.time, end: $0.end, text: $0.text.trimmingSpaces()) }
            .filter { !$0.text.isEmpty }
        return (text, words)
    }

    static func shifted(_ line: LyricLine, by delta: Int) -> LyricLine {
        var line = line
        line.time = max(0, line.time + delta)
        line.words = line.words.map { LyricWord(time: max(0, $0.time + delta), end: $0.end.map { max(0, $0 + delta) }, text: $0.text) }
        return line
    }
}
