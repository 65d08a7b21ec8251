import ArgumentParser
import Foundation
import TuttiAPI
import TuttiCore

/// `tutti ctl queue ...`: tracks are numbered from 1, as `queue` lists them.
struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue", abstract: "Show or edit the queue.",
        subcommands: [List.self, Add.self, Remove.self, Move.self, Clear.self], defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The queue, the current track marked.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let queue = try options.client().get("/queue", as: QueueView.self)
            if options.json { try printJSON(queue) } else { print(CtlFormat.queue(queue)) }
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add files, folders, playlists (on the coordinator's machine), URLs (http:// or https://: audio files, internet radio, HLS streams, playlists) or live inputs (pcm:PATH).")
        @OptionGroup var options: CtlOptions
        @Flag(help: "Right after the current track, instead of at the end.") var next = false
        @Argument(help: "Files, folders, playlists (M3U, M3U8, PLS), URLs, or live inputs: pcm:PATH[?format=s16le|f32le&rate=48000|44100] (raw stereo PCM from a named pipe, a file or -).") var paths: [String]
        func validate() throws { if paths.isEmpty { throw ValidationError("name at least one file, folder or playlist") } }
        func run() throws {
            // Files and live inputs (pcm:PATH) by their full path; standard input (pcm:-) and
            // URLs as they are.
            let absolute = try paths.map { path -> String in
                if RemoteLocation.isRemote(path) { return path }
                guard LiveInput.isLive(path) else { return URL(fileURLWithPath: path).standardizedFileURL.path }
                var input: LiveInput
                do { input = try LiveInput(parsing: path) } catch { throw ValidationError("\(error)") }
                if input.path != "-" { input.path = URL(fileURLWithPath: input.path).standardizedFileURL.path }
                return input.entry
            }
            let added = try options.client().send("POST", "/queue", body: AddRequest(paths: absolute, placement: next ? .afterCurrent : .end),
                                                  as: [QueueEntry].self)
            if options.json { return try printJSON(added) }
            print("added \(counted(added.count, "track")):")
            for item in added { print("  \(item.index + 1). \(item.title ?? (item.path as NSString).lastPathComponent)") }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove the track with this number.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Its number in the queue.") var number: Int
        func run() throws {
            let client = try options.client()
            let item = try QueueCommand.item(number, client)
            try client.send("DELETE", "/queue/\(item.id)")
            if !options.json { print("removed \(item.title ?? item.path)") }
        }
    }

    struct Move: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move a track to another place.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Its number now.") var from: Int
        @Argument(help: "Its number after the move.") var to: Int
        func run() throws {
            let client = try options.client()
            let item = try QueueCommand.item(from, client)
            try client.send("POST", "/queue/\(item.id)/move", body: MoveRequest(index: to - 1))
            let queue = try client.get("/queue", as: QueueView.self)
            if options.json { try printJSON(queue) } else { print(CtlFormat.queue(queue)) }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Empty the queue (playback stops).")
        @OptionGroup var options: CtlOptions
        func run() throws {
            try options.client().send("DELETE", "/queue")
            if !options.json { print("the queue is empty") }
        }
    }

    /// The queue entry numbered `number` (from 1).
    static func item(_ number: Int, _ client: CtlClient) throws -> QueueEntry {
        let queue = try client.get("/queue", as: QueueView.self)
        guard number >= 1, number <= queue.items.count else {
            throw CtlFailure(description: queue.items.isEmpty ? "the queue is empty"
                             : "there is no track \(number): the queue has tracks 1 to \(queue.items.count)")
        }
        return queue.items[number - 1]
    }
}

/// `tutti ctl volume [ROOM] LEVEL|+N|-N|mute|unmute`.
struct VolumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "volume", abstract: "Set the group's or a room's volume (0 to 100, or +N and -N to turn it up or down), or mute and unmute.",
        discussion: "tutti ctl volume 60 · tutti ctl volume Kitchen 40 · tutti ctl volume Kitchen -5 · tutti ctl volume mute · tutti ctl volume Kitchen unmute")
    @OptionGroup var options: CtlOptions
    // (All that the parser does not know: "-5" is a level, not an option.)
    @Argument(parsing: .allUnrecognized, help: "[ROOM] LEVEL, where LEVEL is 0 to 100, +N or -N, mute or unmute.") var words: [String]

    /// What a level word asks for.
    enum Level: Equatable {
        case to(Double), by(Double), mute(Bool)
        init?(_ word: String) {
            switch word {
            case "mute": self = .mute(true)
            case "unmute": self = .mute(false)
            default:
                guard let value = Double(word), value.isFinite else { return nil }
                if word.hasPrefix("+") || word.hasPrefix("-") { self = .by(value) } else if (0...100).contains(value) { self = .to(value) } else { return nil }
            }
        }
        /// The volume it gives from `current`.
        func applied(to current: Double) -> Double? {
            switch self {
            case let .to(v): v
            case let .by(d): min(100, max(0, current + d))
            case .mute: nil
            }
        }
    }

    func validate() throws {
        guard (1...2).contains(words.count) else { throw ValidationError("say LEVEL, or ROOM LEVEL (LEVEL: 0 to 100, +N or -N, mute or unmute)") }
        let level = words.last!
        guard Level(level) != nil else {
            throw ValidationError("the volume '\(level)' is not a level: say 0 to 100, +N or -N to turn it up or down, mute or unmute")
        }
    }

    func run() throws {
        let client = try options.client()
        let level = Level(words.last!)!
        let muted: Bool? = if case let .mute(m) = level { m } else { nil }
        if words.count == 2 {
            let name = words[0]
            var volume: Double?
            if case .by = level {
                let rooms = try client.get("/rooms", as: [RoomView].self)
                guard let room = rooms.first(where: { $0.name == name || $0.key == name })
                    ?? rooms.first(where: { $0.name.lowercased() == name.lowercased() }) else {
                    throw CtlFailure(description: "no room '\(name)': the rooms are \(rooms.map(\.name).joined(separator: ", "))")
                }
                volume = level.applied(to: room.volume)
            } else {
                volume = level.applied(to: 0)
            }
            let room = try client.send("PUT", "/rooms/\(percentEncoded(name))",
                                       body: RoomUpdate(name: nil, volume: volume, muted: muted, outputDelayMs: nil), as: RoomView.self)
            if options.json { try printJSON(room) } else { print(CtlFormat.rooms([room])) }
        } else {
            let volume = try level.applied(to: { if case .by = level { try client.get("/now-playing", as: NowPlaying.self).volume } else { 0 } }())
            let np = try client.send("PUT", "/volume", body: VolumeRequest(volume: volume, muted: muted), as: NowPlaying.self)
            if options.json { return try printJSON(np) }
            print("group volume \(Int(np.volume.rounded()))%\(np.muted ? " (muted)" : "")")
            print(CtlFormat.rooms(try client.get("/rooms", as: [RoomView].self)))
        }
    }
}

/// A room name, safe in a URL path.
func percentEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? text
}
