import ArgumentParser
import Foundation
import TuttiAPI
import TuttiConfig
import TuttiCore
import TuttiNet

/// `tutti ctl`: the whole control API from the terminal.
struct CtlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control the house: transport, queue, loop mode, volumes, rooms, zones, feedback.",
        discussion: "Human-readable by default, --json for scripts. Changes need the house token (--token, TUTTI_TOKEN, or the coordinator's state folder). `--zone NAME` before (or after) a command aims it at a zone: `tutti ctl --zone Kitchen play`; without it, the default zone. --server, --token and the other options every command takes may also come before it.",
        subcommands: [
            StatusCommand.self, Transport.Play.self, Transport.Pause.self, Transport.Toggle.self, Transport.Stop.self,
            Transport.Next.self, Transport.Previous.self, SeekCommand.self, SkipCommand.self, LoopCommand.self, ReplayGainCommand.self,
            QueueCommand.self, LibraryCommand.self, VolumeCommand.self, RoomsCommand.self, RoomCommand.self, ZonesCommand.self, ZoneCommand.self,
            Feedback.Like.self, Feedback.Dislike.self, Feedback.Bookmark.self, Feedback.List.self, RemoteCommand.self, PairingCommand.self, MembersCommand.self, MemberCommand.self, SendspinCommand.self,
            CalibrateCommand.self,
        ])
    /// The clock ctl's commands read (finding the coordinator by mDNS, within a deadline).
    static let clock: any MonotonicClock = SystemClock()
    /// The options every command shares (and whether each takes a value), which may come
    /// before the command: `tutti ctl --server URL --zone Kitchen status`.
    static let sharedOptions = ["--server": true, "--token": true, "--state-dir": true, "--zone": true, "--config": true,
                                "--tls-pin": true, "--tls-ca": true, "--json": false]

    /// `tutti ctl [SHARED OPTIONS] COMMAND ...` as the parser takes it: the shared options
    /// go to the command itself, right after its name (and its subcommands'), where no
    /// argument of its own can take them. A word where a command's subcommand belongs that
    /// names none is a typo: `complaint` names the nearest (`queue ad`: did you mean `queue
    /// add`?), where the parser would print another command's usage.
    static func arrange(_ arguments: [String]) -> (arguments: [String], complaint: String?) {
        guard arguments.first == "ctl" else { return (arguments, nil) }
        var rest = Array(arguments.dropFirst())
        var shared: [String] = []
        while let first = rest.first, let takesValue = sharedOptions[String(first.split(separator: "=", maxSplits: 1)[0])] {
            let count = takesValue && !first.contains("=") ? 2 : 1
            guard rest.count >= count else { break }
            shared += rest.prefix(count)
            rest.removeFirst(count)
        }
        // Past the names of the command and its subcommands.
        var command: any ParsableCommand.Type = CtlCommand.self
        var path = ["tutti", "ctl"]
        var at = 0
        while at < rest.count,
              let sub = command.configuration.subcommands.first(where: { $0._commandName == rest[at] }) {
            command = sub
            path.append(rest[at])
            at += 1
        }
        // (No command here takes words where its subcommands' names go: the defaults of
        // `queue` and `library` take none.)
        let names = command.configuration.subcommands.map { $0._commandName }
        if !names.isEmpty, at < rest.count, !rest[at].hasPrefix("-"), rest[at] != "help" {
            let word = rest[at], context = path.joined(separator: " ")
            let near = names.map { ($0, Settings.distance(word.lowercased(), $0)) }.filter { $0.1 <= 2 && $0.1 < $0.0.count }
                .min { $0.1 < $1.1 }
            if let (name, _) = near {
                return (arguments, "'\(context) \(word)' is not a command: did you mean '\(context) \(name)'?")
            }
            return (arguments, "'\(context) \(word)' is not a command; \(context) has: \(names.joined(separator: ", ")) (`\(context) --help`)")
        }
        rest.insert(contentsOf: shared, at: at)
        return (["ctl"] + rest, nil)
    }
}

/// `tutti ctl remote`: the web remote's address with the token in it (the coordinator's log
/// never shows the token).
struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Print the web remote's address with the house token in it, to open on a phone (keep it to yourself).")
    @OptionGroup var options: CtlOptions

    func run() throws {
        let client = try options.client()
        guard let token = client.token else {
            throw CtlFailure(description: "no token: pass --token, set TUTTI_TOKEN, or run where the coordinator keeps its state (--state-dir)")
        }
        let base = client.url.hasSuffix("/") ? String(client.url.dropLast()) : client.url
        if options.json { return try printJSON(["url": "\(base)/#token=\(token)"]) }
        print("\(base)/#token=\(token)")
    }
}

/// Runs a command that answers with the now-playing card, and shows it.
protocol NowPlayingCommand: ParsableCommand {
    var options: CtlOptions { get }
    func call(_ client: CtlClient) throws -> NowPlaying
}

extension NowPlayingCommand {
    func run() throws {
        let np = try call(try options.client())
        if options.json { try printJSON(np) } else { print(CtlFormat.nowPlaying(np)) }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "What is playing, and the rooms.")
    @OptionGroup var options: CtlOptions
    @Flag(help: "Keep following: print every change as it happens (until Ctrl-C).")
    var follow = false

    func run() throws {
        let client = try options.client()
        if follow {
            try client.follow { event, raw in
                // Unbuffered, so that a pipe sees each change as it happens.
                let line = options.json ? raw : CtlFormat.event(event)
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            }
            return
        }
        let status = try client.get("/status", as: Status.self)
        if options.json { return try printJSON(status) }
        print(CtlFormat.nowPlaying(status.nowPlaying))
        print("")
        print(CtlFormat.rooms(status.rooms))
    }
}

enum Transport {
    struct Play: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "Play (or resume where it paused).")
        @OptionGroup var options: CtlOptions
        @Argument(help: "Play the queue's track with this number instead (as `queue` lists them).")
        var number: Int?
        func call(_ c: CtlClient) throws -> NowPlaying {
            if let number {
                _ = try QueueCommand.item(number, c)  // "no track 12: the queue has tracks 1 to 9"
                return try c.send("POST", "/queue/play", body: PlayIndexRequest(index: number - 1), as: NowPlaying.self)
            }
            return try c.send("POST", "/transport/play", as: NowPlaying.self)
        }
    }
    struct Pause: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "Pause every room.")
        @OptionGroup var options: CtlOptions
        func call(_ c: CtlClient) throws -> NowPlaying { try c.send("POST", "/transport/pause", as: NowPlaying.self) }
    }
    struct Toggle: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "Pause if playing, else play.")
        @OptionGroup var options: CtlOptions
        func call(_ c: CtlClient) throws -> NowPlaying { try c.send("POST", "/transport/toggle", as: NowPlaying.self) }
    }
    struct Stop: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "Stop, back to the start of the track.")
        @OptionGroup var options: CtlOptions
        func call(_ c: CtlClient) throws -> NowPlaying { try c.send("POST", "/transport/stop", as: NowPlaying.self) }
    }
    struct Next: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "The next track.")
        @OptionGroup var options: CtlOptions
        func call(_ c: CtlClient) throws -> NowPlaying { try c.send("POST", "/transport/next", as: NowPlaying.self) }
    }
    struct Previous: NowPlayingCommand {
        static let configuration = CommandConfiguration(abstract: "The previous track (or the start of this one, when more than 3 s in).")
        @OptionGroup var options: CtlOptions
        func call(_ c: CtlClient) throws -> NowPlaying { try c.send("POST", "/transport/previous", as: NowPlaying.self) }
    }
}

struct SeekCommand: NowPlayingCommand {
    static let configuration = CommandConfiguration(commandName: "seek", abstract: "Go to a position in the track: 83, 1:23 or 1:02:03.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "The position.") var position: String
    func validate() throws { _ = try parseClock(position) }
    func call(_ c: CtlClient) throws -> NowPlaying {
        try c.send("POST", "/transport/seek", body: SeekRequest(position: try parseClock(position)), as: NowPlaying.self)
    }
}

struct SkipCommand: NowPlayingCommand {
    static let configuration = CommandConfiguration(commandName: "skip", abstract: "Jump forward or back: +10, -30 (seconds).")
    @OptionGroup var options: CtlOptions
    // Captured as they come, so that "-30" is a number, not an option.
    @Argument(parsing: .allUnrecognized, help: "Seconds, with a sign to go back.") var seconds: [String] = []
    func validate() throws {
        guard seconds.count == 1, let s = Double(seconds[0]), s.isFinite else {
            throw ValidationError("say how many seconds to skip: +10, -30")
        }
    }
    func call(_ c: CtlClient) throws -> NowPlaying {
        try c.send("POST", "/transport/skip", body: SkipRequest(seconds: Double(seconds[0])!), as: NowPlaying.self)
    }
}

extension LoopMode: ExpressibleByArgument {}

struct LoopCommand: NowPlayingCommand {
    static let configuration = CommandConfiguration(commandName: "loop", abstract: "Loop mode: once, one, all or shuffle.")
    @OptionGroup var options: CtlOptions
    @Argument(help: "once (to the end, then stop), one (repeat the track), all (wrap around) or shuffle.") var mode: LoopMode
    func call(_ c: CtlClient) throws -> NowPlaying { try c.send("PUT", "/loop", body: LoopRequest(mode: mode), as: NowPlaying.self) }
}

/// `tutti ctl replaygain`: shows, or changes, how the house evens out loudness.
struct ReplayGainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replaygain", abstract: "Even loudness (ReplayGain): show the setting, or change it.",
        discussion: "tutti ctl replaygain album; tutti ctl replaygain --untagged -6; tutti ctl replaygain off")
    @OptionGroup var options: CtlOptions
    @Argument(help: "off, track (each track at the reference loudness) or album (each album, its tracks as they are to each other).")
    var mode: ReplayGain.Mode?
    @Option(name: .customLong("preamp"), help: "Decibels added to every tagged track's gain (-24 to 24).")
    var preampDb: Double?
    @Option(name: .customLong("untagged"), help: "The gain in decibels of a track without loudness tags (-24 to 24).")
    var untaggedDb: Double?

    func run() throws {
        let client = try options.client()
        let setting: ReplayGain
        if mode == nil, preampDb == nil, untaggedDb == nil {
            setting = try client.get("/replaygain", as: ReplayGain.self)
        } else {
            let update = ReplayGainUpdate(mode: mode, preampDb: preampDb, untaggedDb: untaggedDb)
            setting = try client.send("PUT", "/replaygain", body: update, as: ReplayGain.self)
        }
        if options.json { return try printJSON(setting) }
        print(CtlFormat.replayGain(setting))
    }
}

/// `tutti ctl pair`: shows a one-time code for a new member (`tutti pair CODE` on it).
struct PairingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair", abstract: "Show a one-time code to pair a new follower or lyric screen (valid 5 minutes, for one machine).")
    @OptionGroup var options: CtlOptions

    func run() throws {
        let client = try options.client()
        let code = try client.send("POST", "/pairing", as: PairingCode.self)
        if options.json { return try printJSON(code) }
        print("pairing code: \(code.code)")
        print("on the new machine, within \(code.expiresInSeconds / 60) minutes: tutti pair \(code.code) --server \(client.url)")
    }
}
