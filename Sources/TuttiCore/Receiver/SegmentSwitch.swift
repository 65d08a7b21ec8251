/// The receiver's segment stage: which epoch of the stream plays, which is held to follow
/// it (a resume, seek or skip the coordinator started), and where each ends. Each packet
/// that passed the gate is routed to its segment: a new stream (another SSRC) or a timeline
/// that jumped replaces the current one at once; a newer epoch is held as the next (only
/// the newest); an older one, or one whose end has come, is late. The engine switches at
/// the instant the coordinator chose: the current segment's end, or the next one's start.
///
/// A room that moves to another zone (`follow`) hands over: the stream playing ends a
/// little ahead, faded out, and the new zone's stream is held as the next segment until
/// then; it starts where it is at that instant (in step with the zone's other rooms),
/// faded in. While the room follows a zone's stream, packets of other streams are not
/// its own (another zone's).
struct SegmentSwitch {
    enum Routed: Equatable {
        case accepted, duplicate, late, overflow
        /// It began a new current segment (playback stops, and starts again with it).
        case replaced
    }

    /// How far ahead of the sound heard last a handover to another stream happens: time
    /// for the new stream's packets sent before (the lookahead) to be resent.
    static let handoverLead: Int64 = 60_000_000

    let capacity: Int
    let tolerance: Int64
    /// The epoch playing (or about to), and the one after it.
    var current: PlayoutSegment?
    var upcoming: PlayoutSegment?
    /// Epochs the coordinator has ended, and when; their later packets are dropped.
    private var endedEpochs: [(epoch: UInt32, at: CoordinatorTime)] = []
    /// The stream (SSRC) of the room's zone, when the coordinator named one.
    private(set) var stream: UInt32?
    /// Handing over to another stream: the current segment ends then, the next one is the
    /// new stream's.
    private var handover = false

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
        if handover, let playing = current, playing.ssrc != packet.ssrc {
            // The new stream, held until the current one's (near) end.
            if upcoming?.ssrc != packet.ssrc { upcoming = PlayoutSegment(ssrc: packet.ssrc, epoch: packet.epoch, capacity: capacity) }
            let fit = upcoming!.insert(packet, presentation: presentation, tolerance: tolerance)
            guard fit == .offTimeline else { return (.accepted, fit) }
            // Its timeline moved on (a cut in that zone meanwhile): the newest holds.
            upcoming = PlayoutSegment(ssrc: packet.ssrc, epoch: packet.epoch, capacity: capacity)
            return (.accepted, upcoming!.insert(packet, presentation: presentation, tolerance: tolerance))
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

    /// Whether a packet of stream `ssrc` is the room's (its zone's stream, or any when the
    /// coordinator named none).
    func isOwn(_ ssrc: UInt32) -> Bool { stream.map { $0 == ssrc } ?? true }

    /// The room plays stream `ssrc` from now on (nil: any). When another stream plays, it
    /// ends `handoverLead` after `heard` (the sound heard last; nil: none yet, it ends at
    /// once), faded out, and the new one follows.
    mutating func follow(_ ssrc: UInt32?, heard: CoordinatorTime?) {
        guard ssrc != stream else { return }
        stream = ssrc
        // Any stream (a house of one zone again): the one playing plays on.
        guard let playing = current, let ssrc, ssrc != playing.ssrc else {
            upcoming = upcoming.flatMap { isOwn($0.ssrc) ? $0 : nil }
            return
        }
        upcoming = nil
        guard let heard else {
            current = nil
            return
        }
        let at = heard + Self.handoverLead
        current!.end = min(current!.end ?? at, at)
        handover = true
    }

    /// A new stream (the coordinator restarted) or a timeline that jumped: it plays instead.
    private mutating func replaceCurrent(with packet: RTPPacket) {
        handover = false
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
        if let next = upcoming?.start, upcoming!.ssrc == current.ssrc, heard >= next { return true }
        return !playing && current.jitter.isEmpty
    }

    /// Moves to the next segment when the current one's time is up at `heard`; true when it did.
    mutating func switchIfOver(at heard: CoordinatorTime, playing: Bool) -> Bool {
        guard currentIsOver(at: heard, playing: playing) else { return false }
        if handover {
            // The handover's time: the new stream plays on, whatever it holds.
            handover = false
            current = upcoming
            upcoming = nil
            return true
        }
        guard upcoming != nil else { return false }
        current = upcoming
        upcoming = nil
        return true
    }

    /// Where the current segment's sound must stop: its end or the next one's start.
    var boundary: CoordinatorTime? {
        switch (current?.end, upcoming?.ssrc == current?.ssrc ? upcoming?.start : nil) {
        case let (end?, next?): min(end, next)
        case let (end?, nil): end
        case let (nil, next?): next
        case (nil, nil): nil
        }
    }

    static func isNewer(_ a: UInt32, than b: UInt32) -> Bool { a.isAfter(b) }
}
