import Foundation
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet

/// What the player tells the house, from its own thread (it never waits for the house,
/// except for its answer to a realignment).
public enum PlayerNews: Sendable, Equatable {
    /// The decoder of `itemID` ended; its last frame is heard just before `at`.
    case ended(itemID: Int, at: CoordinatorTime)
    /// `itemID` could not be opened or decoded at all.
    case failed(itemID: Int, reason: String)
    /// `itemID` opened; its length in frames, if the file says.
    case opened(itemID: Int, length: Int64?)
    /// `itemID` parted from the timeline (a live input's writer paused or its clock runs
    /// apart; a remote source ran dry): a new epoch should go on with it, heard from `at`,
    /// at media position `position` (nil: the position runs on). The house answers with
    /// `perform(_:paths:answering:)`, even with no actions.
    case realigned(itemID: Int, at: CoordinatorTime, position: Int64?)
    /// How the remote source of `itemID` is doing changed (its phase, title or buffer).
    case stream(itemID: Int, StreamStatus)
    /// The paced source of `itemID` ran dry: nothing of epoch `epoch` is heard from `at` on
    /// (the rooms are told, and fade out there together instead of waiting for packets).
    case ranDry(itemID: Int, epoch: UInt32, at: CoordinatorTime)
}

/// The coordinator's sender, on its own thread: carries out the transport's actions (start
/// an epoch, cut it, go on with the next track; the house sends the items' paths with
/// them), reads the source (a file of any format, a remote stream, or a live input that
/// `LiveTimeline` places on the timeline as it arrives), encodes, stamps presentation times
/// and sends each packet ahead of them: stored audio up to `lookahead`, live audio
/// `latency` (`SendSchedule`).
final class Player: @unchecked Sendable {
    struct Configuration {
        var encoder = OpusFrameEncoder.Settings()
        var latency: Int64 = 150_000_000
        /// How far ahead of being heard stored audio is sent (never less than `latency`).
        var lookahead: Int64 = 2_000_000_000
        /// The RTCP canonical name in sender reports.
        var cname = "tutti"
    }

    private let configuration: Configuration
    private let clock = SystemClock()
    private let encoder: OpusFrameEncoder
    private let send: @Sendable (RTPPacket) -> Void
    private let sendReport: @Sendable (RTCPSenderReport) -> Void
    private let onEpoch: @Sendable (StreamPacketizer) -> Void
    private let stopFlag: StopFlag
    /// Where the player's news goes (the house's notices); set before `run`.
    var onNews: @Sendable (PlayerNews) -> Void = { _ in }
    private let log = Log("coordinator")

    // The inbox: actions from the house, and a condition to wake the loop.
    private let condition = NSCondition()
    private var inbox: [TransportAction] = []
    /// The paths of the items the actions name.
    private var paths: [Int: String] = [:]
    /// Answers to realignments received.
    private var answers = 0

    // Streaming state (the player's thread only).
    private var packetizer: StreamPacketizer
    private var source: (any FrameSource)?
    /// Loudness, then the house's rate, between the source and the encoder.
    let chain = SourceChain()
    private let live: LiveTimeline
    /// True once the epoch's first frame of a live source has placed the timeline.
    private var anchored = false
    private var itemID: Int?
    private var pcm: [Float] = []
    private var offset = 0
    /// When the epoch's input frame 0 is heard, its media position, and how many input
    /// frames it has had.
    private var epochStart = CoordinatorTime(nanoseconds: 0)
    private var epochPosition: Int64 = 0
    private var epochFrames: Int64 = 0
    /// Whether a paced source (a remote one) that gave nothing lost its place.
    private var dry: DryWatch
    /// The player asked to go on with its paced source where it is (after it ran dry).
    private var resumingInPlace = false
    /// Which of a remote source's statuses the house hears.
    private var statuses = StatusThrottle()
    /// When each packet goes, and where the epoch ends.
    private var schedule: SendSchedule
    /// Whether what is being sent is stored audio (it may go up to the lookahead ahead); the
    /// source's, kept for the frames after it ends (the converter's last ones).
    private var stored = false
    private var nextReport: Int64 = 0

    init(configuration: Configuration, ssrc: UInt32, stopFlag: StopFlag,
         send: @escaping @Sendable (RTPPacket) -> Void, sendReport: @escaping @Sendable (RTCPSenderReport) -> Void,
         onEpoch: @escaping @Sendable (StreamPacketizer) -> Void = { _ in }) throws {
        self.configuration = configuration
        self.encoder = try OpusFrameEncoder(settings: configuration.encoder)
        self.send = send
        self.sendReport = sendReport
        self.onEpoch = onEpoch
        self.stopFlag = stopFlag
        live = LiveTimeline(latency: configuration.latency)
        dry = DryWatch(latency: configuration.latency)
        schedule = SendSchedule(latency: configuration.latency, lookahead: configuration.lookahead)
        packetizer = StreamPacketizer(ssrc: ssrc, initialSequence: UInt16.random(in: 0...UInt16.max),
                                      initialTimestamp: UInt32.random(in: 0...UInt32.max),
                                      origin: CoordinatorTime(nanoseconds: 0), codecDelay: Int64(encoder.lookahead))
        pcm.reserveCapacity(encoder.settings.frameSize * 8)
    }

    /// How loudness is evened out from now on (the next frames read).
    func setReplayGain(_ setting: ReplayGain) {
        chain.replayGain.withLock { $0 = setting }
    }

    /// Queues actions for the player's thread, with the paths of the items they name.
    /// `answering`: they answer a realignment (which the player waits for).
    func perform(_ actions: [TransportAction], paths: [Int: String] = [:], answering: Bool = false) {
        guard !actions.isEmpty || answering else { return }
        condition.lock()
        inbox += actions
        self.paths.merge(paths) { _, new in new }
        if answering { answers += 1 }
        condition.signal()
        condition.unlock()
    }

    func wake() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// Runs until the stop flag is set.
    func run() {
        var pending: RTPPacket?
        while !stopFlag.isSet {
            if takeActions() { pending = nil }
            guard schedule.streaming else {
                if let s = source, s.closesWhenIdle {
                    source = nil  // a live stream, paused: stop listening
                    log.info("stopped listening to \(s.name)")
                }
                waitForActions(until: clock.nanosecondsNow() + 100_000_000)
                continue
            }
            if pending == nil { pending = nextPacket() }
            guard let packet = pending, let presentation = packet.presentationTime else {
                // Nothing to send and nothing to decode: the epoch's last frame has gone out
                // (the queue ended, or every track failed) and only its cut is left, or the
                // house is deciding what comes next. Rest until it acts (this spun a core).
                if source == nil { waitForActions(until: clock.nanosecondsNow() + 100_000_000) }
                continue
            }
            // Pace: send ahead of the presentation time (stored audio up to the lookahead,
            // live audio the latency); wake for new actions.
            if let source { stored = source.isStored }
            switch schedule.decide(presentation: presentation, now: clock.nanosecondsNow(), stored: stored) {
            case .over:
                pending = nil
                continue
            case let .wait(due):
                waitForActions(until: due)
                continue
            case .send:
                break
            }
            send(packet)
            pending = nil
            let now = clock.nanosecondsNow()
            if now >= nextReport {
                nextReport = now + 1_000_000_000
                sendReport(packetizer.senderReport(cname: configuration.cname))
            }
        }
    }

    private func waitForActions(until deadline: Int64) {
        condition.lock()
        if inbox.isEmpty {
            let wait = Double(max(0, min(deadline - clock.nanosecondsNow(), 200_000_000))) / 1e9
            _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
        }
        condition.unlock()
    }

    /// Waits until the house answers a realignment (answer `seen + 1`), or the deadline.
    private func waitForAnswer(after seen: Int, until deadline: Int64) {
        condition.lock()
        defer { condition.unlock() }
        while answers == seen, !stopFlag.isSet {
            let left = deadline - clock.nanosecondsNow()
            guard left > 0 else { return }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(left) / 1e9))
        }
    }

    /// Carries out queued actions; true when the epoch changed (a packet prepared for the
    /// old one must not go out).
    private func takeActions() -> Bool {
        condition.lock()
        let actions = inbox
        inbox.removeAll()
        condition.unlock()
        var changed = false
        for action in actions {
            switch action {
            case let .cut(epoch, at):
                if epoch == packetizer.epoch { schedule.cut(at: at) }
            case let .start(segment):
                changed = true
                startEpoch(segment)
            case let .continueWith(id):
                open(id, from: 0)
            }
        }
        return changed
    }

    private var codecDelay: Int64 { AudioFormat.nanoseconds(forFrames: Int64(encoder.lookahead)) }

    private func startEpoch(_ segment: TimelineSegment) {
        encoder.reset()
        // A live input goes on where it is: what it has buffered keeps its arrival time. So
        // does a paced source that ran dry, from the frame it had reached.
        let goesOn = segment.itemID == itemID && (source?.isLive == true || resumingInPlace)
        if !goesOn {
            pcm.removeAll(keepingCapacity: true)
            offset = 0
            chain.reset()
        }
        epochStart = segment.at
        epochPosition = segment.position
        epochFrames = goesOn && source?.isLive == false ? Int64((pcm.count - offset) / 2) : 0
        anchored = false
        dry.reset()
        packetizer.restart(at: segment.at - codecDelay, epoch: segment.epoch)
        onEpoch(packetizer)
        schedule.start(now: clock.nanosecondsNow())
        guard !goesOn else { return }
        // A remote file keeps what it has loaded: it moves to the position.
        if segment.itemID == itemID, let s = source, s.seeksInPlace {
            do {
                try s.seek(toFrame: segment.position)
                log.info("playing \(s.name) from \((Double(segment.position) / 48_000).fixed(1)) s")
                return
            } catch {
                log.info("\(error); opening \(s.name) again")
            }
        }
        open(segment.itemID, from: segment.position)
    }

    private func open(_ id: Int, from position: Int64) {
        source = nil
        statuses.reset()
        itemID = id
        condition.lock()
        let known = paths[id]
        if paths.count > 64 { paths = paths.filter { $0.key == id } }  // forget those played long ago
        condition.unlock()
        guard let path = known else {
            onNews(.failed(itemID: id, reason: "queue item \(id) is gone"))
            return
        }
        do {
            let s = try openFrameSource(path)
            if position > 0, !s.isLive { try s.seek(toFrame: position) }
            source = s
            log.info("playing \(s.name)\(position > 0 && !s.isLive ? " from \((Double(position) / 48_000).fixed(1)) s" : "")")
            onNews(.opened(itemID: id, length: s.length))
            report(s, id)
        } catch {
            log.error("\(error); skipping to the next track")
            onNews(.failed(itemID: id, reason: "\(error)"))
        }
    }

    /// Where a live source's next frame goes: false when it was dropped (or the timeline
    /// moved) and the caller should look again.
    private func placeLiveFrame(_ id: Int) -> Bool {
        let frameSize = encoder.settings.frameSize
        let planned = anchored ? packetizer.nextPresentationTime + codecDelay : nil
        let now = CoordinatorTime(nanoseconds: clock.nanosecondsNow())
        let buffered = Int64((pcm.count - offset) / 2)
        if schedule.isPastCut(live.heard(now: now, bufferedFrames: buffered)) {
            schedule.rest()  // the epoch ends before this frame (a pause): stop reading
            return false
        }
        switch live.decide(planned: planned, start: epochStart, now: now, bufferedFrames: buffered) {
        case .send:
            return true
        case .skip:
            offset += frameSize * 2
            return false
        case let .anchor(at):
            packetizer.restart(at: at - codecDelay, epoch: packetizer.epoch)
            anchored = true
            return true
        case let .realign(at):
            let drift = (planned! - at) / 1_000_000
            log.info("\(source?.name ?? "the live input") \(drift > 0 ? "ran ahead of" : "fell behind") the timeline by \(abs(drift)) ms; realigning")
            // Wait for the house's answer (a new epoch, or none when it is about to pause or
            // stop: then the frame has no place).
            let seen = condition.withLock { answers }
            onNews(.realigned(itemID: id, at: at, position: nil))
            waitForAnswer(after: seen, until: clock.nanosecondsNow() + 100_000_000)
            if !takeActions() { offset += frameSize * 2 }
            return false
        }
    }

    /// A paced source that ran dry has frames again, too late for the timeline: it goes on
    /// from the frame it reached, `latency` from now, in a new epoch (the rooms faded out
    /// together where its audio ended, and fade in again together). False when the epoch
    /// changed and the caller should look again.
    private func goOnAfterDry(_ id: Int) -> Bool {
        let now = clock.nanosecondsNow()
        let position = epochPosition + epochFrames - Int64((pcm.count - offset) / 2)
        log.info("\(source?.name ?? "the stream") has audio again (it was loading or ran dry): it goes on \(configuration.latency / 1_000_000) ms from now")
        let seen = condition.withLock { answers }
        resumingInPlace = true
        defer { resumingInPlace = false }
        onNews(.realigned(itemID: id, at: CoordinatorTime(nanoseconds: now + configuration.latency), position: position))
        waitForAnswer(after: seen, until: now + 100_000_000)
        return !takeActions()
    }

    /// Tells the house how a remote source is doing, when that changed.
    private func report(_ source: any FrameSource, _ id: Int) {
        guard let status = source.status, let told = statuses.filter(status, now: clock.nanosecondsNow()) else { return }
        onNews(.stream(itemID: id, told))
    }

    /// Encodes the next frame of the stream; nil when there is nothing to encode yet (the
    /// house is deciding what comes next).
    private func nextPacket() -> RTPPacket? {
        let frameSize = encoder.settings.frameSize
        while pcm.count - offset < frameSize * 2 {
            if offset > 0 {
                pcm.removeFirst(offset)
                offset = 0
            }
            guard let source, let id = itemID else {
                // The end (no track follows): the converter's last frames, then the last
                // frame padded.
                guard schedule.cut != nil else { return nil }
                try? chain.finish(into: &pcm)
                guard pcm.count > 0 else { return nil }
                if pcm.count < frameSize * 2 { pcm += [Float](repeating: 0, count: frameSize * 2 - pcm.count) }
                break
            }
            do {
                let n = try chain.read(source, into: &pcm)
                report(source, id)
                guard let n else {  // a live input paused, or a remote source ran dry
                    // Once its next packet is due, the rooms hear where its audio ends.
                    if !source.isLive, let end = dry.ranDry(now: CoordinatorTime(nanoseconds: clock.nanosecondsNow()),
                                                                   next: packetizer.nextPresentationTime) {
                        onNews(.ranDry(itemID: id, epoch: packetizer.epoch, at: end))
                    }
                    return nil
                }
                epochFrames += Int64(n)
                if n > 0 { continue }
                log.debug("end of \(source.name)")
            } catch {
                log.error("\(error); going on with the next track")
                if source.framesRead == 0 {
                    self.source = nil
                    onNews(.failed(itemID: id, reason: "\(error)"))
                    return nil
                }
            }
            self.source = nil
            // A live input's frames are not counted from the epoch's start: it ends where
            // its timeline is, after the frames it still holds.
            let held = AudioFormat.nanoseconds(forFrames: Int64((pcm.count - offset) / 2))
            let end = source.isLive && anchored ? packetizer.nextPresentationTime + codecDelay + held
                : epochStart + AudioFormat.nanoseconds(forFrames: epochFrames)
            onNews(.ended(itemID: id, at: end))
            _ = takeActions()
        }
        if let source, source.isLive, let id = itemID, !placeLiveFrame(id) { return nil }
        if dry.stalled, let id = itemID,
           dry.resumed(now: CoordinatorTime(nanoseconds: clock.nanosecondsNow()), next: packetizer.nextPresentationTime),
           !goOnAfterDry(id) { return nil }
        do {
            let started = clock.nanosecondsNow()
            let payload = try encoder.encode(pcm, offset: offset)
            CoordinatorMetrics.shared.encode.record(nanoseconds: clock.nanosecondsNow() - started)
            offset += frameSize * 2
            return packetizer.packetize(payload, frames: frameSize)
        } catch {
            log.error("encode: \(error)")
            offset += frameSize * 2
            return nil
        }
    }
}
