/// What a lyric screen shows, laid out on a grid of `width` × `height` character cells:
/// the title on top, the current line in the middle with its sung part marked, the lines
/// around it dimmed, a progress bar at the bottom; or a "no lyrics" card. Pure, so that the
/// terminal screen only turns it into escape codes.
public struct LyricLayout: Equatable, Sendable {
    public enum Style: Equatable, Sendable {
        case title, status, current, dim, card, progress
    }

    /// A run of text at a row and column; `sung` characters of it (from its start) are marked.
    public struct Text: Equatable, Sendable {
        public var row: Int
        public var column: Int
        public var text: String
        public var style: Style
        public var sung: Int = 0
    }

    public var texts: [Text] = []
    /// The index of the current line (nil before the first, or without timed lyrics).
    public var currentLine: Int?

    public struct Input: Sendable {
        public var title: String?
        public var artist: String?
        public var status: String
        public var lyrics: Lyrics?
        public var position: LyricPosition
        /// Seconds, for the progress bar.
        public var elapsed: Double
        public var duration: Double?

        public init(title: String?, artist: String?, status: String, lyrics: Lyrics?, position: LyricPosition,
                    elapsed: Double, duration: Double?) {
            self.title = title
            self.artist = artist
            self.status = status
            self.lyrics = lyrics
            self.position = position
            self.elapsed = elapsed
            self.duration = duration
        }
    }

    public init(_ input: Input, width: Int, height: Int) {
        let width = max(20, width), height = max(8, height)
        let heading = [input.title, input.artist].compactMap { $0 }.joined(separator: " — ")
        texts.append(Text(row: 0, column: 0, text: Self.fit(heading.isEmpty ? "tutti" : heading, width - input.status.count - 2), style: .title))
        texts.append(Text(row: 0, column: max(0, width - input.status.count), text: input.status, style: .status))
        let middle = height / 2
        if let lyrics = input.lyrics, lyrics.isSynced {
            currentLine = input.position.line
            let current = input.position.line
            // The lines around the current one, dimmed: as many as fit, two rows apart.
            for offset in stride(from: -((middle - 2) / 2), through: (height - 3 - middle) / 2, by: 1) where offset != 0 {
                let index = (current ?? -1) + offset
                guard index >= 0, index < lyrics.lines.count else { continue }
                let row = middle + offset * 2
                guard row >= 2, row <= height - 3 else { continue }
                centred(lyrics.lines[index].text, row: row, width: width, style: .dim)
            }
            if let current {
                let line = lyrics.lines[current]
                centred(line.text.isEmpty ? "♪" : line.text, row: middle, width: width, style: .current,
                        sung: Self.sungCharacters(line.text, input.position))
            } else if let first = lyrics.lines.first {
                centred(first.text, row: middle + 2, width: width, style: .dim)
            }
        } else if let lyrics = input.lyrics, !lyrics.plain.isEmpty {
            centred("(lyrics without timing)", row: 2, width: width, style: .dim)
            for (i, line) in lyrics.plain.prefix(max(0, height - 7)).enumerated() {
                centred(line, row: 4 + i, width: width, style: .dim)
            }
        } else {
            centred("♪  No lyrics for this track  ♪", row: middle, width: width, style: .card)
        }
        texts.append(progress(input, row: height - 1, width: width))
    }

    /// How many characters of `text` are sung at `position`: every finished word, and the
    /// current one in proportion.
    static func sungCharacters(_ text: String, _ position: LyricPosition) -> Int {
        guard let word = position.word, !position.words.isEmpty else { return 0 }
        var count = 0
        var searchFrom = text.startIndex
        for (i, w) in position.words.enumerated() where i <= word {
            guard let range = text[searchFrom...].firstRange(of: w) else { break }
            let start = text.distance(from: text.startIndex, to: range.lowerBound)
            if i < word {
                count = start + w.count
            } else {
                count = start + Int((Double(w.count) * position.wordProgress).rounded())
            }
            searchFrom = range.upperBound
        }
        return min(count, text.count)
    }

    private mutating func centred(_ text: String, row: Int, width: Int, style: Style, sung: Int = 0) {
        let shown = Self.fit(text, width)
        let clipped = shown.count < text.count
        texts.append(Text(row: row, column: max(0, (width - shown.count) / 2), text: shown, style: style,
                          sung: min(sung, clipped ? shown.count - 1 : shown.count)))
    }

    private func progress(_ input: Input, row: Int, width: Int) -> Text {
        let clock = { (s: Double) -> String in
            let seconds = Int(Swift.max(0, s))
            return "\(seconds / 60):\((seconds % 60).zeroPadded(2))"
        }
        let label = " \(clock(input.elapsed))" + (input.duration.map { " / \(clock($0))" } ?? "")
        let barWidth = max(0, width - label.count - 1)
        let fraction = input.duration.map { $0 > 0 ? min(1, max(0, input.elapsed / $0)) : 0 } ?? 0
        let filled = Int((Double(barWidth) * fraction).rounded())
        return Text(row: row, column: 0, text: String(repeating: "━", count: filled) + String(repeating: "─", count: barWidth - filled) + label,
                    style: .progress, sung: filled)
    }

    /// `text` cut to `width` characters, with an ellipsis when it had to be cut.
    static func fit(_ text: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        return text.count <= width ? text : String(text.prefix(max(0, width - 1))) + "…"
    }
}
