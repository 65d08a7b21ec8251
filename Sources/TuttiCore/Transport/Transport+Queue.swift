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
    /// the end of the queue); removing one lined up to follow it takes it back (the track
    /// heard plays on, and what the queue now says follows it).
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
        let (heardSegment, position) = heard(in: segments, at: at)
        if heardSegment.itemID != itemID, let lined = segments.firstIndex(where: { $0.itemID == itemID }), lined > 0, segments[lined].at > at {
            // Lined up, not heard yet: what follows the one before it is lined up again.
            try? queue.rewind(to: segments[lined - 1].itemID)
            _ = try? queue.remove(id: itemID)
            return relineUp(keeping: Array(segments[..<lined]), at: segments[lined].at)
        }
        let (actions, _) = cut(at: at)
        _ = try? queue.remove(id: itemID)
        if heardSegment.itemID == itemID {
            return actions + start(position: 0, now: now)
        }
        return actions + start(position: position, now: now)
    }

    /// The queue as the rooms hear it at `now`: its current item is the one heard (the
    /// player may have reached the next, a lookahead ahead).
    public func queueAsHeard(at now: CoordinatorTime) -> PlayQueue {
        guard case let .running(segments, _) = mode else { return queue }
        var q = queue
        try? q.rewind(to: heard(in: segments, at: now).0.itemID)
        return q
    }

    /// After a queue edit (a track added to play next, a move, a new loop mode): what the
    /// player lined up to follow the track heard is checked against what the queue now says
    /// follows it. From the first that differs, if it is not heard before a command given
    /// now would take effect, the stream is cut where it was to begin and a new epoch goes on
    /// there with what follows now (the rooms fade across that one change). Where the queue
    /// had run out, what now follows goes on at its end.
    public mutating func lineUpAgain(now: CoordinatorTime) -> [TransportAction] {
        guard case let .running(segments, end) = mode, let last = segments.last else { return [] }
        let effect = effectTime(now)
        var probe = queue
        for i in segments.indices.dropFirst() where segments[i].at > effect {
            try? probe.rewind(to: segments[i - 1].itemID)
            if probe.advance(automatic: true)?.id != segments[i].itemID {
                return relineUp(keeping: Array(segments[..<i]), at: segments[i].at)
            }
        }
        if let end, end > effect {
            try? probe.rewind(to: last.itemID)
            if probe.advance(automatic: true) != nil { return relineUp(keeping: segments, at: end) }
        }
        return []
    }

    /// Ends what was lined up from `boundary` on (every epoch heard from there) and goes on
    /// there, in a new epoch, with what the queue says follows the last segment kept.
    private mutating func relineUp(keeping kept: [TimelineSegment], at boundary: CoordinatorTime) -> [TransportAction] {
        guard case let .running(segments, _) = mode, let before = kept.last else { return [] }
        var epochs = Self.epochs(of: segments.dropFirst(kept.count))
        if epochs.isEmpty { epochs = [epoch] }  // the queue had run out: its end was told already
        let actions = epochs.map { TransportAction.cut(epoch: $0, at: boundary) }
        try? queue.rewind(to: before.itemID)
        lastEnd = boundary
        guard let next = queue.advance(automatic: true) else {
            mode = .running(segments: kept, end: boundary)
            return actions
        }
        epoch &+= 1
        let segment = TimelineSegment(epoch: epoch, itemID: next.id, position: 0, at: boundary)
        mode = .running(segments: kept + [segment], end: nil)
        return actions + [.start(segment)]
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
