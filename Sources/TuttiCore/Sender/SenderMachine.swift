/// The coordinator's sender for one stream, as a machine: the transport's actions, what the
/// source gave and the time come in; what the sender's shell is to do next comes out, one
/// step at a time (open a source, read it, encode a frame, send a packet, tell the house,
/// wait). It owns the stream's timeline: the packetizer (sequence numbers, timestamps,
/// presentation times), the epoch being sent, when each packet goes (`SendSchedule`),
/// where a live input's frames go (`LiveTimeline`) and whether a paced source lost its
/// place (`DryWatch`). The shell owns what does input and output: the source, the sample
/// chain and its buffer, the encoder, the sockets, the house's inbox and the waiting.
///
/// The shell asks `next(now:)`, does what it says, and reports back with the matching call
/// (`opened`, `read`, `finished`, `encoded`...). Every step that changes the shell's
/// buffer is a step (`restart`, `skipFrame`, `encode`, `finish`), so the machine always
/// knows how many frames it holds. Pure: times come in as arguments.
public struct SenderMachine: Sendable {
    public struct Configuration: Sendable {
        /// Presentation time minus send time for live audio (ns).
        public var latency: Int64 = 150_000_000
        /// How far ahead of being heard stored audio is sent (ns; never less than `latency`).
        public var lookahead: Int64 = 2_000_000_000
        /// Frames per packet (48 kHz).
        public var frameSize = 960
        /// The packets' RTP payload type: the zone's codec's (`StreamCodec`).
        public var payloadType = RTPPacket.defaultPayloadType
        /// Frames the encoder delays its output by.
        public var codecDelay = 0
        /// The RTCP canonical name in sender reports.
        public var cname = "tutti"
        /// A start's first packet that goes out later than this after the start was taken
        /// (its source was slow to open) may reach the rooms after they needed it: the
        /// command's lead leaves them 15 ms to spare. The start is then placed again (ns).
        public var startSlack: Int64 = 10_000_000
        public init() {}

        /// Frames of a live input the shell keeps after it encoded them (48 kHz): what went
        /// out past an epoch's cut (a pause, a realignment) is sent again in the next epoch,
        /// up to the lookahead ahead (a writer that runs ahead is sent that far, `SendSchedule`).
        public var keptFrames: Int { Int(lookahead / 1_000_000 * Int64(AudioFormat.sampleRate) / 1_000) + frameSize * 2 }
    }

    /// What the source the shell opened is like.
    public struct SourceFacts: Sendable, Equatable {
        /// It makes audio in real time by itself (a pipe): its frames are placed on arrival.
        public var isLive: Bool
        /// Stored audio (a file, local or remote): it may go up to the lookahead ahead.
        public var isStored: Bool
        /// Let go while no epoch streams (a live stream stops listening while paused).
        public var closesWhenIdle: Bool
        public init(isLive: Bool, isStored: Bool, closesWhenIdle: Bool = false) {
            self.isLive = isLive
            self.isStored = isStored
            self.closesWhenIdle = closesWhenIdle
        }
    }

    /// What the shell is to do next.
    public enum Step: Sendable {
        /// A new epoch: reset the encoder; unless `keepBuffer`, empty the sample buffer and
        /// the chain (a live input, or a paced source that ran dry, goes on where it is).
        case restart(keepBuffer: Bool)
        /// Put back the last `frames` frames encoded, ahead of the buffer (a live input's, sent
        /// past the last epoch's cut and never heard): they go first in the new epoch.
        case rewind(frames: Int)
        /// The packetizer of a new epoch (the SDP file describes it).
        case epoch(StreamPacketizer)
        /// Open queue item `itemID` at media `position` and report `opened` or `openFailed`.
        /// `reuse`: the source open now is this item's; if it seeks in place, move it there
        /// instead (nothing to report unless that fails and it is opened anew).
        case open(itemID: Int, position: MediaFrames, reuse: Bool)
        /// Read the source into the buffer and report `read` or `readFailed`.
        case read
        /// The source is done with: flush what the chain still holds, pad the buffer to a
        /// whole packet and report `finished`.
        case finish
        /// Drop the buffer's first packet of frames.
        case skipFrame
        /// Encode the buffer's first packet of frames (dropping them) and report `encoded`.
        case encode
        /// Stretch the live input by `ppm` from now on (positive: more frames come out than
        /// go in), so that its writer's clock keeps to the house's (`LiveTimeline`), and
        /// while its latency grows or shrinks (`setLatency`).
        case stretch(ppm: Double)
        /// Let the source go.
        case close
        case send(RTPPacket)
        case report(RTCPSenderReport)
        case news(PlayerNews)
        /// Tell the house and wait for its answer (`answered`), until `until` at most.
        case ask(PlayerNews, until: Int64)
        /// Something worth a line in the log, and something that went wrong.
        case note(String)
        case problem(String)
        /// Nothing to do until `until` (coordinator ns), or until the house acts.
        case wait(until: Int64)
    }

    public let configuration: Configuration
    public private(set) var packetizer: StreamPacketizer
    public private(set) var schedule: SendSchedule
    private var live: LiveTimeline
    /// How a live input's writer gives its frames, as last seen.
    public var liveWriter: LiveTimeline.Writer { live.writer }
    private var dry: DryWatch
    private var outbox: [Step] = []
    /// The item being sent, and what its source is like (nil: no source open).
    public private(set) var itemID: Int?
    public private(set) var source: SourceFacts?
    /// Frames the shell's buffer holds (48 kHz, not yet encoded).
    public private(set) var buffered: Int64 = 0
    /// When the last read that gave frames returned (coordinator ns): a live input's newest
    /// frame arrived then.
    private var arrivedAt: Int64 = 0
    /// What the source's last read that gave frames added to the buffer (a live input's
    /// writer writes about as much each time).
    private var lastChunk: Int64 = 0
    /// The stretch the shell was last told (ppm), and whether the log was told the input's
    /// writer runs ahead.
    private var stretching = 0.0
    private var toldAhead = false
    /// A live input is heard `latency` after it arrives (ns): `configuration.latency` until the
    /// house sets another (`setLatency`), and then on its way there at `latencyRate` (a
    /// fraction: the input is stretched by as much meanwhile), as of `latencyMovedAt`.
    public private(set) var latency: Int64
    private var latencyTarget: Int64
    private var latencyRate = 0.0
    private var latencyMovedAt: Int64?
    /// The latency the house was last told of.
    private var latencyTold: Int64
    /// How fast a paced writer's latency grows: its input is heard 2 % slower meanwhile (a
    /// third of a semitone), which adds 125 ms in about 6 s; and shrinks: 0.5 % faster,
    /// 100 ms in 20 s.
    public static let latencyGrowth = 0.02
    public static let latencyShrink = 0.005
    /// When the epoch's first frame is heard, its media position, and how many frames the
    /// source has given in it.
    private var epochStart = CoordinatorTime(nanoseconds: 0)
    private var epochPosition: MediaFrames = 0
    private var epochFrames: Int64 = 0
    /// A live source's first frame of the epoch placed the timeline.
    private var anchored = false
    /// Frames encoded in this epoch (a live input's may be put back, `rewind`).
    private var encodedInEpoch: Int64 = 0
    /// The chain had nothing more to flush (until something changes).
    private var drained = false
    /// Waiting for the house's answer to a realignment, and what it was about.
    private var asking: Asking?
    private enum Asking: Sendable { case live, dry, late }
    /// When the running epoch's start was taken, and its item, until its first packet goes.
    private var startTaken: (at: Int64, itemID: Int)?
    /// The answer being taken is to a paced source that ran dry: its epoch goes on from the
    /// frames it holds.
    private var resumingInPlace = false
    /// Whether what is sent is stored audio (kept from the source for the frames after it).
    private var stored = false
    private var pending: RTPPacket?
    private var nextReport: Int64 = 0

    public init(configuration: Configuration, ssrc: UInt32, initialSequence: UInt16, initialTimestamp: UInt32) {
        self.configuration = configuration
        packetizer = StreamPacketizer(ssrc: ssrc, payloadType: configuration.payloadType, initialSequence: initialSequence, initialTimestamp: initialTimestamp,
                                      origin: CoordinatorTime(nanoseconds: 0), codecDelay: Int64(configuration.codecDelay))
        schedule = SendSchedule(latency: configuration.latency, lookahead: configuration.lookahead)
        live = LiveTimeline(latency: configuration.latency, frameSize: configuration.frameSize)
        dry = DryWatch(latency: configuration.latency)
        latency = configuration.latency
        latencyTarget = configuration.latency
        latencyTold = configuration.latency
    }

    /// A live input is to be heard `target` after it arrives (ns; the house fits it to the
    /// zone's network, `LatencyTuner`). Its latency moves there without a gap, its input
    /// stretched meanwhile (the timeline's frames keep to their arrivals, whatever its
    /// writer: a paced writer taken for one that runs ahead, for the backlog it started
    /// with, would be late by a jump); an input with no timeline yet takes it at once.
    public mutating func setLatency(_ target: Int64) {
        latencyTarget = max(0, target)
    }

    private var codecDelay: Int64 { AudioFormat.nanoseconds(forFrames: Int64(configuration.codecDelay)) }
    private var frameSize: Int64 { Int64(configuration.frameSize) }

    // MARK: - Events

    /// The transport's actions, in order. True when the epoch changed (nothing prepared for
    /// the old one goes out).
    @discardableResult
    public mutating func take(_ actions: [TransportAction], now: Int64) -> Bool {
        var changed = false
        for action in actions {
            switch action {
            case let .cut(epoch, at):
                if epoch == packetizer.epoch { schedule.cut(at: at) }
            case let .start(segment):
                changed = true
                start(segment, now: now)
            case let .continueWith(id):
                open(id, from: 0, reuse: false)
            }
        }
        if changed { pending = nil }
        return changed
    }

    /// The house answered a realignment with `actions` (maybe none), or did not in time.
    public mutating func answered(_ actions: [TransportAction], now: Int64) {
        guard let kind = asking else {
            take(actions, now: now)
            return
        }
        asking = nil
        resumingInPlace = kind == .dry
        let changed = take(actions, now: now)
        resumingInPlace = false
        // A start placed again is not placed a third time.
        if kind == .late { startTaken = nil }
        // A live frame that parted from the timeline has no place unless a new epoch starts with it.
        if kind == .live, !changed {
            dropFrame()
            outbox.append(.skipFrame)
        }
    }

    /// The shell opened `itemID`'s source; it is `length` frames long if the source says.
    public mutating func opened(itemID id: Int, _ facts: SourceFacts, length: MediaFrames?) {
        if id == itemID { source = facts }
        if facts.isLive {
            live.restart()
            stretching = 0
            toldAhead = false
        }
        outbox.append(.news(.opened(itemID: id, length: length)))
    }

    /// `itemID` could not be opened (nor the open one moved and opened again).
    public mutating func openFailed(itemID id: Int, reason: String) {
        if id == itemID { source = nil }
        outbox.append(.news(.failed(itemID: id, reason: reason)))
    }

    /// The source gave `frames` media frames (0: its end; nil: nothing yet, a live input
    /// paused or a remote source loading) at `now`; the shell's buffer holds `buffered` frames
    /// now (a rate converter's output need not match the media frames one for one). `facts`:
    /// what the source is like now (a remote source learns whether it is a station once it
    /// connects).
    public mutating func read(_ frames: Int?, buffered: Int64, now: Int64, facts: SourceFacts? = nil) {
        if let frames, frames > 0 { lastChunk = max(0, buffered - self.buffered) }
        self.buffered = buffered
        if let facts, source != nil { source = facts }
        guard let id = itemID, let facts = source else { return }
        guard let frames else {
            // Once its next packet is due, the rooms hear where its audio ends; a live
            // input's, once its writer paused (a frame that came now would start a new epoch).
            let t = CoordinatorTime(nanoseconds: now), next = packetizer.nextPresentationTime
            let paused = anchored && live.paused(now: t, planned: next + codecDelay, bufferedFrames: buffered, chunk: lastChunk,
                                                 growing: latencyRate > 0)
            let end = !facts.isLive ? dry.ranDry(now: t, next: next) : paused ? dry.writerPaused(next: next) : nil
            if let end { outbox.append(.news(.ranDry(itemID: id, epoch: packetizer.epoch, at: end))) }
            return
        }
        epochFrames += Int64(frames)
        if frames > 0 { arrivedAt = now }
        if frames == 0 { ended(id, facts) }
    }

    /// Reading the source failed; `atOnce`: before it gave any frame (the item fails).
    public mutating func readFailed(reason: String, atOnce: Bool) {
        guard let id = itemID, let facts = source else { return }
        outbox.append(.problem("\(reason); going on with the next track"))
        if atOnce {
            source = nil
            outbox.append(.close)
            outbox.append(.news(.failed(itemID: id, reason: reason)))
            return
        }
        ended(id, facts)
    }

    /// The chain was flushed: the buffer now holds `frames` (whole packets).
    public mutating func finished(frames: Int64) {
        buffered = frames
        drained = frames == 0
    }

    /// The shell encoded the buffer's first frames (nil: the encoder failed; they are gone).
    public mutating func encoded(_ payload: [UInt8]?) {
        buffered = max(0, buffered - frameSize)
        encodedInEpoch += frameSize
        guard let payload else { return }
        pending = packetizer.packetize(payload, frames: configuration.frameSize)
    }

    // MARK: - Steps

    /// What the shell is to do next, at coordinator time `now`.
    public mutating func next(now: Int64) -> Step {
        while true {
            if !outbox.isEmpty { return outbox.removeFirst() }
            guard schedule.streaming else {
                if let facts = source, facts.closesWhenIdle {
                    source = nil  // a live stream, paused: stop listening
                    return .close
                }
                return .wait(until: now + 100_000_000)
            }
            if pending == nil {
                if let step = produce(now: now) { return step }
                if pending == nil {
                    // Nothing to send and nothing to decode: the epoch's last frame has gone out
                    // and only its cut is left, or the house is deciding what comes next.
                    if source == nil { return .wait(until: now + 100_000_000) }
                    continue
                }
            }
            guard let packet = pending, let presentation = packet.presentationTime else {
                pending = nil
                continue
            }
            // A live input whose writer has run ahead for a while is sent as far ahead as
            // stored audio: it waits for the stream, and a room rides out a network that holds
            // its packets.
            if let source { stored = source.isStored || (source.isLive && live.sendsAhead(now: now)) }
            switch schedule.decide(presentation: presentation, now: now, stored: stored) {
            case .over:
                pending = nil
                continue
            case let .wait(due):
                return .wait(until: due)
            case .send:
                if let taken = startTaken {
                    startTaken = nil
                    if let step = placeAgain(presentation: presentation, taken: taken, now: now) { return step }
                }
                pending = nil
                if now >= nextReport {
                    nextReport = now + 1_000_000_000
                    outbox.append(.report(packetizer.senderReport(cname: configuration.cname)))
                }
                return .send(packet)
            }
        }
    }

    /// The step that brings the next packet nearer; nil when there is none to make now (the
    /// caller looks at what it has).
    private mutating func produce(now: Int64) -> Step? {
        if buffered < frameSize {
            guard source != nil, itemID != nil else {
                // The end (no track follows): the chain's last frames, then the last frame
                // padded; not before the epoch is cut (the next track may follow on).
                guard schedule.cut != nil, !drained else { return nil }
                return .finish
            }
            return .read
        }
        return encodeStep(now: now)
    }

    /// Encode the next frame, unless a live input's timeline or a dry source's return says
    /// otherwise first.
    private mutating func encodeStep(now: Int64) -> Step? {
        guard let id = itemID else { return .encode }
        let at = CoordinatorTime(nanoseconds: now)
        if let facts = source, facts.isLive {
            moveLatency(now: now)
            let planned = anchored ? packetizer.nextPresentationTime + codecDelay : nil
            let arrived = CoordinatorTime(nanoseconds: arrivedAt)
            if dry.stalled, dry.announced {
                // The rooms heard where its audio ended (its writer paused): what it gives
                // now starts a new epoch, heard when its arrival says.
                let heard = max(live.heard(arrived: arrived, bufferedFrames: buffered), at + latency / 2)
                live.writerPaused()
                asking = .live
                outbox.append(.ask(.realigned(itemID: id, at: heard, position: nil), until: now + 100_000_000))
                return .note("the live input has audio again after a pause of its writer; realigning")
            }
            if schedule.isPastCut(planned ?? live.heard(arrived: arrived, bufferedFrames: buffered)) {
                schedule.rest()  // the epoch ends before this frame (a pause): stop reading
                return nil
            }
            let decision = live.decide(planned: planned, start: epochStart, now: at, arrived: arrived, bufferedFrames: buffered,
                                       growing: latencyRate > 0)
            if live.latency != latency {
                // The stretch gave less than it counted: the latency is what the timeline holds.
                latency = live.latency
                schedule.setLatency(latency)
            }
            let stretch = live.stretch + latencyRate * 1e6
            if abs(stretch - stretching) >= 1 || (stretch == 0) != (stretching == 0) {
                stretching = stretch
                outbox.append(.stretch(ppm: stretching))
            }
            if !toldAhead, live.sendsAhead(now: now) {
                toldAhead = true
                outbox.append(.note("its writer runs ahead of real time: it is read at the stream's rate and sent as far ahead as a file"))
            }
            switch decision {
            case .send:
                break
            case .skip:
                dropFrame()
                return .skipFrame
            case let .anchor(heard):
                packetizer.restart(at: heard - codecDelay, epoch: packetizer.epoch)
                anchored = true
            case let .realign(heard):
                let late = (heard - planned!) / 1_000_000
                asking = .live
                outbox.append(.ask(.realigned(itemID: id, at: heard, position: nil), until: now + 100_000_000))
                return .note("the live input parted from the timeline by \(late) ms (its writer paused, or the sender stalled); realigning")
            }
        }
        if source?.isLive == false, dry.stalled, dry.resumed(now: at, next: packetizer.nextPresentationTime) {
            // Frames again, too late for the timeline: the source goes on from the frame it
            // reached, `latency` from now, in a new epoch (the rooms faded out together where
            // its audio ended, and fade in again together).
            let position = epochPosition + MediaFrames(epochFrames - buffered)
            asking = .dry
            outbox.append(.ask(.realigned(itemID: id, at: at + configuration.latency, position: position), until: now + 100_000_000))
            return .note("the stream has audio again (it was loading or ran dry): it goes on \(configuration.latency / 1_000_000) ms from now")
        }
        return .encode
    }

    /// Moves a live input's latency towards the house's target, at `now`.
    private mutating func moveLatency(now: Int64) {
        let elapsed = latencyMovedAt.map { max(0, now - $0) } ?? 0
        latencyMovedAt = now
        var moved = latency
        if anchored {
            // As far as the stretch took it since the last frame, not past the target.
            moved += Int64((latencyRate * Double(elapsed)).rounded())
            moved = latencyRate > 0 ? min(moved, latencyTarget) : latencyRate < 0 ? max(moved, latencyTarget) : moved
            // Within half a millisecond it is there (the stretch's control takes up the rest).
            if abs(latencyTarget - moved) <= 500_000 { moved = latencyTarget }
            latencyRate = latencyTarget > moved ? Self.latencyGrowth : latencyTarget < moved ? -Self.latencyShrink : 0
        } else {
            moved = latencyTarget
            latencyRate = 0
        }
        if moved != latency {
            latency = moved
            live.setLatency(moved)
            schedule.setLatency(moved)
        }
        if abs(latency - latencyTold) >= 10_000_000 || (latency == latencyTarget && latencyTold != latency) {
            latencyTold = latency
            outbox.append(.news(.latency(latency)))
        }
    }

    // MARK: - Epochs and items

    private mutating func start(_ segment: TimelineSegment, now: Int64) {
        // A live input goes on where it is: what it has buffered keeps its arrival time. So
        // does a paced source that ran dry, from the frame it had reached.
        let goesOn = segment.itemID == itemID && (source?.isLive == true || resumingInPlace)
        if !goesOn { buffered = 0 }
        outbox.append(.restart(keepBuffer: goesOn))
        if goesOn, source?.isLive == true, anchored, live.writer == .ahead {
            // What the last epoch sent past its cut was never heard: it goes again, in whole
            // packets (the rooms fade out at the cut and in at the start). (A paced writer's
            // timeline is placed by arrival: its new epoch goes on with what arrives.)
            let next = packetizer.nextPresentationTime + codecDelay
            let past = schedule.cut.map { AudioFormat.frames(forNanoseconds: max(0, next - $0)) } ?? 0
            let packets = (past + frameSize - 1) / frameSize * frameSize
            let frames = min(packets, encodedInEpoch, Int64(configuration.keptFrames) / frameSize * frameSize)
            if frames > 0 {
                buffered += frames
                outbox.append(.rewind(frames: Int(frames)))
            }
        }
        encodedInEpoch = 0
        epochStart = segment.at
        epochPosition = segment.position
        epochFrames = goesOn && source?.isLive == false ? buffered : 0
        anchored = false
        drained = false
        dry.reset()
        packetizer.restart(at: segment.at - codecDelay, epoch: segment.epoch)
        outbox.append(.epoch(packetizer))
        schedule.start(now: now)
        startTaken = goesOn ? nil : (now, segment.itemID)
        guard !goesOn else { return }
        open(segment.itemID, from: segment.position, reuse: segment.itemID == itemID && source != nil)
    }

    /// The epoch's first packet is ready at `now`. When its source took so long to open
    /// and give its first frames (a large file's index, a slow disk, a loaded machine) that
    /// the rooms may get it after they needed it, the house is asked to start the epoch
    /// again, `latency` from now, from the same position: the track starts whole, a little
    /// later, rather than with its first tens of milliseconds cut off. (A start far enough
    /// ahead, past the latency, has time to spare; a live source is placed by its arrival.)
    private mutating func placeAgain(presentation: CoordinatorTime, taken: (at: Int64, itemID: Int), now: Int64) -> Step? {
        let late = now - taken.at
        guard let id = itemID, id == taken.itemID, let facts = source, !facts.isLive,
              late > configuration.startSlack, presentation.nanoseconds - now < configuration.latency else { return nil }
        asking = .late
        let at = CoordinatorTime(nanoseconds: now) + configuration.latency
        outbox.append(.ask(.realigned(itemID: id, at: at, position: epochPosition), until: now + 100_000_000))
        return .note("its first audio was ready \(late / 1_000_000) ms after the start, too late for the rooms; "
            + "it starts \(configuration.latency / 1_000_000) ms from now instead")
    }

    private mutating func open(_ id: Int, from position: MediaFrames, reuse: Bool) {
        if !reuse { source = nil }
        itemID = id
        drained = false
        outbox.append(.open(itemID: id, position: position, reuse: reuse))
    }

    /// The source ended (or failed after giving frames): the house hears where its last
    /// frame is heard, and the chain's last frames follow unless the next track comes.
    private mutating func ended(_ id: Int, _ facts: SourceFacts) {
        source = nil
        outbox.append(.close)
        // A live input's frames are not counted from the epoch's start: it ends where its
        // timeline is, after the frames it still holds.
        let held = AudioFormat.nanoseconds(forFrames: buffered)
        let end = facts.isLive && anchored ? packetizer.nextPresentationTime + codecDelay + held
            : epochStart + AudioFormat.nanoseconds(forFrames: epochFrames)
        outbox.append(.news(.ended(itemID: id, at: end)))
    }

    private mutating func dropFrame() {
        buffered = max(0, buffered - frameSize)
    }
}
