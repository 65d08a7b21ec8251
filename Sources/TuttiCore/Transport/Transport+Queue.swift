/// Queue edits that may touch what is playing.
extension Transport {
    @discardableResult
    public mutating func add(_ paths: [String], placement: PlayQueue.Placement = .end, titles: [String: String] = [:]) -> [QueueItem] {
        queue.add(paths, placement: placement, titles: titles)
    }

    public mutating func move(itemID: Int, to index: Int) throws(TransportError) {
        do { try queue.move(id: itemID, to: index) } catch { throw .queue(error) }
    }

    public mutating func setLoopMode(_ loopMode: LoopMode) {
        queue.setLoopMode(loopMode)
    }

    /// Removes an item. Removing the track being heard moves on to the next one (or stops at
    /// the end of the queue); removing the one lined up to follow it gaplessly takes it back.
    public mutating func remove(itemID: Int, now: CoordinatorTime) throws(TransportError) -> [TransportAction] {
        guard queue.item(id: itemID) != nil else { throw .queue(.noSuchItem(id: itemID)) }
        guard case let .running(segments, _) = mode, segments.contains(where: { $0.itemID == itemID }) else {
            let wasCurrent = (try? queue.remove(id: itemID)) ?? false
            if wasCurrent, case let .idle(state, _) = mode {
                mode = .idle(queue.current == nil ? .stopped : state, position: 0)
            }
            return []
        }
        let at = effectTime(now)
        let heardID = heard(in: segments, at: at).0.itemID
        let (actions, position) = cut(at: at)
        _ = try? queue.remove(id: itemID)
        if heardID == itemID {
            return actions + start(position: 0, now: now)
        }
        return actions + start(position: position, now: now)
    }

    /// Empties the queue; whatever plays stops.
    public mutating func clear(now: CoordinatorTime) -> [TransportAction] {
        var actions: [TransportAction] = []
        if case .running = mode { actions = cut(at: effectTime(now)).0 }
        queue.clear()
        mode = .idle(.stopped, position: 0)
        return actions
    }
}
