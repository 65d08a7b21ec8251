import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiSecurity

/// The coordinator's house: the transport and its queue, the rooms, the feedback, the
/// saved state and the event stream, owned by one actor. The control API calls it; the
/// player and the clock service tell it what happened through its notices (in order); its
/// service lets time pass (scheduled changes, rooms that leave, settings to deliver).
///
/// Nothing in it waits on a disk: tags, lyrics and artwork are read, and the state is
/// written, on threads of their own (`Blocking`), while the actor serves other callers.
/// Every change that is acknowledged is on disk first.
public actor House: ControlService {
    nonisolated let clock = SystemClock()
    var transport: Transport
    var registry: RoomRegistry
    var feedbackLog: FeedbackLog
    /// How loudness is evened out (ReplayGain): the player applies it before encoding.
    var loudnessSetting: ReplayGain
    nonisolated let library = TrackLibrary()
    nonisolated let lyricsLibrary: LyricsLibrary
    nonisolated let token: String
    /// The house key, for pairing new members, and the pairing code open now (if any).
    nonisolated let houseKey: HouseKey
    var pairing = PairingWindow()
    nonisolated let messenger: RoomMessenger
    var player: Player?
    nonisolated let log = Log("coordinator")
    nonisolated let version: String
    /// The house's name, in its status (the web remote shows it).
    nonisolated let name: String

    // Events.
    var subscribers: [UUID: AsyncStream<Event>.Continuation] = [:]
    var published: NowPlaying?

    /// How the remote sources are doing, by item, as the player last said; and where the
    /// position stood when the current one ran dry (the rooms are silent since).
    var streams: [Int: StreamStatus] = [:]
    var dryAt: (itemID: Int, elapsed: Double)?

    // Saving.
    nonisolated let saver: StateSaver
    var lastSaved = Date.distantPast
    /// Changes counted, so that the newest state wins on disk.
    var saveVersion = 0

    /// Epoch ends to send again (loss happens), and when.
    var resends: [(at: Int64, epoch: UInt32, end: CoordinatorTime)] = []
    var lastDelivery: [String: Int64] = [:]

    /// What the player and the clock service tell the house, in the order they told it.
    nonisolated let notices: AsyncStream<Notice>
    private nonisolated let noticeInbox: AsyncStream<Notice>.Continuation

    /// Reads the saved house, and the tags and lyrics of its queue (before it serves anyone).
    /// `saving`: where the state is written (tests hold it up). `replayGain`: the setting
    /// the coordinator was started with, which wins over the saved one (else the saved one,
    /// else `ReplayGain.standard`).
    init(store: StateStore, messenger: RoomMessenger, version: String, name: String = "tutti", lyricsFolder: String? = nil,
         replayGain: ReplayGain? = nil, saving: DispatchQueue = DispatchQueue(label: "tutti.state")) throws {
        houseKey = try store.houseKey()
        lyricsLibrary = LyricsLibrary(folder: lyricsFolder)
        self.messenger = messenger
        self.version = version
        self.name = name
        token = try store.token()
        let saved = store.load() ?? HouseState()
        transport = Transport(queue: saved.queue, pausedAt: saved.position, epoch: saved.epoch)
        registry = RoomRegistry(saved: saved.rooms)
        feedbackLog = saved.feedback
        loudnessSetting = replayGain ?? saved.replayGain ?? .standard
        saver = StateSaver(store: store, queue: saving)
        (notices, noticeInbox) = AsyncStream<Notice>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        library.suggest(saved.queue.items.map { PlaylistParser.Entry(location: $0.path, title: $0.title) })
        Self.warm(saved.queue.items.map(\.path), library, lyricsLibrary)
    }

    /// The player that carries out the transport's actions.
    func attach(_ player: Player) {
        self.player = player
        player.setReplayGain(loudnessSetting)
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

    // MARK: - Reading

    public func status() -> Status {
        Status(nowPlaying: nowPlaying(at: now), rooms: roomViews(), version: version, house: name)
    }

    public func nowPlaying() -> NowPlaying { nowPlaying(at: now) }

    public func queue() -> QueueView { queueView() }

    public func rooms() -> [RoomView] { roomViews() }

    public func feedback() -> [FeedbackEntry] { feedbackLog.entries }

    public func lyrics(itemID: Int?) -> TrackLyrics? {
        let t = now
        let s = transport.snapshot(at: t)
        guard let id = itemID ?? s.item?.id, transport.queue.item(id: id) != nil else { return nil }
        return TrackLyrics(itemID: id, lyrics: lyrics(ofItem: id), nowPlaying: nowPlaying(at: t))
    }

    public nonisolated func coordinatorTime() -> Int64 { clock.nanosecondsNow() }

    public func artwork(itemID: Int) async -> (mimeType: String, data: [UInt8])? {
        guard let path = transport.queue.item(id: itemID)?.path else { return nil }
        let library = library
        guard let picture = await Blocking.run({ library.artwork(path) }) else { return nil }
        return (picture.mimeType, picture.data)
    }

    public nonisolated func authorizes(token candidate: String) -> Bool {
        constantTimeEqual(Array(candidate.utf8)[...], Array(token.utf8)[...])
    }

    func nowPlaying(at time: CoordinatorTime) -> NowPlaying {
        let s = transport.snapshot(at: time)
        var np = NowPlaying(state: s.state, elapsed: Double(s.position) / Double(AudioFormat.sampleRate), rate: s.rate,
                            queueCount: transport.queue.items.count, loopMode: transport.queue.loopMode,
                            volume: (registry.groupVolume() * 1000).rounded() / 10, muted: registry.groupMuted(),
                            at: time.nanoseconds, epoch: s.epoch)
        np.replayGain = loudnessSetting
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
            np.duration = (transport.duration(itemID: item.id) ?? info.length).map { Double($0) / Double(AudioFormat.sampleRate) }
            np.artworkURL = info.hasArtwork ? "/api/v1/artwork/\(item.id)" : nil
            np.queueIndex = transport.queue.items.firstIndex { $0.id == item.id }
            np.rating = feedbackLog.rating(path: item.path)
            if let lyrics = lyricsLibrary.known(item.path), lyrics.isSynced {
                let at = LyricCursor(lyrics: lyrics).position(atMilliseconds: Int(s.position * 1000 / Int64(AudioFormat.sampleRate)))
                np.lyricLine = at.line.map { lyrics.lines[$0].text }
            }
        }
        np.failure = transport.lastFailure
        np.trackOrigin = s.trackOrigin?.nanoseconds
        if np.state == .stopped, np.failure != nil { np.state = .failed }
        if let id = s.item?.id, let stream = streams[id] { describe(stream, itemID: id, in: &np) }
        return np
    }

    func queueView() -> QueueView {
        let q = transport.queueAsHeard(at: now)
        let items = q.items.enumerated().map { index, item -> QueueEntry in
            let info = library.known(item.path)
            return QueueEntry(index: index, id: item.id, path: item.path, title: info.tags.title, artist: info.tags.artist,
                              album: info.tags.album,
                              duration: (transport.duration(itemID: item.id) ?? info.length).map { Double($0) / 48_000 },
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
                     lastSeenSecondsAgo: room.lastSeen.map { Double(t - $0) / 1e9 })
        }
    }

    // MARK: - The player's news

    func heard(_ news: PlayerNews) {
        switch news {
        case let .ended(itemID, end):
            execute(transport.trackEnded(itemID: itemID, at: end))
        case let .failed(itemID, reason):
            execute(transport.trackFailed(itemID: itemID, reason: reason, now: now))
            publish(force: true)
        case let .opened(itemID, length):
            guard let length else { return }
            transport.setDuration(itemID: itemID, frames: length)
            if let path = transport.queue.item(id: itemID)?.path { library.setLength(length, of: path) }
        case let .realigned(itemID, time, position):
            // The player waits for this answer, even an empty one.
            execute(transport.realign(itemID: itemID, at: time, position: position), answering: true)
            publish()
        case let .stream(itemID, status):
            heard(status, of: itemID)
        case let .ranDry(_, epoch, end):
            announceEnd(of: epoch, at: end)
        }
    }

    /// Carries out the transport's actions: rooms hear of cuts, the player streams (with
    /// the paths of the items it is to open). `answering`: the player waits for these,
    /// even none.
    func execute(_ actions: [TransportAction], answering: Bool = false) {
        for case let .cut(epoch, end) in actions { announceEnd(of: epoch, at: end) }
        guard !actions.isEmpty || answering else { return }
        player?.perform(actions, paths: paths(for: actions), answering: answering)
    }

    /// After a queue edit: what the player lined up ahead (up to the lookahead) follows the
    /// queue as it now is.
    func lineUpAgain() {
        transport.configuration.cutLead = registry.commandLead()
        execute(transport.lineUpAgain(now: now))
    }

    /// Tells the rooms that `epoch` ends at `end` (three copies now, and twice again soon:
    /// loss happens); each keeps the earliest end it hears.
    func announceEnd(of epoch: UInt32, at end: CoordinatorTime) {
        messenger.endEpoch(epoch, at: end, rooms: registry.connected, copies: 3)
        let t = clock.nanosecondsNow()
        resends += [(t + 15_000_000, epoch, end), (t + 40_000_000, epoch, end)]
    }

    private func paths(for actions: [TransportAction]) -> [Int: String] {
        var paths: [Int: String] = [:]
        for action in actions {
            let id: Int
            switch action {
            case .cut: continue
            case let .start(segment): id = segment.itemID
            case let .continueWith(itemID): id = itemID
            }
            paths[id] = transport.queue.item(id: id)?.path
        }
        return paths
    }
}

/// What the house is told from other threads.
public enum Notice: Sendable {
    case player(PlayerNews)
    /// A room's report arrived on the clock port, from `address`, at `time`.
    case report(RoomReport, from: SocketAddress, at: Int64)
}

extension House {
    /// Tells the house something (any thread; it never waits).
    nonisolated func tell(_ notice: Notice) {
        noticeInbox.yield(notice)
    }

    /// Serves the notices in order, and lets time pass every 20 ms, until cancelled.
    func run() async {
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await notice in self.notices {
                    switch notice {
                    case let .player(news): await self.heard(news)
                    case let .report(report, address, time): await self.received(report, from: address, at: time)
                    }
                }
            }
            tasks.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(20))
                    await self.tick()
                }
            }
            await tasks.waitForAll()
        }
    }
}
