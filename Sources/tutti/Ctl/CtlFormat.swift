import Foundation
import TuttiAPI
import TuttiCore

/// Human-readable views of the API's answers.
enum CtlFormat {
    static func symbol(_ state: PlaybackState) -> String {
        switch state {
        case .playing: "▶"
        case .paused: "⏸"
        case .stopped: "■"
        case .loading, .buffering: "…"
        case .failed: "✕"
        }
    }

    static func nowPlaying(_ np: NowPlaying) -> String {
        var lines: [String] = []
        guard np.itemID != nil else {
            return "\(symbol(np.state)) \(np.state.rawValue), nothing queued"
        }
        var title = np.title ?? np.path ?? "?"
        if let artist = np.artist { title += " — \(artist)" }
        if let album = np.album { title += " (\(album))" }
        lines.append("\(symbol(np.state)) \(np.state.rawValue)  \(title)")
        var details = "  \(clockText(np.elapsed))"
        if let duration = np.duration { details += " / \(clockText(duration))" }
        if np.isLiveStream == true { details += " live" }
        // A live input is heard this long after it arrives (its zone's network may have made it longer).
        if let path = np.path, LiveInput.isLive(path), let latency = np.latencyMilliseconds { details += "   latency \(Int(latency.rounded())) ms" }
        if let index = np.queueIndex { details += "   track \(index + 1) of \(np.queueCount)" }
        details += "   loop: \(np.loopMode.rawValue)   volume \(Int(np.volume.rounded()))%\(np.muted ? " (muted)" : "")"
        if let rating = np.rating { details += "   \(rating == .like ? "♥ liked" : "disliked")" }
        lines.append(details)
        if let station = np.station { lines.append("  📻 \(station)\(np.streamTitle.map { ": \($0)" } ?? "")") }
        if let buffer = np.buffer { lines.append("  " + bufferText(buffer)) }
        if let line = np.lyricLine, !line.isEmpty { lines.append("  ♪ \(line)") }
        if let failure = np.failure { lines.append("  ! \(failure)") }
        return lines.joined(separator: "\n")
    }

    /// The ReplayGain setting in a line.
    static func replayGain(_ r: ReplayGain) -> String {
        func db(_ x: Double) -> String { (x > 0 ? "+" : "") + String(format: "%.1f", x) + " dB" }
        switch r.mode {
        case .off: return "replaygain: off (tracks play as they are)"
        case .track, .album:
            return "replaygain: \(r.mode.rawValue)   preamp \(db(r.preampDB))   untagged tracks \(db(r.untaggedDB))"
        }
    }

    /// A remote source's buffer: a bar of what is loaded (a file) and the seconds ahead.
    static func bufferText(_ buffer: BufferView) -> String {
        var text = "buffer: \(buffer.phase.rawValue), \(String(format: "%.1f", buffer.seconds)) s ahead"
        if let loaded = buffer.loaded {
            let filled = Int((loaded * 20).rounded())
            text += "  [" + String(repeating: "█", count: filled) + String(repeating: "·", count: 20 - filled) + "] "
                + "\(Int((loaded * 100).rounded()))% loaded"
        }
        return text
    }

    static func rooms(_ rooms: [RoomView]) -> String {
        guard !rooms.isEmpty else { return "No rooms yet: start `tutti follower --coordinator HOST` in each room." }
        let width = max(6, rooms.map(\.name.count).max() ?? 0)
        return rooms.map { room in
            var line = room.name.padding(toLength: width, withPad: " ", startingAt: 0)
            line += room.connected ? "  connected   " : "  away        "
            line += String(format: "volume %3.0f%%%@", room.volume, room.muted ? " muted" : "      ")
            if room.outputDelayMs > 0 { line += String(format: "  delay %.0f ms", room.outputDelayMs) }
            if let r = room.report, room.connected, r.via == RoomReport.sendspin {
                // A Sendspin player: the house knows its state, not its clock or its losses.
                line += "  \(r.state.rawValue)  Sendspin player"
            } else if let r = room.report, room.connected {
                line += String(format: "  %@%@  latency %.0f ms  clock %+.1f µs ±%.1f  skew %+.1f µs  lost %d, concealed %d frames",
                               r.state.rawValue, r.interrupted ? " (interrupted)" : "", r.outputLatencyMilliseconds,
                               r.clockOffsetMicroseconds, r.clockUncertaintyMicroseconds, r.timingErrorMicroseconds,
                               r.packetsLost, r.framesConcealed)
                if let holes = room.holesLastHour { line += "  holes \(holes) in the last hour" }
            }
            if let c = room.calibration {
                let when = DateFormatter.localizedString(from: Date(timeIntervalSince1970: c.at), dateStyle: .short, timeStyle: .short)
                line += "  calibrated \(when) by \(c.by)" + (c.applied ? "" : " (not applied)")
                    + (c.residualMs.map { String(format: ", within %.2f ms", $0) } ?? "")
            }
            return line
        }.joined(separator: "\n")
    }

    static func queue(_ queue: QueueView) -> String {
        guard !queue.items.isEmpty else { return "The queue is empty: add with `tutti ctl queue add PATH`." }
        var lines = queue.items.map { item in
            let mark = item.current ? "▶" : " "
            var text = item.title ?? (item.path as NSString).lastPathComponent
            if let artist = item.artist { text += " — \(artist)" }
            if let duration = item.duration { text += "  (\(clockText(duration)))" }
            return "\(mark) \(String(format: "%3d", item.index + 1)). \(text)"
        }
        lines.append("loop: \(queue.loopMode.rawValue)")
        return lines.joined(separator: "\n")
    }

    static func event(_ event: Event) -> String {
        switch event.change {
        case let .hello(nowPlaying, _, _, _), let .nowPlaying(nowPlaying): return Self.nowPlaying(nowPlaying)
        case let .state(state, previous, reason): return "state: \(previous.rawValue) → \(state.rawValue)\(reason.map { " (\($0))" } ?? "")"
        case let .trackChanged(_, nowPlaying, _): return "track: \(nowPlaying.title ?? "-")"
        case .trackEnded: return "track ended"
        case let .queue(queue): return "queue: \(counted(queue.items.count, "track")), loop \(queue.loopMode.rawValue)"
        case let .volume(rooms): return "volume: " + rooms.map { "\($0.name) \(Int($0.volume))%\($0.muted ? " muted" : "")" }.joined(separator: ", ")
        case let .roomJoined(room): return "room joined: \(room.name)"
        case let .roomLeft(room): return "room left: \(room.name)"
        case let .room(room): return "room \(room.name): \(room.report?.state.rawValue ?? "?")\(room.report?.interrupted == true ? " (interrupted)" : "")"
        case let .feedback(entry): return "\(entry.kind.rawValue): \(entry.title ?? entry.path)"
        case let .zones(zones): return "zones: " + zones.map { "\($0.name) (\($0.rooms.joined(separator: ", ")))" }.joined(separator: "; ")
        }
    }

    /// The zones, each with its rooms and what it plays.
    static func zones(_ zones: [ZoneView]) -> String {
        zones.map { zone in
            let np = zone.nowPlaying
            var playing = np.state.rawValue
            if let title = np.title { playing += ": \(title)\(np.artist.map { " — \($0)" } ?? "")" }
            let rooms = zone.rooms.isEmpty ? "no rooms" : zone.rooms.joined(separator: ", ")
            let codec = zone.codec.flatMap(StreamCodec.init(rawValue:)).map { ", \($0.displayName)" } ?? ""
            return "\(zone.name) [\(zone.id)\(codec)]  \(rooms)\n    \(playing)"
        }.joined(separator: "\n")
    }
}
