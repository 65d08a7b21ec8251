import Foundation
import TuttiAPI
import TuttiCore
import TuttiFollower
import TuttiNet
import TuttiSecurity
import TuttiWeb

/// A lyric screen in a terminal: keeps its clock locked to the coordinator's (like a
/// follower, without joining as a room), follows the house's events, and shows the line
/// being sung, its words filling in, at the moment the rooms play it.
public final class LyricScreen: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var coordinator = SocketAddress(address: 0x7F00_0001, port: 5005)
        public var server = HTTPClient(host: "127.0.0.1", port: 8485)
        /// The room this screen is in: its name and state show on top.
        public var room: String?
        /// How late this screen shows what it draws (a TV's picture processing): drawn sooner by as much.
        public var displayDelay: Int64 = 0
        /// Record every line change (coordinator time it was drawn, line index) to this file.
        public var logPath: String?
        /// Print each line as it starts instead of drawing a full screen.
        public var lineMode = false
        /// Called when someone quits the full screen with a key (`q`, Esc); the screen has stopped.
        public var onQuit: (@Sendable () -> Void)?
        /// This machine's copy of the house key (the clock port serves house members only).
        public var houseKeyPath = StateStore.houseKeyPath(in: StateStore.defaultDirectory())
        public init() {}
    }

    let configuration: Configuration
    let clock: any MonotonicClock
    let stopFlag = StopFlag()
    let lock = NSLock()
    var estimator = ClockEstimator()
    var nowPlaying: NowPlaying?
    var lyrics: Lyrics?
    var rooms: [RoomView] = []
    var connected = false
    let log = Log("lyrics")

    /// The house key, and the screen's own credential (kept beside the house key's file).
    private let membership: ClockClient.Membership

    /// `clock`: the machine's monotonic clock (the program's, given where it is put together).
    public init(configuration: Configuration, clock: any MonotonicClock) throws {
        self.configuration = configuration
        self.clock = clock
        let name = "lyrics screen on \(ProcessInfo.processInfo.hostName)"
        let houseKey = try StateStore.readHouseKey(path: configuration.houseKeyPath)
        let folder = Files.folder(of: configuration.houseKeyPath)
        let keyPath = StateFolder.memberKeyPath(in: folder, name: "lyrics-screen", house: houseKey.fingerprint)
        let kept: (key: MemberKey?, legacy: String?)
        do { kept = try StateFolder.readMemberKey(in: folder, name: "lyrics-screen", house: houseKey.fingerprint) } catch {
            throw StateError(error.description)
        }
        var membership = ClockClient.Membership(houseKey: houseKey, member: kept.key, name: name, keyPath: keyPath)
        membership.trying = kept.legacy
        self.membership = membership
    }

    public func stop() { stopFlag.set() }

    /// Waits (up to `timeout` seconds) until `run` has returned and put the terminal back.
    public func waitUntilFinished(timeout: Double) {
        _ = finished.wait(timeout: .now() + timeout)
    }

    private let finished = DispatchSemaphore(value: 0)

    /// Runs until `stop()`: the clock and event threads, and the screen on this one.
    public func run() throws {
        defer { finished.signal() }
        let socket = try UDPSocket()
        try socket.bind(SocketAddress(address: 0, port: 0))
        socket.enableReceiveTimestamps()
        startThread("tutti-clock") { [self] in
            let clockClient = ClockClient(socket: socket, coordinator: configuration.coordinator, clock: clock, unicastPort: nil,
                                          membership: membership, role: "lyrics", handlers: ClockClient.Handlers(sample: { [self] sample in
                                              lock.withLock { estimator.add(sample) }
                                          }))
            clockClient.run(stop: stopFlag) { [self] in lock.withLock { ClockLock(estimator) } }
        }
        startThread("tutti-events") { [self] in followEvents() }
        defer { stopFlag.set() }
        let fullScreen = !configuration.lineMode && isatty(STDOUT_FILENO) == 1
        let renderer: any LyricRenderer = fullScreen ? TerminalRenderer() : LineRenderer()
        let record = configuration.logPath.flatMap { LineLog(path: $0) }
        renderer.begin()
        defer { renderer.end() }
        let keys = fullScreen ? TerminalKeys() : nil
        let keysDone = DispatchSemaphore(value: 0)
        if let keys {
            let onQuit = configuration.onQuit
            startThread("tutti-keys") { [self] in
                keys.run(stop: stopFlag) {
                    stop()
                    onQuit?()
                }
                keysDone.signal()
            }
        }
        defer {
            if let keys {
                stopFlag.set()
                _ = keysDone.wait(timeout: .now() + 1)  // it sees the stop within 200 ms
                keys.restore()
            }
        }
        var shownLine: Int?? = .none
        var shownTrack: Int?
        while !stopFlag.isSet {
            let frame = snapshot()
            if frame.track != shownTrack || frame.layoutLine != shownLine {
                if frame.track == shownTrack, let line = frame.layoutLine, let time = frame.coordinatorNow {
                    record?.write(time: time, line: line ?? -1)
                }
                shownTrack = frame.track
                shownLine = frame.layoutLine
            }
            renderer.draw(frame)
            // Wake at the next line change exactly, and often enough for the words to fill in.
            let wait = min(frame.untilNextLine ?? 33_000_000, 33_000_000)
            Thread.sleep(forTimeInterval: Double(max(1_000_000, wait)) / 1e9)
        }
    }

    /// The events of the zone of the screen's room (the default zone's without a room),
    /// reconnecting when the coordinator goes away, and at once when the room moves to
    /// another zone.
    private func followEvents() {
        var zone = ZoneInfo.defaultID
        while !stopFlag.isSet {
            var moved = false
            do {
                let query = zone == ZoneInfo.defaultID ? "" : "?zone=" + (zone.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? zone)
                let socket = try WebSocketClient(server: configuration.server, path: "/api/v1/events" + query)
                defer { socket.close() }
                lock.withLock { connected = true }
                while !stopFlag.isSet, let text = try socket.nextText() {
                    guard JSONNesting.isShallow(text), let event = try? JSONDecoder().decode(Event.self, from: Data(text.utf8)) else { continue }
                    apply(event)
                    if let wanted = roomZone(), wanted != zone {
                        zone = wanted
                        moved = true
                        break
                    }
                }
            } catch {
                log.debug("events: \(error)")
            }
            lock.withLock { connected = false }
            if !moved { Thread.sleep(forTimeInterval: 1) }
        }
    }

    /// The zone the screen's room is in, once the room is known.
    private func roomZone() -> String? {
        guard let room = configuration.room?.lowercased() else { return nil }
        return lock.withLock {
            rooms.first { $0.name.lowercased() == room || $0.key.lowercased() == room }.map { $0.zone ?? ZoneInfo.defaultID }
        }
    }

    private func apply(_ event: Event) {
        lock.withLock {
            switch event.change {
            case let .hello(nowPlaying, _, rooms, lyrics):
                (self.nowPlaying, self.rooms, self.lyrics) = (nowPlaying, rooms, lyrics)
            case let .nowPlaying(nowPlaying): self.nowPlaying = nowPlaying
            case let .trackChanged(_, nowPlaying, lyrics): (self.nowPlaying, self.lyrics) = (nowPlaying, lyrics)
            case let .volume(rooms): self.rooms = rooms
            case let .roomJoined(room), let .room(room), let .roomLeft(room):
                rooms.removeAll { $0.key == room.key }
                rooms.append(room)
            case .state, .trackEnded, .queue, .feedback, .zones: break
            }
        }
    }
}
