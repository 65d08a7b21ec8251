/// The receiver's segment stage: which epoch of the stream plays, which is held to follow
/// it (a resume, seek or skip the coordinator started), and where each ends. Each packet
/// that passed the gate is routed to its segment: a new stream (another SSRC) or a timeline
/// that jumped replaces the current one at once; a newer epoch is held as the next (only
/// the newest); an older one, or one whose end has come, is late. The engine switches at
/// the instant the coordinator chose: the current segment's end, or the next one's start.
struct SegmentSwitch {
    enum Routed: Equatable {
        case accepted, duplicate, late, overflow
        /// It began a new current segment (playback stops, and starts again with it).
        case replaced
    }

    let capacity: Int
    let tolerance: Int64
    /// The epoch playing (or about to), and the one after it.
    var current: PlayoutSegment?
    var upcoming: PlayoutSegment?
    /// Epochs the coordinator has ended, and when; their later packets are dropped.
    private var endedEpochs: [(epoch: UInt32, at: CoordinatorTime)] = []

    init(capacity: Int, tolerance: Int64) {
        self.capacity = capacity
        self.tolerance = tolerance
    }

    /// Packets buffered in both segments.
    var buffered: Int { (current?.jitter.count ?? 0) + (upcoming?.jitter.count ?? 0) }

    /// Routes a packet presented at `presentation` to its segment.
    mutating func route(_ packet: RTPPacket, presentation: CoordinatorTime) -> (Routed, PlayoutSegment.Fit?) {
        if let end = endTime(of: packet.epoch), presentation >= end {
            return (.late, nil)  // after its epoch's end: a pause or a cut came first
        }
        if current == nil || current!.ssrc != packet.ssrc {
            replaceCurrent(with: packet)
            return (.replaced, current!.insert(packet, presentation: presentation, tolerance: tolerance))
        }
        if let epoch = packet.epoch, let playing = current!.epoch, epoch != playing {
            guard Self.isNewer(epoch, than: playing) else { return (.late, nil) }  // a stale epoch
            if upcoming.map({ $0.epoch.map { Self.isNewer(epoch, than: $0) } ?? true }) ?? true {
                upcoming = PlayoutSegment(ssrc: packet.ssrc, epoch: epoch, capacity: capacity)
                upcoming!.end = endTime(of: epoch)
            } else if upcoming?.epoch != epoch {
                return (.late, nil)
            }
            return (.accepted, upcoming!.insert(packet, presentation: presentation, tolerance: tolerance))
        }
        let fit = current!.insert(packet, presentation: presentation, tolerance: tolerance)
        guard fit == .offTimeline else { return (.accepted, fit) }
        replaceCurrent(with: packet)
        return (.replaced, current!.insert(packet, presentation: presentation, tolerance: tolerance))
    }

    /// A new stream (the coordinator restarted) or a timeline that jumped: it plays instead.
    private mutating func replaceCurrent(with packet: RTPPacket) {
        current = PlayoutSegment(ssrc: packet.ssrc, epoch: packet.epoch, capacity: capacity)
        current!.end = endTime(of: packet.epoch)
        upcoming = nil
    }

    /// The coordinator ended epoch `epoch` at `time`.
    mutating func endEpoch(_ epoch: UInt32, at time: CoordinatorTime) {
        if !endedEpochs.contains(where: { $0.epoch == epoch }) {
            endedEpochs.append((epoch, time))
            if endedEpochs.count > 16 { endedEpochs.removeFirst() }
        }
        if current?.epoch == epoch { current!.end = min(current!.end ?? time, time) }
        if upcoming?.epoch == epoch { upcoming!.end = min(upcoming!.end ?? time, time) }
    }

    /// When the coordinator ended `epoch`, if it has.
    func endTime(of epoch: UInt32?) -> CoordinatorTime? {
        guard let epoch else { return nil }
        return endedEpochs.last { $0.epoch == epoch }?.at
    }

    /// Whether the current segment's time is up at `heard` (its end has come, or the next
    /// segment's start; or it has nothing left and does not play); `playing`: it plays.
    func currentIsOver(at heard: CoordinatorTime, playing: Bool) -> Bool {
        guard let current else { return true }
        if let end = current.end, heard >= end { return true }
        if let next = upcoming?.start, heard >= next { return true }
        return !playing && current.jitter.isEmpty
    }

    /// Moves to the next segment when the current one's time is up at `heard`; true when it did.
    mutating func switchIfOver(at heard: CoordinatorTime, playing: Bool) -> Bool {
        guard upcoming != nil, currentIsOver(at: heard, playing: playing) else { return false }
        current = upcoming
        upcoming = nil
        return true
    }

    /// Where the current segment's sound must stop: its end or the next one's start.
    var boundary: CoordinatorTime? {
        switch (current?.end, upcoming?.start) {
        case let (end?, next?): min(end, next)
        case let (end?, nil): end
        case let (nil, next?): next
        case (nil, nil): nil
        }
    }

    static func isNewer(_ a: UInt32, than b: UInt32) -> Bool { Int32(bitPattern: a &- b) > 0 }
}
