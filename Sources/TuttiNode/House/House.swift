import Foundation
import Synchronization
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiSecurity

/// The coordinator's house: the transport and its queue, the rooms, the feedback, the
/// saved state and the event stream, behind one lock. The control API calls into it, the
/// player reports to it, and a ticker lets time pass (scheduled changes, rooms that leave,
/// settings to deliver). Every change that is acknowledged is saved first.
public final class House: ControlService, PlayerDelegate, @unchecked Sendable {
    let lock = NSLock()
    let clock = SystemClock()
    var transport: Transport
    var registry: RoomRegistry
    var feedbackLog: FeedbackLog
    let library = TrackLibrary()
    let lyricsLibrary: LyricsLibrary
    let store: StateStore
    let token: String
    /// The house key, for pairing new members, and the pairing code open now (if any).
    let houseKey: HouseKey
    let pairing = Mutex(PairingWindow())
    let messenger: RoomMessenger
    weak var player: Player?
    let log = Log("coordinator")
    let version: String

    // Events.
    var subscribers: [UUID: AsyncStream<Event>.Continuation] = [:]
    var published: NowPlaying?
    var lastSaved = Date.distantPast
    /// Changes counted, for saving newest first; what the critical section asks for after it.
    var saveVersion = 0
    var aftermath = Aftermath()
    let saver: StateSaver
    /// Epoch ends to send again (loss happens), and when.
    var resends: [(at: Int64, epoch: UInt32, end: CoordinatorTime)] = []
    var lastDelivery: [String: Int64] = [:]

    init(store: StateStore, messenger: RoomMessenger, version: String, lyricsFolder: String? = nil) throws {
        self.store = store
        houseKey = try store.houseKey()
        lyricsLibrary = LyricsLibrary(folder: lyricsFolder)
        self.messenger = messenger
        self.version = version
        token = try store.token()
        let saved = store.load() ?? HouseState()
        transport = Transport(queue: saved.queue, pausedAt: saved.position, epoch: saved.epoch)
        registry = RoomRegistry(saved: saved.rooms)
        feedbackLog = saved.feedback
        saver = StateSaver(store: store)
        // Tags, lengths and lyrics are read here and when tracks are added, never under the
        // lock: there the house only looks them up.
        warm(saved.queue.items.map(\.path))
    }

    /// Reads the tags, length and lyrics of `paths` (outside the lock), so that the house
    /// finds them known.
    func warm(_ paths: [String]) {
        for path in paths {
            let tags = library.info(path).tags
            _ = lyricsLibrary.lyrics(for: path, tags: tags)
        }
    }

    var now: CoordinatorTime { CoordinatorTime(nanoseconds: clock.nanosecondsNow()) }

    // MARK: - Reading

    public func status() -> Status {
        locked { Status(nowPlaying: nowPlayingLocked(at: now), rooms: roomViewsLocked(), version: version) }
    }

    public func nowPlaying() -> NowPlaying { locked { nowPlayingLocked(at: now) } }

    public func queue() -> QueueView { locked { queueLocked() } }

    public func rooms() -> [RoomView] { locked { roomViewsLocked() } }

    public func feedback() -> [FeedbackEntry] { locked { feedbackLog.entries } }

    public func lyrics(itemID: Int?) -> TrackLyrics? {
        locked {
            let t = now
            let s = transport.snapshot(at: t)
            guard let id = itemID ?? s.item?.id, transport.queue.item(id: id) != nil else { return nil }
            return TrackLyrics(itemID: id, lyrics: lyricsLocked(id), nowPlaying: nowPlayingLocked(at: t))
        }
    }

    public func coordinatorTime() -> Int64 { clock.nanosecondsNow() }

    public func artwork(itemID: Int) -> (mimeType: String, data: [UInt8])? {
        guard let path = locked({ transport.queue.item(id: itemID)?.path }),
              let picture = library.artwork(path) else { return nil }
        return (picture.mimeType, picture.data)
    }

    public func authorizes(token candidate: String) -> Bool {
        // Constant time: no early exit on the first difference.
        let a = Array(candidate.utf8), b = Array(token.utf8)
        var difference = a.count ^ b.count
        for i in 0..<max(a.count, b.count) {
            difference |= Int((i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0))
        }
        return difference == 0
    }

    func nowPlayingLocked(at time: CoordinatorTime) -> NowPlaying {
        let s = transport.snapshot(at: time)
        var np = NowPlaying(state: s.state, elapsed: Double(s.position) / Double(AudioFormat.sampleRate), rate: s.rate,
                            queueCount: transport.queue.items.count, loopMode: transport.queue.loopMode,
                            volume: (registry.groupVolume * 1000).rounded() / 10, muted: registry.groupMuted,
                            at: time.nanoseconds, epoch: s.epoch)
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
        return np
    }

    func queueLocked() -> QueueView {
        let q = transport.queue
        let items = q.items.enumerated().map { index, item -> QueueEntry in
            let info = library.known(item.path)
            return QueueEntry(index: index, id: item.id, path: item.path, title: info.tags.title, artist: info.tags.artist,
                              album: info.tags.album,
                              duration: (transport.duration(itemID: item.id) ?? info.length).map { Double($0) / 48_000 },
                              current: item.id == q.currentID)
        }
        return QueueView(items: items, currentIndex: q.currentIndex, loopMode: q.loopMode)
    }

    func roomViewsLocked() -> [RoomView] {
        let t = clock.nanosecondsNow()
        return registry.list.map { room in
            RoomView(key: room.key, name: room.settings.name, connected: room.connected,
                     volume: (room.settings.volume * 1000).rounded() / 10, muted: room.settings.muted,
                     outputDelayMs: room.settings.outputDelayMilliseconds, report: room.report,
                     lastSeenSecondsAgo: room.lastSeen.map { Double(t - $0) / 1e9 })
        }
    }

    // MARK: - The player's questions

    func path(ofItem id: Int) -> String? {
        locked { transport.queue.item(id: id)?.path }
    }

    func trackEnded(itemID: Int, at end: CoordinatorTime) {
        locked {
            execute(transport.trackEnded(itemID: itemID, at: end))
        }
    }

    func trackFailed(itemID: Int, reason: String) {
        locked {
            execute(transport.trackFailed(itemID: itemID, reason: reason, now: now))
            publishLocked(force: true)
        }
    }

    func trackOpened(itemID: Int, length: Int64?) {
        guard let length else { return }
        locked {
            transport.setDuration(itemID: itemID, frames: length)
            if let path = transport.queue.item(id: itemID)?.path { library.setLength(length, of: path) }
        }
    }

    func liveRealigned(itemID: Int, at time: CoordinatorTime) {
        locked { execute(transport.realign(itemID: itemID, at: time)) }
    }

    /// Carries out the transport's actions: rooms hear of cuts, the player streams.
    func execute(_ actions: [TransportAction]) {
        for case let .cut(epoch, end) in actions {
            let rooms = registry.connected
            later { [messenger] in messenger.endEpoch(epoch, at: end, rooms: rooms, copies: 3) }
            let t = clock.nanosecondsNow()
            resends += [(t + 15_000_000, epoch, end), (t + 40_000_000, epoch, end)]
        }
        player?.perform(actions)
    }
}
