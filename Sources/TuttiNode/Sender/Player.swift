import Foundation
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet

/// The coordinator's sender, on its own thread: carries out the transport's actions (start
/// an epoch, cut it, go on with the next track; the house sends the items' paths with
/// them), reads the source (a file of any format, a remote stream, or a live input that
/// `LiveTimeline` places on the timeline as it arrives), encodes, stamps presentation times
/// and sends each packet ahead of them: stored audio up to `lookahead`, live audio
/// `latency` (`SendSchedule`).
final class Player: @unchecked Sendable {
    struct Configuration {
        /// What the stream carries, and Opus's settings when it is Opus.
        var codec = StreamCodec.opus
        var encoder = OpusFrameEncoder.Settings()
        var latency: Int64 = 150_000_000
        /// How far ahead of being heard stored audio is sent (never less than `latency`).
        var lookahead: Int64 = 2_000_000_000
        /// The RTCP canonical name in sender reports.
        var cname = "tutti"
    }

    private let clock: any MonotonicClock
    private let encoder: any FrameEncoding
    private let send: @Sendable (RTPPacket) -> Void
    private let sendReport: @Sendable (RTCPSenderReport) -> Void
    private let onEpoch: @Sendable (StreamPacketizer) -> Void
    private let opener: (String) throws -> any FrameSource
    private let stopFlag: StopFlag
    /// The zone's audio for listeners beside its stream (Sendspin players).
    private let tap: ZoneTap?
    /// Where the player's news goes (the house's notices); set before `run`.
    var onNews: @Sendable (PlayerNews) -> Void = { _ in }
    private let log = Log("coordinator")

    /// What the house hands the player's thread.
    private struct Mail {
        var actions: [TransportAction] = []
        /// The paths of the items the actions name.
        var paths: [Int: String] = [:]
        /// Answers to realignments received.
        var answers = 0
        /// The latency the house last set for a live input (ns), until the player's thread takes it.
        var latencyTarget: Int64?
        /// Something woke the player that it must look at (the stop flag).
        var woken = false
    }
    private let inbox = Inbox(Mail())

    // The player's thread only.
    /// The stream's timeline and what to do next.
    private var machine: SenderMachine
    /// Waiting for the house's answer to a realignment: until when, and the answers counted
    /// before it was asked.
    private var awaiting: (until: Int64, seen: Int)?
    private var source: (any FrameSource)?
    /// Loudness, then the house's rate, between the source and the encoder.
    let chain = SourceChain()
    /// The samples read and not yet encoded: `pcm[offset...]`.
    private var pcm: [Float] = []
    private var offset = 0
    /// Which of a remote source's statuses the house hears.
    private var statuses = StatusThrottle()

    /// - Parameters:
    ///   - clock: the coordinator's clock (the tests' in-memory house gives its own).
    ///   - opener: opens what a queue entry names.
    ///   - encoder: nil: the configuration's codec.
    ///   - initialSequence, initialTimestamp: the stream's first sequence number and
    ///     timestamp; nil: random, as RTP asks.
    init(configuration: Configuration, ssrc: UInt32, stopFlag: StopFlag, clock: any MonotonicClock,
         opener: @escaping (String) throws -> any FrameSource = { try openFrameSource($0) }, encoder: (any FrameEncoding)? = nil,
         initialSequence: UInt16? = nil, initialTimestamp: UInt32? = nil,
         send: @escaping @Sendable (RTPPacket) -> Void, sendReport: @escaping @Sendable (RTCPSenderReport) -> Void,
         onEpoch: @escaping @Sendable (StreamPacketizer) -> Void = { _ in }, tap: ZoneTap? = nil) throws {
        self.clock = clock
        self.tap = tap
        self.encoder = try encoder ?? makeFrameEncoder(configuration.codec, opus: configuration.encoder)
        self.send = send
        self.sendReport = sendReport
        self.onEpoch = onEpoch
        self.opener = opener
        self.stopFlag = stopFlag
        var settings = SenderMachine.Configuration()
        settings.latency = configuration.latency
        settings.lookahead = configuration.lookahead
        settings.frameSize = self.encoder.frameSize
        settings.payloadType = encoder == nil ? configuration.codec.payloadType : RTPPacket.defaultPayloadType
        settings.codecDelay = self.encoder.lookahead
        settings.cname = configuration.cname
        machine = SenderMachine(configuration: settings, ssrc: ssrc, initialSequence: initialSequence ?? UInt16.random(in: 0...UInt16.max),
                                initialTimestamp: initialTimestamp ?? UInt32.random(in: 0...UInt32.max))
        pcm.reserveCapacity(self.encoder.frameSize * 8)
    }

    /// How loudness is evened out from now on (the next frames read).
    func setReplayGain(_ setting: ReplayGain) {
        chain.replayGain.withLock { $0 = setting }
    }

    /// Queues actions for the player's thread, with the paths of the items they name.
    /// `answering`: they answer a realignment (which the player waits for).
    func perform(_ actions: [TransportAction], paths: [Int: String] = [:], answering: Bool = false) {
        guard !actions.isEmpty || answering else { return }
        inbox.post { mail in
            mail.actions += actions
            mail.paths.merge(paths) { _, new in new }
            if answering { mail.answers += 1 }
        }
    }

    /// A live input is to be heard `latency` after it arrives (ns): the player moves there
    /// without a gap (`SenderMachine.setLatency`).
    func setLatency(_ latency: Int64) {
        inbox.post { $0.latencyTarget = latency }
    }

    func wake() {
        inbox.post { $0.woken = true }
    }

    /// Runs until the stop flag is set; then lets its source go (a receiver's process ends
    /// with it).
    func run() {
        defer { source = nil }
        while !stopFlag.isSet {
            let until = turn()
            // Rest until then, or until the house acts (answers, when it was asked).
            let timeout = until - clock.nanosecondsNow()
            if let seen = awaiting?.seen {
                inbox.wait(timeout: timeout, until: { $0.answers != seen || $0.woken }) { mail, _ in mail.woken = false }
            } else {
                inbox.wait(timeout: min(timeout, 200_000_000), until: { !$0.actions.isEmpty || $0.latencyTarget != nil || $0.woken }) { mail, _ in
                    mail.woken = false
                }
            }
        }
    }

    /// Does everything there is to do now: takes the house's actions, reads, encodes and
    /// sends what is due. Returns when there is nothing to do before the coordinator time it
    /// returns (or before the house acts).
    func turn() -> Int64 {
        while true {
            let now = clock.nanosecondsNow()
            // A source with nothing for a while (a live input whose writer paused) is read
            // again and again without a rest: the player must still hear it should stop.
            if stopFlag.isSet { return now }
            if let asked = awaiting {
                let (actions, answered) = takeInbox(counting: asked.seen)
                guard answered || now >= asked.until else { return asked.until }
                awaiting = nil
                tapCuts(actions)
                machine.answered(actions, now: now)
            } else {
                let (actions, _) = takeInbox(counting: nil)
                if !actions.isEmpty {
                    tapCuts(actions)
                    machine.take(actions, now: now)
                }
            }
            if let latency = inbox.withLock({ mail in defer { mail.latencyTarget = nil }; return mail.latencyTarget }) { machine.setLatency(latency) }
            switch machine.next(now: now) {
            case let .wait(until):
                return until
            case let .ask(news, until):
                awaiting = (until, inbox.withLock { $0.answers })
                onNews(news)
            case let .send(packet):
                send(packet)
            case let .report(report):
                sendReport(report)
            case let .news(news):
                onNews(news)
            case let .restart(keepBuffer):
                encoder.reset()
                if !keepBuffer {
                    pcm.removeAll(keepingCapacity: true)
                    offset = 0
                    chain.reset()
                }
            case let .rewind(frames):
                offset = max(0, offset - frames * 2)
            case let .epoch(packetizer):
                onEpoch(packetizer)
            case let .open(id, position, reuse):
                open(id, from: position, reuse: reuse)
            case .read:
                read()
            case .finish:
                finish()
            case .skipFrame:
                offset = min(pcm.count, offset + encoder.frameSize * 2)
            case .encode:
                encode()
            case let .stretch(ppm):
                do {
                    try chain.stretch(ppm: ppm)
                } catch {
                    log.error("cannot stretch \(source?.name ?? "the live input"): \(error)")
                }
            case .close:
                if let s = source, s.closesWhenIdle, !machine.schedule.streaming { log.info("stopped listening to \(s.name)") }
                source = nil
            case let .note(text):
                log.info("\(source?.name ?? "the source"): \(text)")
            case let .problem(text):
                log.error(text)
            }
        }
    }

    /// The house's actions since the last look; with `counting`, whether it answered since
    /// that many answers.
    private func takeInbox(counting seen: Int?) -> ([TransportAction], Bool) {
        inbox.withLock { mail in
            if let seen, mail.answers == seen { return ([], false) }
            defer { mail.actions.removeAll() }
            return (mail.actions, seen != nil)
        }
    }

    /// Opens queue item `id` at media `position`; a source of the same item that seeks in
    /// place (a remote file keeps what it has loaded) moves there instead.
    private func open(_ id: Int, from position: MediaFrames, reuse: Bool) {
        if reuse, let s = source, s.seeksInPlace {
            do {
                try s.seek(to: position)
                log.info("playing \(s.name) from \(position.seconds.fixed(1)) s")
                return
            } catch {
                log.info("\(error); opening \(s.name) again")
            }
        }
        source = nil
        statuses.reset()
        let known = inbox.withLock { mail in
            defer { if mail.paths.count > 64 { mail.paths = mail.paths.filter { $0.key == id } } }  // forget those played long ago
            return mail.paths[id]
        }
        guard let path = known else {
            machine.openFailed(itemID: id, reason: "queue item \(id) is gone")
            return
        }
        do {
            let s = try opener(path)
            if position > 0, !s.isLive { try s.seek(to: position) }
            source = s
            log.info("playing \(s.name)\(position > 0 && !s.isLive ? " from \(position.seconds.fixed(1)) s" : "")")
            machine.opened(itemID: id, Self.facts(s), length: s.length)
            report(s, id)
        } catch {
            log.error("\(error); skipping to the next track")
            machine.openFailed(itemID: id, reason: "\(error)")
        }
    }

    private static func facts(_ s: any FrameSource) -> SenderMachine.SourceFacts {
        SenderMachine.SourceFacts(isLive: s.isLive, isStored: s.isStored, closesWhenIdle: s.closesWhenIdle)
    }

    private var bufferedFrames: Int64 { Int64((pcm.count - offset) / 2) }

    /// Drops the samples already encoded, but a live input's last `keptFrames` (the machine
    /// may put them back: `rewind`); those go once twice as many are held, not at every read.
    private func compact() {
        let kept = source?.isLive == true ? machine.configuration.keptFrames * 2 : 0
        if offset > 2 * kept {
            pcm.removeFirst(offset - kept)
            offset = kept
        }
    }

    /// Reads the source's next frames through the chain.
    private func read() {
        let now = clock.nanosecondsNow()
        guard let source, let id = machine.itemID else {
            machine.read(nil, buffered: bufferedFrames, now: now)
            return
        }
        compact()
        do {
            let n = try chain.read(source, into: &pcm)
            report(source, id)
            if n == 0 { log.debug("end of \(source.name)") }
            machine.read(n, buffered: bufferedFrames, now: clock.nanosecondsNow(), facts: Self.facts(source))
        } catch {
            machine.readFailed(reason: "\(error)", atOnce: source.framesRead == 0)
        }
    }

    /// The chain's last frames, padded to whole packets.
    private func finish() {
        compact()
        try? chain.finish(into: &pcm)
        let samples = encoder.frameSize * 2
        if pcm.count % samples != 0 { pcm += [Float](repeating: 0, count: samples - pcm.count % samples) }
        machine.finished(frames: bufferedFrames)
    }

    /// The cuts among the house's actions, for the tap's listeners (what they were handed
    /// past a cut is void).
    private func tapCuts(_ actions: [TransportAction]) {
        guard let tap, tap.isListened else { return }
        for case let .cut(epoch, at) in actions where epoch == machine.packetizer.epoch { tap.post(.cut(at: at.nanoseconds)) }
    }

    private func encode() {
        let samples = encoder.frameSize * 2
        if pcm.count - offset < samples { pcm += [Float](repeating: 0, count: samples - (pcm.count - offset)) }
        if let tap, tap.isListened {
            // Heard when the packet about to be made is, its codec's delay later.
            let heard = machine.packetizer.nextPresentationTime.nanoseconds
                + AudioFormat.nanoseconds(forFrames: Int64(machine.configuration.codecDelay))
            tap.post(.audio(Array(pcm[offset..<offset + samples]), heard: heard))
        }
        let started = clock.nanosecondsNow()
        do {
            let payload = try encoder.encode(pcm, offset: offset)
            CoordinatorMetrics.shared.encode.record(nanoseconds: clock.nanosecondsNow() - started)
            offset += samples
            machine.encoded(payload)
        } catch {
            log.error("encode: \(error)")
            offset += samples
            machine.encoded(nil)
        }
    }

    /// Tells the house how a remote source is doing, when that changed.
    private func report(_ source: any FrameSource, _ id: Int) {
        guard let status = source.status, let told = statuses.filter(status, now: clock.nanosecondsNow()) else { return }
        onNews(.stream(itemID: id, told))
    }
}
