import ArgumentParser
import Foundation
import TuttiAPI
import TuttiCore

struct RoomsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rooms", abstract: "The rooms: connected, volume, latency, clock, skew, loss.")
    @OptionGroup var options: CtlOptions
    func run() throws {
        let rooms = try options.client().get("/rooms", as: [RoomView].self)
        if options.json { try printJSON(rooms) } else { print(CtlFormat.rooms(rooms)) }
    }
}

/// `tutti ctl room rename|remove|delay`.
struct RoomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room", abstract: "Rename a room, forget it, set its output delay, or move it to another zone.",
        subcommands: [Rename.self, Remove.self, Delay.self, Zone.self])

    struct Zone: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move a room to another zone: it plays that zone's music at once.")
        @OptionGroup var options: CtlOptions
        @Argument var room: String
        @Argument var zone: String
        func run() throws {
            try RoomCommand.update(room, RoomUpdate(name: nil, volume: nil, muted: nil, outputDelayMs: nil, zone: zone), options)
        }
    }

    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a room another name.")
        @OptionGroup var options: CtlOptions
        @Argument var room: String
        @Argument var newName: String
        func run() throws {
            try RoomCommand.update(room, RoomUpdate(name: newName, volume: nil, muted: nil, outputDelayMs: nil), options)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a room and its settings.")
        @OptionGroup var options: CtlOptions
        @Argument var room: String
        func run() throws {
            try options.client().send("DELETE", "/rooms/\(percentEncoded(room))")
            if !options.json { print("forgot \(room)") }
        }
    }

    struct Delay: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The delay of a room's device after its sound server (HDMI, Bluetooth), in ms.")
        @OptionGroup var options: CtlOptions
        @Argument var room: String
        @Argument var milliseconds: Double
        func run() throws {
            try RoomCommand.update(room, RoomUpdate(name: nil, volume: nil, muted: nil, outputDelayMs: milliseconds), options)
        }
    }

    static func update(_ room: String, _ update: RoomUpdate, _ options: CtlOptions) throws {
        let view = try options.client().send("PUT", "/rooms/\(percentEncoded(room))", body: update, as: RoomView.self)
        if options.json { try printJSON(view) } else { print(CtlFormat.rooms([view])) }
    }
}

/// Like, dislike and bookmark the current track.
enum Feedback {
    static func record(_ kind: FeedbackKind, _ options: CtlOptions) throws {
        let entry = try options.client().send("POST", "/feedback", body: FeedbackRequest(kind: kind), as: FeedbackEntry.self)
        if options.json { return try printJSON(entry) }
        var text = "\(kind.rawValue)d \(entry.title ?? (entry.path as NSString).lastPathComponent)"
        if kind == .bookmark, let position = entry.position { text = "bookmarked \(entry.title ?? entry.path) at \(clockText(position.seconds))" }
        print(text)
    }

    struct Like: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Like the current track.")
        @OptionGroup var options: CtlOptions
        func run() throws { try Feedback.record(.like, options) }
    }
    struct Dislike: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Dislike the current track.")
        @OptionGroup var options: CtlOptions
        func run() throws { try Feedback.record(.dislike, options) }
    }
    struct Bookmark: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bookmark the current track at the position playing now.")
        @OptionGroup var options: CtlOptions
        func run() throws { try Feedback.record(.bookmark, options) }
    }
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "feedback", abstract: "Likes, dislikes and bookmarks.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let entries = try options.client().get("/feedback", as: [FeedbackEntry].self)
            if options.json { return try printJSON(entries) }
            if entries.isEmpty { print("no feedback yet") }
            for e in entries {
                let when = DateFormatter.localizedString(from: Date(timeIntervalSince1970: e.date), dateStyle: .short, timeStyle: .short)
                let at = e.position.map { " at \(clockText($0.seconds))" } ?? ""
                print("\(e.id). \(e.kind.rawValue)\(at): \(e.title ?? e.path)\(e.artist.map { " — \($0)" } ?? "")  (\(when))")
            }
        }
    }
}

/// `tutti ctl zones`: the zones, their rooms and what each plays.
struct ZonesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "zones", abstract: "The zones: their rooms, and what each plays.")
    @OptionGroup var options: CtlOptions
    func run() throws {
        let zones = try options.client().get("/zones", as: [ZoneView].self)
        if options.json { try printJSON(zones) } else { print(CtlFormat.zones(zones)) }
    }
}

/// `tutti ctl zone add|remove|rename|party`.
struct ZoneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zone", abstract: "Make, rename or remove a zone, or gather every room into one (party).",
        subcommands: [Add.self, Remove.self, Rename.self, Party.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a zone (no rooms yet: move them with `tutti ctl room zone ROOM ZONE`).")
        @OptionGroup var options: CtlOptions
        @Argument var name: String
        func run() throws {
            let zone = try options.client().send("POST", "/zones", body: ZoneRequest(name: name), as: ZoneView.self)
            if options.json { try printJSON(zone) } else { print("made zone \(zone.name) [\(zone.id)]") }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a zone: its rooms go to the default zone.")
        @OptionGroup var options: CtlOptions
        @Argument var name: String
        func run() throws {
            try options.client().send("DELETE", "/zones/\(percentEncoded(name))")
            if !options.json { print("removed zone \(name); its rooms play the default zone") }
        }
    }

    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a zone another name (its id stays).")
        @OptionGroup var options: CtlOptions
        @Argument var name: String
        @Argument var newName: String
        func run() throws {
            let zone = try options.client().send("PUT", "/zones/\(percentEncoded(name))", body: ZoneRequest(name: newName), as: ZoneView.self)
            if options.json { try printJSON(zone) } else { print("zone \(zone.id) is now called \(zone.name)") }
        }
    }

    struct Party: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every room into one zone (the one named, else the default zone).")
        @OptionGroup var options: CtlOptions
        @Argument var name: String?
        func run() throws {
            let zone = try options.client().send("POST", "/zones/party", body: PartyRequest(zone: name), as: ZoneView.self)
            if options.json { try printJSON(zone) } else { print(CtlFormat.zones([zone])) }
        }
    }
}

/// `tutti ctl members` and `tutti ctl member revoke|enrolment`: the house's members, each
/// with a credential of its own.
struct MembersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "members", abstract: "The house's members (followers, screens) and their credentials.")
    @OptionGroup var options: CtlOptions
    func run() throws {
        let members = try options.client().get("/members", as: MembersView.self)
        if options.json { try printJSON(members) } else { print(MemberCommand.text(members)) }
    }
}

struct MemberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "member", abstract: "Revoke a member, or open or close enrolment by the house key.",
        subcommands: [Revoke.self, Enrolment.self])

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a member (its id, name or room): it can neither hear nor steer the house again; the others get the stream's new key by themselves.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "The member to revoke: its id, name or room (as `tutti ctl members` lists them).") var member: String
        func run() throws {
            let members = try options.client().send("DELETE", "/members/\(percentEncoded(member))", as: MembersView.self)
            if options.json { return try printJSON(members) }
            print("revoked \(member); enrolment by the house key is closed (new members pair: `tutti ctl pair`)")
            print(MemberCommand.text(members))
        }
    }

    struct Enrolment: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "open: any holder of the house key may become a member by itself; close: new members pair.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "open (holders of the house key may become members by themselves) or close (new members pair).") var enrolment: String
        func run() throws {
            guard enrolment == "open" || enrolment == "close" else { throw ValidationError("say open or close, not '\(enrolment)'") }
            let members = try options.client().send("PUT", "/members/enrolment", body: EnrolmentUpdate(open: enrolment == "open"),
                                                    as: MembersView.self)
            if options.json { try printJSON(members) } else { print(MemberCommand.text(members)) }
        }
    }

    static func text(_ view: MembersView) -> String {
        var lines = ["enrolment by the house key: \(view.enrolment ? "open" : "closed"); the stream's key: generation \(view.keyGeneration)"]
        if view.members.isEmpty { lines.append("no members with credentials of their own yet") }
        for m in view.members {
            let room = m.room.map { " room \($0)," } ?? ""
            let key = m.keyGeneration.map { " holds key \($0)" } ?? ""
            lines.append("\(m.id). \(m.name):\(room) credential \(m.fingerprint)\(key)")
        }
        return lines.joined(separator: "\n")
    }
}

/// `tutti ctl sendspin` and `tutti ctl sendspin pair NAME [CODE]`: the Sendspin players
/// paired with the house and those waiting, and pairing one by code.
struct SendspinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sendspin", abstract: "Sendspin players (Music Assistant's speakers and apps): those paired, those waiting; pair one.",
        subcommands: [List.self, Pair.self, Unpair.self], defaultSubcommand: List.self)

    struct Unpair: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a paired player: its session ends, and it waits to be paired again.")
        @OptionGroup var options: CtlOptions
        @Argument(help: "The player: its name or id, as `tutti ctl sendspin` lists it.") var player: String
        func run() throws {
            let players = try options.client().send("DELETE", "/sendspin/players/\(percentEncoded(player))", as: SendspinPlayersView.self)
            if options.json { return try printJSON(players) }
            print("'\(player)' is no longer paired")
            print(SendspinCommand.text(players))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The Sendspin players paired with the house, and those that wait to be.")
        @OptionGroup var options: CtlOptions
        func run() throws {
            let players = try options.client().get("/sendspin/players", as: SendspinPlayersView.self)
            if options.json { try printJSON(players) } else { print(SendspinCommand.text(players)) }
        }
    }

    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pair a waiting player: without a code, it shows one (then give it); with its static code, at once; or by the token it gave (--pairing-token).")
        @OptionGroup var options: CtlOptions
        @Argument(help: "The player: its name or id, as `tutti ctl sendspin` lists it.") var player: String?
        @Argument(help: "The code: the one it shows once asked (6 digits), or the one it keeps (8 digits).") var code: String?
        @Option(help: "A pairing token the player gave (SP:0…): it pairs now if it waits, else when it next connects.") var pairingToken: String?
        func validate() throws {
            if player == nil, pairingToken == nil { throw ValidationError("say which player (its name or id), or give its --pairing-token") }
        }
        func run() throws {
            let answer = try options.client().send("POST", "/sendspin/pair", body: SendspinPairRequest(player: player, code: code, token: pairingToken),
                                                   as: SendspinPairAnswer.self)
            if options.json { try printJSON(answer) } else { print(answer.message) }
        }
    }

    static func text(_ view: SendspinPlayersView) -> String {
        if view.players.isEmpty { return "no Sendspin players paired or waiting" }
        return view.players.map { p in
            if p.state == "paired" {
                let when = p.pairedAt.map { " on " + Date(timeIntervalSince1970: TimeInterval($0)).formatted(date: .abbreviated, time: .shortened) } ?? ""
                return "\(p.name): paired\(when) (\(p.id.prefix(12))…)"
            }
            let how = p.methods.isEmpty ? "offers no pairing by code" : p.methods.map {
                $0 == "dynamic_pairing_code" ? "shows a code" : "keeps a code"
            }.joined(separator: ", ")
            return "\(p.name): waits to be paired; \(how) (\(p.id.prefix(12))…)"
        }.joined(separator: "\n")
    }
}
