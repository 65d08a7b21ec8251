/// A song's lyrics: timed lines (each perhaps with timed words), or plain text when the
/// source has no timing. Times are media positions in milliseconds from the track's start,
/// with the file's `[offset:]` already applied.
public struct Lyrics: Codable, Equatable, Sendable {
    /// The file's metadata tags, by name: ti, ar, al, au, by, length, re, ve (and any other).
    public var metadata: [String: String]
    /// The timed lines, sorted by time (stable for equal times). Empty for plain lyrics.
    public var lines: [LyricLine]
    /// Lyrics without timing, one entry per line, when there were no timed lines.
    public var plain: [String]
    /// Lines that could not be understood and were skipped.
    public var skipped: Int
    /// Where the lyrics came from (a file path, "ID3 SYLT", "ID3 USLT").
    public var source: String?

    public init(metadata: [String: String] = [:], lines: [LyricLine] = [], plain: [String] = [], skipped: Int = 0,
                source: String? = nil) {
        self.metadata = metadata
        self.lines = lines
        self.plain = plain
        self.skipped = skipped
        self.source = source
    }

    public var isSynced: Bool { !lines.isEmpty }
    public var isEmpty: Bool { lines.isEmpty && plain.allSatisfy { $0.trimmingSpaces().isEmpty } }
}

/// One timed line. An empty `text` clears the display (an instrumental break).
public struct LyricLine: Codable, Equatable, Sendable {
    public var time: Int
    public var text: String
    /// Word timing (enhanced LRC), when the file has it.
    public var words: [LyricWord]
    /// The singer, from a duet prefix (`M:`, `F:`, `D:`).
    public var voice: LyricVoice?

    public init(time: Int, text: String, words: [LyricWord] = [], voice: LyricVoice? = nil) {
        self.time = time
        self.text = text
        self.words = words
        self.voice = voice
    }
}

/// A sung word: from `time` until `end` (the next word's time, or the line's closing tag).
public struct LyricWord: Codable, Equatable, Sendable {
    public var time: Int
    public var end: Int?
    public var text: String

    public init(time: Int, end: Int? = nil, text: String) {
        self.time = time
        self.end = end
        self.text = text
    }
}

/// Who sings a line of a duet.
public enum LyricVoice: String, Codable, Sendable {
    case male = "M"
    case female = "F"
    case duet = "D"
}
