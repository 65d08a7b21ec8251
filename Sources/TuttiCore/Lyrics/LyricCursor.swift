/// Where in the lyrics a media position is: the line sung (or the last one, until the next),
/// how far through it, and the word being sung and how far through that.
public struct LyricPosition: Equatable, Sendable {
    /// The current line, nil before the first.
    public var line: Int?
    /// 0 to 1 through the current line.
    public var lineProgress: Double
    /// The current word of the line, when the line has word timing or words at all.
    public var word: Int?
    /// 0 to 1 through the current word.
    public var wordProgress: Double
    /// The words of the current line, as `word` counts them.
    public var words: [String]

    public static let none = LyricPosition(line: nil, lineProgress: 0, word: nil, wordProgress: 0, words: [])
}

/// Which line and word of `lyrics` is sung at a media position. Pure: the caller works out
/// the position from the shared clock (`(now − trackOrigin) × rate`), so pauses and seeks
/// need nothing here.
public struct LyricCursor: Sendable {
    public let lyrics: Lyrics
    /// How long a line with nothing after it lasts, at most (milliseconds).
    public var lastLineLength = 5_000

    public init(lyrics: Lyrics) {
        self.lyrics = lyrics
    }

    public func position(atMilliseconds t: Int) -> LyricPosition {
        let lines = lyrics.lines
        guard let index = lastIndex(atOrBefore: t) else { return .none }
        let line = lines[index]
        let end = lineEnd(index)
        let lineProgress = end > line.time ? min(1, max(0, Double(t - line.time) / Double(end - line.time))) : 1
        if !line.words.isEmpty {
            let texts = line.words.map(\.text)
            guard let w = line.words.lastIndex(where: { $0.time <= t }) else {
                return LyricPosition(line: index, lineProgress: lineProgress, word: nil, wordProgress: 0, words: texts)
            }
            let word = line.words[w]
            let wordEnd = word.end ?? (w + 1 < line.words.count ? line.words[w + 1].time : end)
            let progress = wordEnd > word.time ? min(1, max(0, Double(t - word.time) / Double(wordEnd - word.time))) : 1
            return LyricPosition(line: index, lineProgress: lineProgress, word: w, wordProgress: progress, words: texts)
        }
        // No word timing: the words fill in in proportion through the line, by their length.
        let texts = line.text.split(separator: " ").map(String.init)
        guard !texts.isEmpty else {
            return LyricPosition(line: index, lineProgress: lineProgress, word: nil, wordProgress: 0, words: [])
        }
        let total = Double(texts.reduce(0) { $0 + $1.count + 1 })
        var passed = lineProgress * total
        for (w, text) in texts.enumerated() {
            let length = Double(text.count + 1)
            if passed < length || w == texts.count - 1 {
                return LyricPosition(line: index, lineProgress: lineProgress, word: w, wordProgress: min(1, passed / length), words: texts)
            }
            passed -= length
        }
        return LyricPosition(line: index, lineProgress: lineProgress, word: nil, wordProgress: 0, words: texts)
    }

    /// When line `index` stops being current: the next line's time, or its last word's end,
    /// or a few seconds.
    public func lineEnd(_ index: Int) -> Int {
        let lines = lyrics.lines
        if index + 1 < lines.count { return lines[index + 1].time }
        let line = lines[index]
        if let last = line.words.last { return last.end ?? last.time + 1_000 }
        return line.time + lastLineLength
    }

    /// The last line starting at or before `t` (binary search).
    private func lastIndex(atOrBefore t: Int) -> Int? {
        var low = 0, high = lyrics.lines.count
        while low < high {
            let mid = (low + high) / 2
            if lyrics.lines[mid].time <= t { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : low - 1
    }
}
