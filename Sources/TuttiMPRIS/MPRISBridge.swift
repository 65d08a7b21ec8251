import Synchronization
import TuttiAPI
import TuttiCore
import TuttiNet

/// The coordinator, as the bridge reaches it: commands, the card, and its event stream.
public protocol MPRISRemote: Sendable {
    /// The control API's address (artwork URLs are made of it).
    var baseURL: String { get }
    /// Performs a command; the card that follows, when the API answers with one.
    func perform(_ command: MPRISPlayer.Command) throws -> NowPlaying?
    func nowPlaying() throws -> NowPlaying
    /// Follows the event stream until it ends, calling `handle` with each event.
    func follow(_ handle: (Event) -> Void) throws
}

/// `tutti mpris`: owns a zone's player (`org.mpris.MediaPlayer2.tutti`, the default
/// zone's; `org.mpris.MediaPlayer2.tutti.ID` another's) on the session bus and keeps it in
/// step with the zone. The calling thread serves the bus (method calls, and every 100 ms
/// the PropertiesChanged and Seeked signals of what changed); a thread of its own follows
/// the coordinator's event stream. See docs/mpris.md.
public final class MPRISBridge: Sendable {
    private let remote: any MPRISRemote
    private let shared: Mutex<Shared>
    private let log: @Sendable (String) -> Void
    private let clock: @Sendable () -> Int64
    /// The player's name on the desktop (`tutti`, or `tutti · Kitchen` for a zone's).
    private let identity: String

    struct Shared {
        var state: MPRISPlayer.State
        /// The lyrics of the item heard now, when it has timed ones.
        var lyrics: (itemID: Int, cursor: LyricCursor)?
        /// A jump of the position the desktop should hear of.
        var seeked = false
        var connected = false
    }

    public init(remote: any MPRISRemote, identity: String = "tutti", clock: @escaping @Sendable () -> Int64,
                log: @escaping @Sendable (String) -> Void) {
        self.identity = identity
        self.remote = remote
        self.clock = clock
        self.log = log
        shared = Mutex(Shared(state: MPRISPlayer.State(baseURL: remote.baseURL)))
    }

    /// Serves the bus on this thread until it goes away or `stop` says so.
    public func run(bus: DBusConnection, stop: @escaping @Sendable () -> Bool) {
        startFollowing(stop: stop)
        var shown: [String: DBusValue] = [:]
        while !stop() {
            guard bus.turn(milliseconds: 100, handle: { handle($0) }) else {
                log("the session bus went away")
                return
            }
            let (properties, seeked) = shared.withLock { shared -> ([(String, DBusValue)], Bool) in
                updateLyricLine(&shared)
                defer { shared.seeked = false }
                return (MPRISPlayer.playerProperties(shared.state, now: clock()), shared.seeked)
            }
            // Position changes all the time and is never signalled (the specification):
            // a jump is, by Seeked.
            let changed = properties.filter { $0.0 != "Position" && shown[$0.0] != $0.1 }
            if !changed.isEmpty {
                for (name, value) in changed { shown[name] = value }
                if !shown.isEmpty {
                    bus.signal(path: MPRISPlayer.path, interface: MPRISPlayer.propertiesInterface, name: "PropertiesChanged",
                               [.string(MPRISPlayer.playerInterface), .dictionary(changed), .strings([])])
                }
            }
            if seeked, let position = properties.first(where: { $0.0 == "Position" })?.1 {
                bus.signal(path: MPRISPlayer.path, interface: MPRISPlayer.playerInterface, name: "Seeked", [position])
            }
        }
    }

    private func handle(_ call: DBusConnection.Call) -> DBusConnection.Answer {
        let state = shared.withLock { $0.state }
        do throws(MPRISPlayer.Refusal) {
            switch (call.interface, call.member) {
            case ("org.freedesktop.DBus.Introspectable", "Introspect"):
                return .values([.string(MPRISPlayer.introspection)])
            case ("org.freedesktop.DBus.Peer", "Ping"):
                return .values([])
            case (MPRISPlayer.propertiesInterface, "Get"):
                guard case let .string(interface)? = call.arguments.first ?? nil, call.arguments.count == 2,
                      case let .string(name)? = call.arguments[1] else { throw .badArguments("Get takes an interface and a property (ss)") }
                guard let value = properties(of: interface, state).first(where: { $0.0 == name })?.1 else {
                    throw .badArguments("no property \(name) on \(interface)")
                }
                return .values([.variant(value)])
            case (MPRISPlayer.propertiesInterface, "GetAll"):
                guard case let .string(interface)? = call.arguments.first ?? nil else { throw .badArguments("GetAll takes an interface (s)") }
                return .values([.dictionary(properties(of: interface, state))])
            case (MPRISPlayer.propertiesInterface, "Set"):
                guard call.arguments.count == 3, case let .string(interface)? = call.arguments[0], case let .string(name)? = call.arguments[1],
                      let value = call.arguments[2] else { throw .badArguments("Set takes an interface, a property and a value (ssv)") }
                guard interface == MPRISPlayer.playerInterface else { throw .readOnly("\(name) of \(interface) cannot be set") }
                return perform(try MPRISPlayer.set(name, value, state: state))
            case (MPRISPlayer.rootInterface, "Raise"), (MPRISPlayer.rootInterface, "Quit"):
                return .values([])
            case (MPRISPlayer.playerInterface, let method), ("", let method):
                return perform(try MPRISPlayer.command(method: method, call.arguments, state: state))
            default:
                throw .unknownMethod("no method \(call.member) on \(call.interface)")
            }
        } catch {
            return .error(name: error.name, message: error.message)
        }
    }

    private func properties(of interface: String, _ state: MPRISPlayer.State) -> [(String, DBusValue)] {
        switch interface {
        case MPRISPlayer.rootInterface: MPRISPlayer.rootProperties(identity: identity)
        case MPRISPlayer.playerInterface: MPRISPlayer.playerProperties(state, now: clock())
        default: []
        }
    }

    private func perform(_ command: MPRISPlayer.Command?) -> DBusConnection.Answer {
        guard let command else { return .values([]) }
        do {
            if let card = try remote.perform(command) { take(card) }
            return .values([])
        } catch {
            log("\(command): \(error)")
            return .error(name: "org.mpris.MediaPlayer2.tutti.Error", message: "\(error)")
        }
    }

    /// A new card: kept, and a jump of the position noted.
    private func take(_ card: NowPlaying, lyrics: Lyrics?? = nil) {
        let now = clock()
        shared.withLock { shared in
            let before = shared.state
            if let previous = before.nowPlaying, previous.itemID == card.itemID, card.itemID != nil,
               abs(before.elapsed(now: now) - card.elapsed) > 1 {
                shared.seeked = true
            }
            shared.state.nowPlaying = card
            shared.state.receivedAt = now
            if let lyrics {
                shared.lyrics = lyrics.flatMap { $0.isSynced ? $0 : nil }.flatMap { l in card.itemID.map { ($0, LyricCursor(lyrics: l)) } }
            } else if shared.lyrics?.itemID != card.itemID {
                shared.lyrics = nil
            }
            updateLyricLine(&shared)
        }
    }

    private func updateLyricLine(_ shared: inout Shared) {
        guard let (_, cursor) = shared.lyrics else {
            shared.state.lyricLine = shared.state.nowPlaying?.lyricLine
            return
        }
        let at = cursor.position(atMilliseconds: Int(shared.state.elapsed(now: clock()) * 1000))
        shared.state.lyricLine = at.line.map { cursor.lyrics.lines[$0].text }
    }

    private func startFollowing(stop: @escaping @Sendable () -> Bool) {
        startThread("tutti-mpris-events") { [self] in follow(stop: stop) }
    }

    /// Follows the event stream, again a second after it ends.
    func follow(stop: @Sendable () -> Bool) {
        var told = false
        while !stop() {
            do {
                take(try remote.nowPlaying())
                if !shared.withLock({ $0.connected }) { log("following the house at \(remote.baseURL)") }
                shared.withLock { $0.connected = true }
                told = false
                try remote.follow { event in
                    switch event.change {
                    case let .hello(card, _, _, lyrics): take(card, lyrics: .some(lyrics))
                    case let .trackChanged(_, card, lyrics): take(card, lyrics: .some(lyrics))
                    case let .nowPlaying(card): take(card)
                    case .volume, .state: if let card = try? remote.nowPlaying() { take(card) }
                    default: break
                    }
                }
            } catch {
                if !told { log("cannot follow the house at \(remote.baseURL): \(error); trying again every second") }
                told = true
            }
            shared.withLock { $0.connected = false }
            for _ in 0..<10 where !stop() { System.sleep(nanoseconds: 100_000_000) }
        }
    }
}
