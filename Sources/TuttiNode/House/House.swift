import Foundation
import Synchronization
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiSecurity

/// One zone's part of the house: its transport and queue, its sender, what its remote
/// sources are doing, and what it last published.
struct ZonePlay {
    var transport: Transport
    /// Its sender (nil until the coordinator starts one; a house tested alone has none).
    var player: Player?
    /// Its stream's SSRC, once its sender runs (0 before).
    var ssrc: UInt32 = 0
    /// How the remote sources are doing, by item, as the player last said; and where the
    /// position stood when the current one ran dry (the rooms are silent since).
    var streams: [Int: StreamStatus] = [:]
    var dryAt: (itemID: Int, elapsed: Double)?
    /// Epoch ends to send again (loss happens), and when.
    var resends: [(at: Int64, epoch: UInt32, end: CoordinatorTime)] = []
    var published: NowPlaying?
    /// The latency its live input should have, from its rooms' reports (made with the first
    /// report, when the house fits it: `House.liveLatency`), and the one in force, as its
    /// player last said (nil: the house's).
    var tuner: LatencyTuner?
    var latency: Int64?
    /// The latencies in force over the last seconds (when each took over), oldest first.
    var latencies: [(at: Int64, latency: Int64)] = []

    /// The least latency in force over the `span` ns before `time` (the house's `floor`
    /// before the player told any): a room's headroom covers its packets of the last seconds,
    /// and while the latency grew the worst of them went out at a shorter one.
    func leastLatency(since span: Int64, at time: Int64, floor: Int64) -> Int64 {
        let from = time - span
        let before = latencies.last { $0.at <= from }?.latency ?? (latencies.isEmpty ? latency ?? floor : floor)
        return latencies.filter { $0.at > from }.map(\.latency).reduce(before, min)
    }
}

/// The coordinator's house: its zones (each with its transport and queue, and its sender),
/// the rooms, the feedback, the saved state and the event stream, owned by one actor. The
/// control API calls it; the zones' players and the clock service tell it what happened
/// through its notices (in order); its service lets time pass (scheduled changes, rooms
/// that leave, settings to deliver).
///
/// Nothing in it waits on a disk: tags, lyrics and artwork are read, and the state is
/// written, on threads of their own (`Blocking`), while the actor serves other callers.
/// Every change that is acknowledged is on disk first.
public actor House: ControlService {
    nonisolated let clock: any MonotonicClock
    /// The zones, the default one first, and what each plays.
    var zoneList: ZoneList
    var plays: [String: ZonePlay]
    /// A live input's latency (ns): the house's (`--latency-ms`), and the most a zone's may
    /// grow to when it is fitted to the network (nil: it is fixed).
    var liveLatency: (floor: Int64, cap: Int64?) = (150_000_000, nil)
    /// Starts and ends the zones' senders (the coordinator's).
    var senders: (any ZoneSenders)?
    var registry: RoomRegistry
    var feedbackLog: FeedbackLog
    /// How loudness is evened out (ReplayGain): the players apply it before encoding.
    var loudnessSetting: ReplayGain
    nonisolated let library = TrackLibrary()
    nonisolated let lyricsLibrary: LyricsLibrary
    nonisolated let token: String
    /// The house key and the members (pairing makes them, revoking forgets them), and the
    /// pairing code open now (if any).
    nonisolated let keyring: HouseKeyring
    nonisolated var houseKey: HouseKey { keyring.houseKey }
    var pairing = PairingWindow()
    /// Calibrations begun lately, by id (their recordings may still come).
    var calibrations: [String: CalibrationPlan] = [:]
    /// What their recordings said, by id.
    var calibrationOutcomes: [String: CalibrationOutcome] = [:]
    nonisolated let messenger: RoomMessenger
    /// Hands a Sendspin room's settings to its session (the coordinator's Sendspin server).
    var sendspinDelivery: (@Sendable (_ key: String, _ settings: RoomSettings) -> Void)?
    private var sendspinRooms: SendspinRooms?
    nonisolated let log = Log("coordinator")
    nonisolated let version: String
    /// The house's name, in its status (the web remote shows it).
    nonisolated let name: String

    // Events, and the zone each subscriber follows.
    var subscribers: [UUID: (zone: String, continuation: AsyncStream<Event>.Continuation)] = [:]

    // Saving.
    nonisolated let saver: StateSaver
    var lastSaved: Int64?
    /// Changes counted, so that the newest state wins on disk.
    var saveVersion = 0

    var lastDelivery: [String: Int64] = [:]

    /// What the players and the clock service tell the house, in the order they told it.
    nonisolated let notices: AsyncStream<Notice>
    private nonisolated let noticeInbox: AsyncStream<Notice>.Continuation
    /// Notices told so far (a simulated house serves as many as were told, at each instant).
    nonisolated let noticesTold = Atomic<Int>(0)

    /// Reads the saved house, and the tags and lyrics of its queues (before it serves anyone).
    /// `saving`: where the state is written (tests hold it up). `replayGain`: the setting
    /// the coordinator was started with, which wins over the saved one (else the saved one,
    /// else `ReplayGain.standard`). `clock`: the coordinator's.
    init(store: StateStore, messenger: RoomMessenger, version: String, name: String = "tutti", lyricsFolder: String? = nil,
         replayGain: ReplayGain? = nil, saving: DispatchQueue = DispatchQueue(label: "tutti.state"),
         clock: any MonotonicClock, keyring: HouseKeyring? = nil) throws {
        self.clock = clock
        self.keyring = try keyring ?? store.keyring(sealsStream: true, loadedAt: clock.nanosecondsNow())
        lyricsLibrary = LyricsLibrary(folder: lyricsFolder)
        self.messenger = messenger
        self.version = version
        self.name = name
        token = try store.token()
        let saved = store.load() ?? HouseState()
        zoneList = ZoneList(saved: (saved.zones ?? []).map(\.info))
        var plays = [ZoneInfo.defaultID: ZonePlay(transport: Transport(queue: saved.queue, pausedAt: saved.position, epoch: saved.epoch))]
        for zone in saved.zones ?? [] where zoneList.contains(id: zone.id) && zone.id != ZoneInfo.defaultID {
            plays[zone.id] = ZonePlay(transport: Transport(queue: zone.queue, pausedAt: zone.position, epoch: zone.epoch))
        }
        self.plays = plays
        registry = RoomRegistry(saved: saved.rooms)
        registry.keep(zones: Set(zoneList.ids))
        // The zones' streams are new in every run: every room is told its own again.
        registry.renewAll()
        feedbackLog = saved.feedback
        loudnessSetting = replayGain ?? saved.replayGain ?? .standard
        saver = StateSaver(store: store, queue: saving)
        (notices, noticeInbox) = AsyncStream<Notice>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let items = plays.values.flatMap(\.transport.queue.items)
        library.suggest(items.map { PlaylistParser.Entry(location: $0.path, title: $0.title) })
        Self.warm(items.map(\.path), library, lyricsLibrary)
    }

    /// A live input's latency is `floor` (ns), or fitted to the rooms' network up to `cap`.
    func setLiveLatency(floor: Int64, cap: Int64?) {
        liveLatency = (floor, cap.map { max(floor, $0) })
    }

    /// Starts a sender for every zone, with `senders` (the coordinator's), and for every
    /// zone made from now on.
    /// Where Sendspin rooms' settings go (`SendspinRooms`).
    func attachSendspin(_ rooms: SendspinRooms) {
        sendspinDelivery = { key, settings in rooms.deliver(key, settings) }
        sendspinRooms = rooms
    }

    /// The Sendspin players paired and waiting (`SendspinRooms`).
    public func sendspinPlayers() async throws(ControlError) -> SendspinPlayersView {
        guard let rooms = sendspinRooms else { throw .conflict("this coordinator serves no Sendspin players (--sendspin-listen off)") }
        return await rooms.players()
    }

    public func pairSendspin(_ request: SendspinPairRequest) async throws(ControlError) -> SendspinPairAnswer {
        guard let rooms = sendspinRooms else { throw .conflict("this coordinator serves no Sendspin players (--sendspin-listen off)") }
        return try await rooms.pair(request)
    }

    public func unpairSendspin(_ player: String) async throws(ControlError) -> SendspinPlayersView {
        guard let rooms = sendspinRooms else { throw .conflict("this coordinator serves no Sendspin players (--sendspin-listen off)") }
        return try await rooms.unpair(player)
    }

    func attach(_ senders: any ZoneSenders) throws {
        self.senders = senders
        for id in zoneList.ids { try startSender(of: id) }
    }

    /// Starts zone `id`'s sender; its news comes back tagged with the zone.
    func startSender(of id: String) throws {
        guard let senders, plays[id] != nil else { return }
        let (ssrc, player) = try senders.start(zone: id) { [weak self] news in self?.tell(.player(news, zone: id)) }
        player.setReplayGain(loudnessSetting)
        plays[id]!.player = player
        plays[id]!.ssrc = ssrc
    }

    /// Reads the tags, length and lyrics of `paths`, so that the house finds them known.
    static func warm(_ paths: [String], _ library: TrackLibrary, _ lyricsLibrary: LyricsLibrary) {
        for path in paths {
            let tags = library.info(path).tags
            _ = lyricsLibrary.lyrics(for: path, tags: tags)
        }
    }

    /// `warm`, on a disk thread.
    func warm(_ paths: [String]) async {
        let (library, lyricsLibrary) = (library, lyricsLibrary)
        await Blocking.run { Self.warm(paths, library, lyricsLibrary) }
    }

    var now: CoordinatorTime { CoordinatorTime(nanoseconds: clock.nanosecondsNow()) }

    /// The id of the zone a caller names (its name or id; nil: the default zone).
    func zoneID(_ zone: String?) throws(ControlError) -> String {
        guard let zone else { return ZoneInfo.defaultID }
        do throws(ZoneError) {
            return try zoneList.find(zone)
        } catch {
            throw ControlError(error)
        }
    }

    // MARK: - Reading

    /// The house's status; for a zone named, with that zone's rooms only.
    public func status(zone: String?) throws(ControlError) -> Status {
        let id = try zoneID(zone)
        let rooms = zone == nil ? roomViews() : roomViews().filter { $0.zone == id }
        return Status(nowPlaying: nowPlaying(at: now, zone: id), rooms: rooms, version: version, house: name, zones: zones())
    }

    public func nowPlaying(zone: String?) throws(ControlError) -> NowPlaying { nowPlaying(at: now, zone: try zoneID(zone)) }

    public func queue(zone: String?) throws(ControlError) -> QueueView { queueView(zone: try zoneID(zone)) }

    public func rooms() -> [RoomView] { roomViews() }

    public func feedback() -> [FeedbackEntry] { feedbackLog.entries }

    public func zones() -> [ZoneView] {
        let t = now
        return zoneList.zones.map { zoneView($0, at: t) }
    }

    func zoneView(_ info: ZoneInfo, at time: CoordinatorTime) -> ZoneView {
        ZoneView(id: info.id, name: info.name, rooms: registry.rooms(in: info.id).map(\.settings.name),
                 nowPlaying: nowPlaying(at: time, zone: info.id), codec: senders?.codec(zone: info.id).rawValue)
    }

    public func lyrics(itemID: Int?, zone: String?) throws(ControlError) -> TrackLyrics? {
        let id = try zoneID(zone)
        let t = now
        let transport = plays[id]!.transport
        let s = transport.snapshot(at: t)
        guard let item = itemID ?? s.item?.id, transport.queue.item(id: item) != nil else { return nil }
        return TrackLyrics(itemID: item, lyrics: lyrics(ofItem: item, zone: id), nowPlaying: nowPlaying(at: t, zone: id))
    }

    public nonisolated func coordinatorTime() -> Int64 { clock.nanosecondsNow() }

    public func artwork(itemID: Int, zone: String?) async throws(ControlError) -> (mimeType: String, data: [UInt8])? {
        guard let path = plays[try zoneID(zone)]!.transport.queue.item(id: itemID)?.path else { return nil }
        let library = library
        guard let picture = await Blocking.run({ library.artwork(path) }) else { return nil }
        return (picture.mimeType, picture.data)
    }

    public nonisolated func authorizes(token candidate: String) -> Bool {
        constantTimeEqual(Array(candidate.utf8)[...], Array(token.utf8)[...])
    }

    func nowPlaying(at time: CoordinatorTime, zone: String) -> NowPlaying {
        let play = plays[zone]!
        let transport = play.transport
        let s = transport.snapshot(at: time)
        var np = NowPlaying(state: s.state, elapsed: s.position.seconds, rate: s.rate,
                            queueCount: transport.queue.items.count, loopMode: transport.queue.loopMode,
                            volume: (registry.groupVolume(in: zone) * 1000).rounded() / 10, muted: registry.groupMuted(in: zone),
                            at: time.nanoseconds, epoch: s.epoch)
        np.replayGain = loudnessSetting
        np.zone = zone
        np.latencyMilliseconds = Double(play.latency ?? liveLatency.floor) / 1e6
        if let item = s.item {
            let info = library.known(item.path)
            np.itemID = item.id
            np.path = item.path
            np.title = info.tags.title ?? ((item.path as NSString).lastPathComponent as NSString).deletingPathExtension
            np.artist = info.tags.artist
            np.album = info.tags.album
            np.albumArtist = info.tags.albumArtist
            np.trackNumber = info.tags.trackNumber
            np.trackCount = info.tags.trackCount
            np.discNumber = info.tags.discNumber
            np.discCount = info.tags.discCount
            np.genre = info.tags.genre
            np.year = info.tags.year
            np.duration = (transport.duration(itemID: item.id) ?? info.length)?.seconds
            np.artworkURL = !info.hasArtwork ? nil : (zone == ZoneInfo.defaultID ? "/api/v1/artwork/\(item.id)"
                : "/api/v1/zones/\(zone)/artwork/\(item.id)") + (info.artworkVersion > 0 ? "?v=\(info.artworkVersion)" : "")
            np.queueIndex = transport.queue.items.firstIndex { $0.id == item.id }
            np.rating = feedbackLog.rating(path: item.path)
            if let lyrics = lyricsLibrary.known(item.path), lyrics.isSynced {
                let at = LyricCursor(lyrics: lyrics).position(atMilliseconds: Int(s.position.count * 1000 / Int64(AudioFormat.sampleRate)))
                np.lyricLine = at.line.map { lyrics.lines[$0].text }
            }
        }
        np.failure = transport.lastFailure
        np.trackOrigin = s.trackOrigin?.nanoseconds
        if np.state == .stopped, np.failure != nil { np.state = .failed }
        if let id = s.item?.id, let stream = play.streams[id] { describe(stream, itemID: id, dryAt: play.dryAt, in: &np) }
        return np
    }

    func queueView(zone: String) -> QueueView {
        let transport = plays[zone]!.transport
        let q = transport.queueAsHeard(at: now)
        let items = q.items.enumerated().map { index, item -> QueueEntry in
            let info = library.known(item.path)
            return QueueEntry(index: index, id: item.id, path: item.path, title: info.tags.title, artist: info.tags.artist,
                              album: info.tags.album,
                              duration: (transport.duration(itemID: item.id) ?? info.length)?.seconds,
                              current: item.id == q.currentID)
        }
        return QueueView(items: items, currentIndex: q.currentIndex, loopMode: q.loopMode)
    }

    func roomViews() -> [RoomView] {
        let t = clock.nanosecondsNow()
        return registry.list.map { room in
            RoomView(key: room.key, name: room.settings.name, connected: room.connected,
                     volume: (room.settings.volume * 1000).rounded() / 10, muted: room.settings.muted,
                     outputDelayMs: room.settings.outputDelayMilliseconds, report: room.report,
                     lastSeenSecondsAgo: room.lastSeen.map { Double(t - $0) / 1e9 }, zone: room.settings.zoneID,
                     holesLastHour: room.report?.holes == nil && room.report?.concealments == nil ? nil : room.holes.lastHour(now: t),
                     calibration: room.settings.calibration)
        }
    }

    // MARK: - The players' news

    func heard(_ news: PlayerNews, zone: String) {
        guard plays[zone] != nil else { return }  // a zone removed meanwhile
        switch news {
        case let .ended(itemID, end):
            execute(plays[zone]!.transport.trackEnded(itemID: itemID, at: end), zone: zone)
        case let .failed(itemID, reason):
            execute(plays[zone]!.transport.trackFailed(itemID: itemID, reason: reason, now: now), zone: zone)
            publish(zone: zone, force: true)
        case let .opened(itemID, length):
            guard let length else { return }
            plays[zone]!.transport.setDuration(itemID: itemID, frames: length)
            if let path = plays[zone]!.transport.queue.item(id: itemID)?.path { library.setLength(length, of: path) }
        case let .realigned(itemID, time, position):
            // The player waits for this answer, even an empty one.
            execute(plays[zone]!.transport.realign(itemID: itemID, at: time, position: position), zone: zone, answering: true)
            publish(zone: zone)
        case let .stream(itemID, status):
            heard(status, of: itemID, zone: zone)
        case let .ranDry(_, epoch, end):
            announceEnd(of: epoch, at: end, zone: zone)
        case let .latency(latency):
            plays[zone]!.latency = latency
            let t = now.nanoseconds
            plays[zone]!.latencies.append((t, latency))
            // What was in force 5 s ago, and everything since.
            if let last = plays[zone]!.latencies.lastIndex(where: { $0.at <= t - 5_000_000_000 }) {
                plays[zone]!.latencies.removeFirst(last)
            }
            publish(zone: zone)
        }
    }

    /// Carries out a zone's transport's actions: its rooms hear of cuts, its player streams
    /// (with the paths of the items it is to open). `answering`: the player waits for
    /// these, even none.
    func execute(_ actions: [TransportAction], zone: String, answering: Bool = false) {
        for case let .cut(epoch, end) in actions { announceEnd(of: epoch, at: end, zone: zone) }
        guard !actions.isEmpty || answering else { return }
        plays[zone]?.player?.perform(actions, paths: paths(for: actions, zone: zone), answering: answering)
    }

    /// After a queue edit: what the zone's player lined up ahead (up to the lookahead)
    /// follows the queue as it now is.
    func lineUpAgain(zone: String) {
        plays[zone]!.transport.configuration.cutLead = registry.commandLead(in: zone)
        execute(plays[zone]!.transport.lineUpAgain(now: now), zone: zone)
    }

    /// Tells a zone's rooms that `epoch` ends at `end` (three copies now, and twice again
    /// soon: loss happens); each keeps the earliest end it hears.
    func announceEnd(of epoch: UInt32, at end: CoordinatorTime, zone: String) {
        messenger.endEpoch(epoch, at: end, rooms: registry.rooms(in: zone).filter(\.connected), copies: 3)
        let t = clock.nanosecondsNow()
        plays[zone]?.resends += [(t + 15_000_000, epoch, end), (t + 40_000_000, epoch, end)]
    }

    private func paths(for actions: [TransportAction], zone: String) -> [Int: String] {
        var paths: [Int: String] = [:]
        for action in actions {
            let id: Int
            switch action {
            case .cut: continue
            case let .start(segment): id = segment.itemID
            case let .continueWith(itemID): id = itemID
            }
            paths[id] = plays[zone]?.transport.queue.item(id: id)?.path
        }
        return paths
    }
}

/// What the house is told from other threads.
public enum Notice: Sendable {
    /// A zone's player's news.
    case player(PlayerNews, zone: String)
    /// A room's report arrived on the clock port, from `address` and `member`, at `time`.
    case report(RoomReport, from: SocketAddress, member: UInt16, at: Int64)
}

extension House {
    /// Tells the house something (any thread; it never waits).
    nonisolated func tell(_ notice: Notice) {
        noticesTold.add(1, ordering: .relaxed)
        noticeInbox.yield(notice)
    }

    /// How often the house lets time pass (`tick`): scheduled changes, rooms that left,
    /// settings to deliver, events, saves.
    static let tickInterval: Int64 = 20_000_000

    /// What a notice says, carried out (`run` serves them in order; a simulated house too).
    func serve(_ notice: Notice) {
        switch notice {
        case let .player(news, zone): heard(news, zone: zone)
        case let .report(report, address, member, time): received(report, from: address, member: member, at: time)
        }
    }

    /// Serves the notices in order, and lets time pass every `tickInterval`, until cancelled.
    func run() async {
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await notice in self.notices { await self.serve(notice) }
            }
            tasks.addTask {
                // Every 20 ms of the house's own clock (the one it was given), not the host's.
                var due = self.clock.nanosecondsNow()
                while !Task.isCancelled {
                    due += Self.tickInterval
                    let rest = due - self.clock.nanosecondsNow()
                    if rest > 0 { try? await Task.sleep(nanoseconds: UInt64(rest)) } else { due = self.clock.nanosecondsNow() }
                    await self.tick()
                }
            }
            await tasks.waitForAll()
        }
    }
}
