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
            print("added \(added.count) track\(added.count == 1 ? "" : "s"):")
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

/// `tutti ctl volume [ROOM] LEVEL|mute|unmute`.
struct VolumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "volume", abstract: "Set the group's or a room's volume (0 to 100), or mute and unmute.",
        discussion: "tutti ctl volume 60 · tutti ctl volume Kitchen 40 · tutti ctl volume mute · tutti ctl volume Kitchen unmute")
    @OptionGroup var options: CtlOptions
    @Argument(help: "[ROOM] LEVEL, where LEVEL is 0 to 100, mute or unmute.") var words: [String]

    func validate() throws {
        guard (1...2).contains(words.count) else { throw ValidationError("say LEVEL, or ROOM LEVEL (LEVEL: 0 to 100, mute or unmute)") }
        let level = words.last!
        if level != "mute" && level != "unmute" {
            guard let v = Double(level), (0...100).contains(v) else { throw ValidationError("volume '\(level)' must be 0 to 100, mute or unmute") }
        }
    }

    func run() throws {
        let client = try options.client()
        let level = words.last!
        let request = VolumeRequest(volume: Double(level), muted: level == "mute" ? true : level == "unmute" ? false : nil)
        if words.count == 2 {
            let room = try client.send("PUT", "/rooms/\(percentEncoded(words[0]))",
                                       body: RoomUpdate(name: nil, volume: request.volume, muted: request.muted, outputDelayMs: nil),
                                       as: RoomView.self)
            if options.json { try printJSON(room) } else { print(CtlFormat.rooms([room])) }
        } else {
            let np = try client.send("PUT", "/volume", body: request, as: NowPlaying.self)
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
