import Foundation
import TuttiAPI
import TuttiCore
import TuttiNet

/// One moment of the lyric screen: what to draw, and when the next line starts.
struct LyricFrame {
    var layout: LyricLayout
    var track: Int?
    /// `.some(index)` while timed lyrics show (index nil before the first line); nil otherwise.
    var layoutLine: Int??
    var lineText: String?
    var coordinatorNow: Int64?
    /// Nanoseconds until the next line starts, while playing.
    var untilNextLine: Int64?
    var width: Int
    var height: Int
}

extension LyricScreen {
    /// The screen at this moment, from the shared clock and the last events.
    func snapshot() -> LyricFrame {
        let (width, height) = TerminalRenderer.size()
        return lock.withLock {
            let local = LocalTime(nanoseconds: clock.nanosecondsNow())
            let coordinatorNow = estimator.estimate?.coordinatorTime(at: local).nanoseconds
            guard let np = nowPlaying else {
                let status = connected ? "waiting for the house" : "connecting to \(configuration.server.host):\(configuration.server.port)…"
                let input = LyricLayout.Input(title: nil, artist: nil, status: status, lyrics: nil, position: .none, elapsed: 0, duration: nil)
                return LyricFrame(layout: LyricLayout(input, width: width, height: height), track: nil, layoutLine: nil,
                                  coordinatorNow: coordinatorNow, width: width, height: height)
            }
            // Where the rooms are in the track: from the shared clock while it plays.
            var ms = Int(np.elapsed * 1000)
            let moving = np.state == .playing || np.state == .loading
            if moving, let origin = np.trackOrigin, let now = coordinatorNow {
                let heard = Int((now + configuration.displayDelay - origin) / 1_000_000)
                ms = np.state == .loading ? max(ms, heard) : heard
            }
            let cursor = lyrics.map { LyricCursor(lyrics: $0) }
            let position = cursor?.position(atMilliseconds: ms) ?? .none
            var untilNext: Int64?
            if moving, let lyrics, lyrics.isSynced, let origin = np.trackOrigin, let now = coordinatorNow {
                let next = (position.line ?? -1) + 1
                if next < lyrics.lines.count {
                    untilNext = origin + Int64(lyrics.lines[next].time) * 1_000_000 - configuration.displayDelay - now
                }
            }
            let input = LyricLayout.Input(title: np.title, artist: np.artist, status: status(np), lyrics: lyrics,
                                          position: position, elapsed: Double(ms) / 1000, duration: np.duration)
            let synced = lyrics?.isSynced == true
            return LyricFrame(layout: LyricLayout(input, width: width, height: height), track: np.itemID,
                              layoutLine: synced ? .some(position.line) : nil,
                              lineText: position.line.flatMap { lyrics?.lines[$0].text },
                              coordinatorNow: coordinatorNow, untilNextLine: untilNext, width: width, height: height)
        }
    }

    private func status(_ np: NowPlaying) -> String {
        var parts: [String] = []
        switch np.state {
        case .playing: parts.append("▶")
        case .paused: parts.append("⏸ paused")
        case .stopped: parts.append("■ stopped")
        case .loading: parts.append("…")
        case .buffering: parts.append("… buffering")
        case .failed: parts.append("✕ failed")
        }
        if let name = configuration.room {
            let room = rooms.first { $0.name.lowercased() == name.lowercased() || $0.key.lowercased() == name.lowercased() }
            parts.append(room?.name ?? name)
            if room?.report?.interrupted == true { parts.append("(interrupted)") }
            if room?.muted == true { parts.append("(muted)") }
        }
        if estimator.estimate == nil { parts.append("(clock…)") }
        return parts.joined(separator: " ")
    }
}

protocol LyricRenderer {
    func begin()
    func draw(_ frame: LyricFrame)
    func end()
}

/// Full screen, with ANSI escapes: the alternate screen, rows rewritten only when they change.
final class TerminalRenderer: LyricRenderer {
    private var shown: [String] = []

    static func size() -> (Int, Int) {
        System.terminalSize() ?? (80, 24)
    }

    func begin() { write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J") }
    func end() { write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l") }

    func draw(_ frame: LyricFrame) {
        var rows = [String](repeating: "", count: frame.height)
        for text in frame.layout.texts.sorted(by: { ($0.row, $0.column) < ($1.row, $1.column) }) where text.row < frame.height {
            rows[text.row] += "\u{1B}[\(text.row + 1);\(text.column + 1)H" + Self.styled(text)
        }
        if rows.count != shown.count { shown = []; write("\u{1B}[2J") }
        var out = ""
        for (i, row) in rows.enumerated() where i >= shown.count || shown[i] != row {
            out += "\u{1B}[\(i + 1);1H\u{1B}[2K" + row
        }
        shown = rows
        if !out.isEmpty { write(out + "\u{1B}[0m") }
    }

    static func styled(_ t: LyricLayout.Text) -> String {
        let reset = "\u{1B}[0m"
        switch t.style {
        case .title: return "\u{1B}[1m" + t.text + reset
        case .status: return "\u{1B}[36m" + t.text + reset
        case .dim: return "\u{1B}[2m" + t.text + reset
        case .card: return "\u{1B}[2;3m" + t.text + reset
        case .current:
            let sung = t.text.prefix(t.sung), rest = t.text.dropFirst(t.sung)
            return "\u{1B}[1;93m" + sung + "\u{1B}[0;1m" + rest + reset
        case .progress:
            return "\u{1B}[36m" + t.text.prefix(t.sung) + "\u{1B}[0;2m" + t.text.dropFirst(t.sung) + reset
        }
    }

    private func write(_ s: String) {
        FileHandle.standardOutput.write(Data(s.utf8))
    }
}

/// For logs and pipes: one line of text per lyric line, as it starts.
final class LineRenderer: LyricRenderer {
    private var lastTrack: Int??
    private var lastLine: Int??

    func begin() {}
    func end() {}

    func draw(_ frame: LyricFrame) {
        if frame.track != nil, lastTrack != .some(frame.track) {
            lastTrack = .some(frame.track)
            lastLine = nil
            if let title = frame.layout.texts.first(where: { $0.style == .title }) { emit("♪ \(title.text)") }
            if frame.layoutLine == nil, frame.track != nil { emit("  (no timed lyrics)") }
        }
        guard let line = frame.layoutLine, lastLine != .some(line) else { return }
        lastLine = .some(line)
        if let text = frame.lineText, !text.isEmpty { emit("  \(text)") }
    }

    private func emit(_ s: String) {
        FileHandle.standardOutput.write(Data((s + "\n").utf8))
    }
}

/// The screen's record of when each line appeared: coordinator time (ns) and line index.
final class LineLog {
    private let handle: FileHandle

    init?(path: String) {
        guard FileManager.default.createFile(atPath: path, contents: Data("coordinator_ns,line\n".utf8)),
              let h = FileHandle(forWritingAtPath: path) else { return nil }
        h.seekToEndOfFile()
        handle = h
    }

    func write(time: Int64, line: Int) {
        handle.write(Data("\(time),\(line)\n".utf8))
    }
}
