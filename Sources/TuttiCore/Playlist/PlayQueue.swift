/// How the queue goes on when a track ends, or when asked for the next one.
public enum LoopMode: String, Codable, CaseIterable, Sendable {
    /// Play to the end of the queue, then stop.
    case once
    /// Repeat the current track (an explicit "next" still moves on).
    case one
    /// Wrap around from the last track to the first.
    case all
    /// A random order that plays every track once before repeating any, and never the
    /// same track twice in a row (unless the queue holds only one).
    case shuffle
}

/// One entry of the queue. Its `id` is unique within the queue and never reused, so
/// commands and events can name an entry even as the queue is edited around it.
public struct QueueItem: Codable, Equatable, Hashable, Sendable {
    public var id: Int
    public var path: String
    /// The title the playlist it came from gave it (`#EXTINF`, `TitleN=`), if any: shown
    /// until the track's own tags say otherwise, and kept with the queue.
    public var title: String?
    public init(id: Int, path: String, title: String? = nil) {
        self.id = id
        self.path = path
        self.title = title
    }

    /// A live input (`pcm:`): it plays from now, has no length and cannot seek.
    public var isLive: Bool { LiveInput.isLive(path) }
}

/// Why a queue edit was refused.
public enum QueueError: Error, Equatable, Sendable, CustomStringConvertible {
    case noSuchItem(id: Int)
    case indexOutOfRange(index: Int, count: Int)
    case empty

    public var description: String {
        switch self {
        case let .noSuchItem(id): "no queue item with id \(id)"
        case let .indexOutOfRange(index, count):
            count == 0 ? "index \(index) is out of range: the queue is empty"
                : "index \(index) is out of range: the queue's \(count) item\(count == 1 ? " has index 0" : "s have indices 0 to \(count - 1)") (tracks 1 to \(count), counted as people count)"
        case .empty: "the queue is empty"
        }
    }
}

/// The house's queue: its items, which one is current, and the loop mode. Pure state:
/// the transport decides when to move, the queue decides where to.
///
/// In shuffle mode the queue keeps the cycle's order (a permutation of item ids) and its
/// random generator, both saved with it, so a restart resumes the same cycle.
public struct PlayQueue: Codable, Equatable, Sendable {
    /// The most items a queue holds: its state file stays within a few megabytes, and the
    /// API's answer with it (the house refuses an addition past it, naming it).
    public static let capacity = 20_000

    public private(set) var items: [QueueItem] = []
    public private(set) var currentID: Int?
    /// As a music app starts: to the end of the queue, then stop (a house started with
    /// only a library, or a new zone, does not go round).
    public private(set) var loopMode: LoopMode = .once
    /// Shuffle: this cycle's order of item ids, and where the current item is in it.
    private var order: [Int] = []
    private var orderPosition = 0
    private var random: SeededRandom
    private var nextID = 1

    public init(seed: UInt64 = 0x7077_7469) {
        random = SeededRandom(seed: seed)
    }

    public var current: QueueItem? { currentID.flatMap { id in items.first { $0.id == id } } }
    public var currentIndex: Int? { currentID.flatMap { id in items.firstIndex { $0.id == id } } }
    public var isEmpty: Bool { items.isEmpty }

    public func item(id: Int) -> QueueItem? { items.first { $0.id == id } }

    // MARK: - Editing

    public enum Placement: String, Codable, Sendable {
        case end
        case afterCurrent = "next"
        /// Right after the current item, as `next`, and played at once (the house does that).
        case now

        /// Whether the items go right after the current one.
        var isNext: Bool { self != .end }
    }

    /// Adds tracks (with the titles playlists gave them, by path); returns the new items.
    /// The first track added to an empty queue becomes current.
    @discardableResult
    public mutating func add(_ paths: [String], placement: Placement = .end, titles: [String: String] = [:]) -> [QueueItem] {
        let added = paths.map { path -> QueueItem in
            defer { nextID += 1 }
            return QueueItem(id: nextID, path: path, title: titles[path])
        }
        var at = items.count
        if placement.isNext, let index = currentIndex { at = index + 1 }
        items.insert(contentsOf: added, at: at)
        if currentID == nil { currentID = added.first?.id }
        if loopMode == .shuffle {
            for item in added where item.id != currentID {
                // Somewhere in what is still to come this cycle ("next": right after the current).
                let lower = min(orderPosition + 1, order.count)
                let slot = placement.isNext ? lower : Int.random(in: lower...order.count, using: &random)
                order.insert(item.id, at: slot)
            }
            if order.isEmpty, let id = currentID { order = [id]; orderPosition = 0 }
        }
        return added
    }

    /// Removes an item. When it was the current one, the item after it becomes current
    /// (none when it was the last); returns true in that case.
    @discardableResult
    public mutating func remove(id: Int) throws(QueueError) -> Bool {
        guard let index = items.firstIndex(where: { $0.id == id }) else { throw .noSuchItem(id: id) }
        let wasCurrent = id == currentID
        if wasCurrent {
            if loopMode == .shuffle, orderPosition + 1 < order.count {
                currentID = order[orderPosition + 1]
            } else {
                currentID = index + 1 < items.count ? items[index + 1].id : nil
            }
        }
        items.remove(at: index)
        if let at = order.firstIndex(of: id) {
            order.remove(at: at)
            if at < orderPosition { orderPosition -= 1 }
        }
        if let id = currentID, let at = order.firstIndex(of: id) { orderPosition = at }
        return wasCurrent
    }

    /// Moves an item to `index` (its position after the move).
    public mutating func move(id: Int, to index: Int) throws(QueueError) {
        guard let from = items.firstIndex(where: { $0.id == id }) else { throw .noSuchItem(id: id) }
        guard index >= 0, index < items.count else { throw .indexOutOfRange(index: index, count: items.count) }
        let item = items.remove(at: from)
        items.insert(item, at: index)
    }

    public mutating func clear() {
        items.removeAll()
        currentID = nil
        order.removeAll()
        orderPosition = 0
    }

    /// Makes the item at `index` current (to play it).
    public mutating func select(index: Int) throws(QueueError) {
        guard index >= 0, index < items.count else { throw .indexOutOfRange(index: index, count: items.count) }
        currentID = items[index].id
        if loopMode == .shuffle { placeCurrentInOrder() }
    }

    /// Makes `id` current again without disturbing the order: the transport moved on to a
    /// track that was never heard (a pause or a skip came first) and takes it back. In
    /// shuffle mode the item goes back just before the one that replaced it.
    public mutating func rewind(to id: Int) throws(QueueError) {
        guard items.contains(where: { $0.id == id }) else { throw .noSuchItem(id: id) }
        guard id != currentID else { return }
        if loopMode == .shuffle, !order.isEmpty {
            if let at = order.firstIndex(of: id) {
                order.remove(at: at)
                if at < orderPosition { orderPosition -= 1 }
            }
            order.insert(id, at: orderPosition)
        }
        currentID = id
    }

    public mutating func setLoopMode(_ mode: LoopMode) {
        guard mode != loopMode else { return }
        loopMode = mode
        if mode == .shuffle {
            newCycle(startingWith: currentID)
        } else {
            order.removeAll()
            orderPosition = 0
        }
    }

    // MARK: - Moving

    /// Moves to the track that follows the current one, and returns it; nil when the
    /// queue has run out (then the first track is current again, ready to play).
    /// `automatic` is true when the current track ended by itself (`one` repeats it).
    public mutating func advance(automatic: Bool) -> QueueItem? {
        guard !items.isEmpty else { return nil }
        guard let index = currentIndex else {
            currentID = loopMode == .shuffle ? firstOfNewCycle() : items[0].id
            return current
        }
        switch loopMode {
        case .one where automatic:
            return current
        case .once:
            if index + 1 < items.count {
                currentID = items[index + 1].id
                return current
            }
            currentID = items[0].id
            return nil
        case .one, .all:
            currentID = items[(index + 1) % items.count].id
            return current
        case .shuffle:
            if orderPosition + 1 < order.count {
                orderPosition += 1
            } else {
                newCycle(startingWith: nil, avoiding: currentID)
            }
            currentID = order[orderPosition]
            return current
        }
    }

    /// Moves to the track before the current one and returns it (the current one again
    /// when there is none before it and the mode does not wrap).
    public mutating func retreat() -> QueueItem? {
        guard !items.isEmpty else { return nil }
        guard let index = currentIndex else {
            currentID = items[0].id
            return current
        }
        switch loopMode {
        case .shuffle:
            if orderPosition > 0 { orderPosition -= 1 }
            currentID = order[orderPosition]
        case .once:
            currentID = items[max(0, index - 1)].id
        case .one, .all:
            currentID = items[(index - 1 + items.count) % items.count].id
        }
        return current
    }

    // MARK: - Shuffle

    /// A new cycle: every item once, in random order, starting with `first` if given, and
    /// not starting with `avoiding` (the track just played) when there is a choice.
    private mutating func newCycle(startingWith first: Int?, avoiding previous: Int? = nil) {
        var ids = items.map(\.id).filter { $0 != first }
        ids.shuffle(using: &random)
        if let previous, ids.count > 1, ids[0] == previous {
            let swap = Int.random(in: 1..<ids.count, using: &random)
            ids.swapAt(0, swap)
        }
        order = (first.map { [$0] } ?? []) + ids
        orderPosition = 0
    }

    private mutating func firstOfNewCycle() -> Int? {
        newCycle(startingWith: nil)
        return order.first
    }

    /// The current item was chosen by hand: it plays now, right after the one before, and
    /// the rest of the cycle keeps its order.
    private mutating func placeCurrentInOrder() {
        guard let id = currentID else { return }
        guard !order.isEmpty else { order = [id]; orderPosition = 0; return }
        if order[orderPosition] == id { return }
        if let at = order.firstIndex(of: id) {
            order.remove(at: at)
            if at < orderPosition { orderPosition -= 1 }
        }
        order.insert(id, at: orderPosition + 1)
        orderPosition += 1
    }
}
