extension Transport {
    /// The shell's decoder reached the end of `itemID`; its last frame is heard just before
    /// `end`. The queue decides what follows: the same epoch goes on with it, gaplessly, or
    /// (at the end of the queue) the epoch ends there.
    public mutating func trackEnded(itemID: Int, at end: CoordinatorTime) -> [TransportAction] {
        guard case .running(var segments, nil) = mode, segments.last?.itemID == itemID else { return [] }
        failures = 0
        // A track played to its end since: the failure before it is old news (a queue that
        // then runs out has stopped, not failed).
        lastFailure = nil
        guard let next = queue.advance(automatic: true) else {
            mode = .running(segments: segments, end: end)
            return [.cut(epoch: epoch, at: end)]
        }
        segments.append(TimelineSegment(epoch: epoch, itemID: next.id, position: 0, at: end))
        mode = .running(segments: segments, end: nil)
        return [.continueWith(itemID: next.id)]
    }

    /// The shell could not open or decode `itemID` (it names the reason). The next item
    /// takes its place at the same instant; when every item has failed in a row, the
    /// transport stops.
    public mutating func trackFailed(itemID: Int, reason: String, now: CoordinatorTime) -> [TransportAction] {
        lastFailure = reason
        failures += 1
        guard case .running(var segments, nil) = mode, let failed = segments.last, failed.itemID == itemID else {
            return []
        }
        segments.removeLast()
        let next = failures < queue.items.count ? queue.advance(automatic: false) : nil
        guard let next else {
            mode = segments.isEmpty ? .idle(.stopped, position: 0) : .running(segments: segments, end: failed.at)
            return [.cut(epoch: epoch, at: failed.at)]
        }
        let replacement = TimelineSegment(epoch: failed.epoch, itemID: next.id, position: 0, at: failed.at)
        segments.append(replacement)
        mode = .running(segments: segments, end: nil)
        // The first of its epoch starts it (an epoch lined up anew after a queue edit, too).
        let first = !segments.dropLast().contains { $0.epoch == failed.epoch }
        return first ? [.start(replacement)] : [.continueWith(itemID: next.id)]
    }

    /// `itemID` is streaming, but parted from the timeline (a live input's writer paused,
    /// or its clock runs apart from ours; a remote source ran dry): the epoch is cut at
    /// `time` and a new one goes on with the same item from there, at `position` when
    /// given (where a source that ran dry had reached), else its position running on.
    public mutating func realign(itemID: Int, at time: CoordinatorTime, position resume: MediaFrames? = nil) -> [TransportAction] {
        guard case let .running(segments, nil) = mode, let last = segments.last, last.itemID == itemID else { return [] }
        let at = max(time, last.at)
        var (actions, position) = cut(at: at)
        guard !actions.isEmpty else { return [] }
        if let resume { position = resume }
        epoch &+= 1
        let segment = TimelineSegment(epoch: epoch, itemID: itemID, position: position, at: at)
        mode = .running(segments: [segment], end: nil)
        return actions + [.start(segment)]
    }

    /// Lets time pass: a queue that ran out becomes stopped, and segments no longer heard
    /// are forgotten.
    public mutating func tick(now: CoordinatorTime) {
        guard case let .running(segments, end) = mode else { return }
        if let end, now >= end {
            mode = .idle(.stopped, position: 0)
            return
        }
        let heard = segments.lastIndex { $0.at <= now } ?? 0
        if heard > 0 { mode = .running(segments: Array(segments[heard...]), end: end) }
    }
}
