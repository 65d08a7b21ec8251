/// The decision half of the coordinator's player: transport commands, the queue and its
/// loop modes in, actions for the streaming shell out. Pure: every time comes in as an
/// argument, so every command can be tested in every state with a manual clock.
///
/// Changes take effect `cutLead` after the command, in every room at once: the current
/// epoch is cut there (the rooms fall silent), and a new one starts there for a start,
/// seek or skip. The state reported changes at once; the position reported is what the
/// rooms hear (from the timeline), and a pause freezes it where the sound stopped.
///
/// The player reads ahead of what is heard (stored audio goes up to a lookahead ahead), so
/// the queue's current item is the one the player reached: it may already be the track
/// after the one heard. `queueAsHeard(at:)` is the queue as the rooms hear it, and a queue
/// edit lines up again what follows (`lineUpAgain(now:)`).
public struct Transport: Sendable {
    public struct Configuration: Sendable {
        /// How far ahead of a command its effect is scheduled: long enough for every room
        /// to hear of it before its sound server needs the audio (nanoseconds).
        public var cutLead: Int64 = 85_000_000
        /// "Previous" restarts the current track when more than this far into it (frames).
        public var restartThreshold = MediaFrames(3 * Int64(AudioFormat.sampleRate))
        public init() {}
    }

    enum Mode: Equatable, Sendable {
        /// Nothing streams: stopped (position 0) or paused at a position of the current item.
        case idle(PlaybackState, position: MediaFrames)
        /// Streaming: the timeline's segments (the first is the epoch's start), and when the
        /// queue runs out, if it does.
        case running(segments: [TimelineSegment], end: CoordinatorTime?)
    }

    public var configuration: Configuration
    public internal(set) var queue: PlayQueue
    var mode: Mode = .idle(.stopped, position: 0)
    public internal(set) var epoch: UInt32 = 0
    /// When the last epoch ended (or will): the next one starts no earlier.
    var lastEnd = CoordinatorTime(nanoseconds: .min)
    /// Track lengths (frames), as the shell learns them.
    private var durations: [Int: MediaFrames] = [:]
    /// Items that cannot seek, and why (a live stream, a server without ranges).
    private var unseekable: [Int: String] = [:]
    /// Items that failed in a row; when every item has, the transport stops.
    var failures = 0
    /// The reason the last track failed, until a command clears it.
    public internal(set) var lastFailure: String?

    public init(queue: PlayQueue = PlayQueue(), configuration: Configuration = Configuration()) {
        self.queue = queue
        self.configuration = configuration
    }

    /// A transport restored from saved state: paused where the house left off (or stopped).
    public init(queue: PlayQueue, pausedAt position: MediaFrames, epoch: UInt32, configuration: Configuration = Configuration()) {
        self.init(queue: queue, configuration: configuration)
        self.epoch = epoch
        mode = position > 0 && queue.current != nil ? .idle(.paused, position: position) : .idle(.stopped, position: 0)
    }

    public mutating func setDuration(itemID: Int, frames: MediaFrames) {
        durations[itemID] = frames
    }

    public func duration(itemID: Int) -> MediaFrames? { durations[itemID] }

    /// The shell learned whether `itemID` can seek (`reason` says why not).
    public mutating func setSeekable(itemID: Int, _ seekable: Bool, reason: String) {
        unseekable[itemID] = seekable ? nil : reason
    }

    /// Why `itemID` cannot seek, if it cannot.
    func seekRefusal(_ item: QueueItem) -> String? {
        item.isLive ? "\(item.path) is a live input" : unseekable[item.id]
    }

    // MARK: - Looking

    public func snapshot(at now: CoordinatorTime) -> TransportSnapshot {
        switch mode {
        case let .idle(state, position):
            return TransportSnapshot(state: state, item: queue.current, position: position, rate: 0,
                                     epoch: epoch, trackOrigin: nil)
        case let .running(segments, end):
            if let end, now >= end {
                return TransportSnapshot(state: .stopped, item: queue.current, position: 0, rate: 0, epoch: epoch, trackOrigin: nil)
            }
            let (segment, position) = heard(in: segments, at: now)
            let state: PlaybackState = now < segments[0].at ? .loading : .playing
            return TransportSnapshot(state: state, item: queue.item(id: segment.itemID), position: position,
                                     rate: state == .playing ? 1 : 0, epoch: segment.epoch, trackOrigin: segment.trackOrigin)
        }
    }

    /// The segment heard at `time` and the media position in it (the first segment's start
    /// while it is still to come).
    func heard(in segments: [TimelineSegment], at time: CoordinatorTime) -> (TimelineSegment, MediaFrames) {
        let segment = segments.last { $0.at <= time } ?? segments[0]
        var position = segment.position + MediaFrames(max(0, AudioFormat.frames(forNanoseconds: time - segment.at)))
        if let duration = durations[segment.itemID] { position = min(position, max(.zero, duration - 1)) }
        return (segment, position)
    }

    // MARK: - Commands

    public mutating func handle(_ command: TransportCommand, now: CoordinatorTime) throws(TransportError) -> [TransportAction] {
        lastFailure = nil
        failures = 0
        switch command {
        case .play: return try play(now: now)
        case .pause: return halt(.paused, now: now)
        case .stop: return halt(.stopped, now: now)
        case .toggle:
            if case .running = mode { return halt(.paused, now: now) }
            return try play(now: now)
        case .next: return try move(now: now) { $0.advance(automatic: false) }
        case .previous:
            let snapshot = self.snapshot(at: now)
            if snapshot.position > configuration.restartThreshold, let item = snapshot.item, seekRefusal(item) == nil {
                return try seek(to: 0, now: now)
            }
            return try move(now: now) { $0.retreat() }
        case let .seek(position): return try seek(to: position, now: now)
        case let .skip(delta):
            let at = effectTime(now)
            let from = heardPosition(at: at)
            let target = max(0, from + delta)
            if let id = heardItemID(at: at), let duration = durations[id], target >= duration {
                return try move(now: now) { $0.advance(automatic: false) }
            }
            return try seek(to: target, now: now)
        case let .playItem(index):
            guard index >= 0, index < queue.items.count else {
                throw .queue(.indexOutOfRange(index: index, count: queue.items.count))
            }
            // Cut first: the cut takes the queue back to the track heard then.
            var actions: [TransportAction] = []
            if case .running = mode { actions = cut(at: effectTime(now)).0 }
            try queueEdit { q throws(QueueError) in try q.select(index: index) }
            return actions + start(position: 0, now: now)
        }
    }

    private mutating func play(now: CoordinatorTime) throws(TransportError) -> [TransportAction] {
        guard case let .idle(state, position) = mode else { return [] }
        if queue.current == nil, queue.advance(automatic: false) == nil { throw .emptyQueue }
        return start(position: state == .paused ? position : 0, now: now)
    }

    /// Pause or stop: the sound stops `cutLead` from now, where the position freezes.
    private mutating func halt(_ state: PlaybackState, now: CoordinatorTime) -> [TransportAction] {
        guard case .running = mode else {
            if state == .stopped { mode = .idle(.stopped, position: 0) }
            return []
        }
        let (actions, position) = cut(at: effectTime(now))
        mode = .idle(state, position: state == .stopped ? 0 : position)
        return actions
    }

    /// Ends the running epoch at `time`: drops the segments after it, takes the queue back to
    /// the item heard then, and leaves the transport paused there. Returns the cut and the
    /// position heard at `time`.
    mutating func cut(at time: CoordinatorTime) -> ([TransportAction], MediaFrames) {
        guard case let .running(segments, end) = mode else { return ([], 0) }
        if let end, end <= time {  // the queue has run out by then
            lastEnd = end
            mode = .idle(.stopped, position: 0)
            return ([], 0)
        }
        let (segment, position) = heard(in: segments, at: time)
        try? queue.rewind(to: segment.itemID)
        lastEnd = time
        mode = .idle(.paused, position: position)
        // The epoch heard then, and any lined up after it (a queue edit's), end there.
        return (Self.epochs(of: segments.filter { $0.at >= segment.at }).map { .cut(epoch: $0, at: time) }, position)
    }

    /// The epochs of `segments`, each once, in order.
    static func epochs(of segments: some Sequence<TimelineSegment>) -> [UInt32] {
        var epochs: [UInt32] = []
        for s in segments where !epochs.contains(s.epoch) { epochs.append(s.epoch) }
        return epochs
    }

    /// Moves the queue (next, previous) and plays, or stays paused or stopped on the new item.
    private mutating func move(now: CoordinatorTime, _ step: (inout PlayQueue) -> QueueItem?) throws(TransportError) -> [TransportAction] {
        guard !queue.isEmpty else { throw .emptyQueue }
        let at = effectTime(now)
        let wasRunning: Bool
        var actions: [TransportAction] = []
        if case .running = mode {
            wasRunning = true
            actions = cut(at: at).0
        } else {
            wasRunning = false
        }
        guard step(&queue) != nil else {
            mode = .idle(.stopped, position: 0)  // the end of the queue, in `once` mode
            return actions
        }
        if wasRunning { return actions + start(position: 0, now: now) }
        if case let .idle(state, _) = mode { mode = .idle(state, position: 0) }
        return actions
    }

    private mutating func seek(to position: MediaFrames, now: CoordinatorTime) throws(TransportError) -> [TransportAction] {
        let at = effectTime(now)
        guard let id = heardItemID(at: at) ?? queue.current?.id else { throw .emptyQueue }
        if let item = queue.item(id: id), let reason = seekRefusal(item) { throw .cannotSeek(reason) }
        if let duration = durations[id], position >= duration || position < 0 {
            throw .seekOutOfRange(requested: position, duration: duration)
        }
        let target = max(0, position)
        guard case .running = mode else {
            mode = .idle(.paused, position: target)
            return []
        }
        let actions = cut(at: at).0
        return actions + start(position: target, now: now)
    }

    /// Starts a new epoch with the queue's current item from `position`, `cutLead` from now
    /// (and no earlier than the last epoch's end).
    mutating func start(position: MediaFrames, now: CoordinatorTime) -> [TransportAction] {
        var actions: [TransportAction] = []
        if case .running = mode { actions = cut(at: effectTime(now)).0 }
        guard let item = queue.current else {
            mode = .idle(.stopped, position: 0)
            return actions
        }
        epoch &+= 1
        let segment = TimelineSegment(epoch: epoch, itemID: item.id, position: position, at: max(effectTime(now), lastEnd))
        mode = .running(segments: [segment], end: nil)
        return actions + [.start(segment)]
    }

    /// When a command given now takes effect.
    func effectTime(_ now: CoordinatorTime) -> CoordinatorTime { now + configuration.cutLead }

    private func heardItemID(at time: CoordinatorTime) -> Int? {
        switch mode {
        case .idle: queue.current?.id
        case let .running(segments, _): heard(in: segments, at: time).0.itemID
        }
    }

    private func heardPosition(at time: CoordinatorTime) -> MediaFrames {
        switch mode {
        case let .idle(_, position): position
        case let .running(segments, _): heard(in: segments, at: time).1
        }
    }

    private mutating func queueEdit(_ body: (inout PlayQueue) throws(QueueError) -> Void) throws(TransportError) {
        do {
            try body(&queue)
        } catch {
            throw .queue(error)
        }
    }
}
