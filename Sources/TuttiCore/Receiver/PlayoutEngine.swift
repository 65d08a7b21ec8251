/// The follower's pipeline, without I/O: packets and clock samples go in, and the sound
/// device pulls the frames that are due at a given local time.
///
/// Stages, in order: validate → segment (epoch) → jitter buffer → decode (FEC, concealment)
/// → sample queue → resample (rate servo) → fades → out. Each epoch of the stream is a
/// segment; the engine plays one and holds the next (a resume, seek or skip), switching at
/// the instant the coordinator chose: the first one's end, or the next one's start. Not
/// thread-safe: one thread owns it (the follower's playout thread, which also reads the
/// sockets it is fed from; docs/threads.md).
public final class PlayoutEngine {
    public struct Configuration: Sendable {
        public var payloadType: UInt8 = RTPPacket.defaultPayloadType
        /// Packets the jitter buffer holds at most (stored audio comes up to the
        /// coordinator's lookahead ahead, at most 5 s).
        public var jitterCapacity = 1_024
        /// Beyond this timing error, start playback again at the right position (nanoseconds).
        public var hardResyncThreshold: Int64 = 20_000_000
        /// A packet whose presentation time is further than this from now is absurd.
        public var absurdHorizon: Int64 = 10_000_000_000
        /// Conceal at most this many frames in a row before falling silent.
        public var maximumConcealment = 9_600
        /// A packet whose presentation time is off its timeline by more than this starts a new segment.
        public var timelineTolerance: Int64 = 1_000_000
        /// For this long after playback starts, errors are stepped out at once (the sound
        /// server's first latency reports are rough) rather than slewed.
        public var settlingTime: Int64 = 3_000_000_000
        /// While settling, errors beyond this are stepped out (nanoseconds).
        public var stepThreshold: Int64 = 100_000
        /// Once settled, errors beyond this are stepped out: slewing them at the servo's
        /// ±500 ppm would take more than six seconds. Anything less is slewed.
        public var lateStepThreshold: Int64 = 3_000_000
        /// A playback error beyond this (one sample) that the resampler brings back is a slew.
        public var slewThreshold: Int64 = 20_833
        /// With nothing left to play for this many frames (100 ms) the stream is gone (an
        /// outage): playback stops, faded out, and starts again, in place, when packets return.
        public var outageFrames = 4_800
        /// Sound fades in over this many frames when it starts and out before a cut (5 ms).
        public var fadeFrames = 240
        public init() {}
    }

    /// The room's state, as its reports give it.
    public typealias State = RoomState

    public let configuration: Configuration
    let decoder: any FrameDecoder
    public private(set) var clock = ClockEstimator()
    /// How the clock stands, for the control channel's pace (without copying the estimator).
    public var clockLock: ClockLock { ClockLock(clock) }
    /// The epoch playing (or about to), and the one after it.
    var current: PlayoutSegment?
    var upcoming: PlayoutSegment?
    /// Epochs the coordinator has ended, and when; their later packets are dropped.
    private var endedEpochs: [(epoch: UInt32, at: CoordinatorTime)] = []

    // Playback of the current segment.
    var queue = SampleQueue(start: 0)
    var servo = RateServo()
    /// Filters the measured timing error before it steers anything.
    var errorFilter = MedianFilter(width: 9)
    /// Fractional extended stream timestamp of the next frame to output; nil when not playing.
    var cursor: Double?
    var lastFrameCount = 960
    var concealedInARow = 0
    var lastRenderAt: LocalTime?
    /// The coordinator time the previous render's first frame is heard at, and its length.
    var lastHeard: (time: CoordinatorTime, frames: Int)?
    /// Coordinator time per device frame, over nominal: the clock drift and the device's own
    /// rate together, measured from successive renders and smoothed.
    var deviceRatio = 1.0
    /// Local time per device frame, over nominal (1 / 48 kHz): the device's own rate against
    /// the local clock, as the shell's timeline of it knows it (`DeviceTimeline`). Seeds
    /// `deviceRatio` until renders measure it.
    public var deviceRate = 1.0
    /// Local time until which playback is settling; nil when not playing.
    var settlingUntil: LocalTime?
    /// Frames of fade-in still to apply.
    var fadeIn = 0
    /// The error is beyond `slewThreshold`, being slewed back.
    var slewing = false
    /// The jitter buffer has run dry for this many frames (the stream stopped coming).
    var dryFrames = 0
    public internal(set) var statistics = PlayoutStatistics()
    /// Which missing packets to ask the coordinator for, and when.
    public private(set) var requester = RetransmissionRequester()

    public init(decoder: any FrameDecoder, configuration: Configuration = Configuration()) {
        self.decoder = decoder
        self.configuration = configuration
    }

    public var state: State {
        if clock.estimate == nil { return .acquiringClock }
        return cursor == nil ? .waiting : .playing
    }

    public var clockEstimate: ClockEstimate? { clock.estimate }

    /// The epoch being played, if any.
    public var playingEpoch: UInt32? { cursor == nil ? nil : current?.epoch }

    public func addClockSample(_ sample: ClockSample) {
        clock.add(sample)
    }

    /// Resumes the clock from what this follower knew before it restarted (see
    /// `ClockEstimator.resume(from:)`).
    public func resumeClock(from estimate: ClockEstimate) {
        clock.resume(from: estimate)
    }

    // MARK: - Receiving

    /// Validates a datagram from the network and buffers it; bad input is counted, never thrown.
    public func receive(_ datagram: [UInt8], at now: LocalTime) {
        let packet: RTPPacket
        do {
            packet = try RTPPacket.decode(datagram)
        } catch {
            statistics.malformed += 1
            return
        }
        receive(packet, at: now)
    }

    /// A retransmission (RFC 4588) the coordinator sent in answer to this follower's request:
    /// the original packet of the stream playing goes in as if it had come in time.
    public func receiveRetransmission(_ datagram: [UInt8], at now: LocalTime) {
        guard let packet = try? RTPPacket.decode(datagram), packet.payloadType == RTPPacket.retransmissionPayloadType,
              let ssrc = current?.ssrc, let original = try? packet.originalFromRetransmission(ssrc: ssrc, payloadType: configuration.payloadType)
        else {
            statistics.malformed += 1
            return
        }
        receive(original, at: now, retransmitted: true)
    }

    public func receive(_ packet: RTPPacket, at now: LocalTime, retransmitted: Bool = false) {
        guard packet.payloadType == configuration.payloadType, let presentation = packet.presentationTime,
              !packet.payload.isEmpty else {
            statistics.foreign += 1
            return
        }
        // Every packet of the stream is also a reading of the clock: when it left, when it came.
        let sent = retransmitted ? nil : packet.sendTime.flatMap { $0.nanoseconds == 0 ? nil : $0 }
        if let sent, current.map({ $0.ssrc == packet.ssrc }) ?? true {
            clock.addStreamReading(sent: sent, arrived: now)
        }
        guard let estimate = clock.estimate else {
            statistics.beforeClockLock += 1
            return
        }
        let nowCoordinator = estimate.coordinatorTime(at: now)
        if abs(presentation - nowCoordinator) <= configuration.absurdHorizon {
            requester.arrived(ssrc: packet.ssrc, sequence: packet.sequenceNumber, epoch: packet.epoch, presentation: presentation,
                              sent: sent, at: nowCoordinator, retransmitted: retransmitted)
        }
        if abs(presentation - nowCoordinator) > configuration.absurdHorizon {
            statistics.absurd += 1
            return
        }
        if presentation < nowCoordinator {
            statistics.late += 1
            return
        }
        if let end = endTime(of: packet.epoch), presentation >= end {
            statistics.late += 1  // after its epoch's end: a pause or a cut came first
            return
        }
        if current == nil || current!.ssrc != packet.ssrc {
            replaceCurrent(with: packet)
        } else if let epoch = packet.epoch, let playing = current!.epoch, epoch != playing {
            guard Self.isNewer(epoch, than: playing) else {
                statistics.late += 1  // a stale epoch
                return
            }
            if upcoming.map({ $0.epoch.map { Self.isNewer(epoch, than: $0) } ?? true }) ?? true {
                upcoming = PlayoutSegment(ssrc: packet.ssrc, epoch: epoch, capacity: configuration.jitterCapacity)
                upcoming!.end = endTime(of: epoch)
            } else if upcoming?.epoch != epoch {
                statistics.late += 1
                return
            }
            count(upcoming!.insert(packet, presentation: presentation, tolerance: configuration.timelineTolerance), retransmitted: retransmitted)
            return
        }
        let fit = current!.insert(packet, presentation: presentation, tolerance: configuration.timelineTolerance)
        if fit == .offTimeline {
            replaceCurrent(with: packet)
            count(current!.insert(packet, presentation: presentation, tolerance: configuration.timelineTolerance), retransmitted: retransmitted)
        } else {
            count(fit, retransmitted: retransmitted)
        }
    }

    /// The packets to ask the coordinator for at `now` (the stream's SSRC, their sequence
    /// numbers, and how many copies of the request to send); `outputLead` is how far ahead
    /// of being heard the output decodes.
    public func retransmissionRequests(at now: LocalTime, outputLead: Int64) -> (ssrc: UInt32, sequences: [SequenceNumber], copies: Int)? {
        guard let estimate = clock.estimate, let ssrc = current?.ssrc else { return nil }
        let due = requester.due(at: estimate.coordinatorTime(at: now), outputLead: outputLead)
        return due.sequences.isEmpty ? nil : (ssrc, due.sequences, due.copies)
    }

    /// When the next retransmission request is due (local time), if any.
    public var nextRetransmissionRequest: LocalTime? {
        guard let estimate = clock.estimate, let due = requester.nextDue else { return nil }
        return estimate.localTime(at: due)
    }

    private func count(_ fit: PlayoutSegment.Fit, retransmitted: Bool) {
        switch fit {
        case .accepted, .offTimeline:
            statistics.packetsReceived += 1
            if retransmitted { statistics.retransmitted += 1 }
        case .duplicate: statistics.duplicates += 1
        case .late: statistics.late += 1
        case .overflow: statistics.overflow += 1
        }
        statistics.buffered = (current?.jitter.count ?? 0) + (upcoming?.jitter.count ?? 0)
    }

    /// A new stream (the coordinator restarted) or a timeline that jumped: play it instead, now.
    private func replaceCurrent(with packet: RTPPacket) {
        if current != nil { statistics.discontinuities += 1 }
        current = PlayoutSegment(ssrc: packet.ssrc, epoch: packet.epoch, capacity: configuration.jitterCapacity)
        current!.end = endTime(of: packet.epoch)
        upcoming = nil
        stopPlayback()
    }

    /// The coordinator ended epoch `epoch` at `time` (a pause, a stop, a cut before a seek):
    /// its sound stops there, fading out just before.
    public func endEpoch(_ epoch: UInt32, at time: CoordinatorTime) {
        requester.ended(epoch: epoch)
        if !endedEpochs.contains(where: { $0.epoch == epoch }) {
            endedEpochs.append((epoch, time))
            if endedEpochs.count > 16 { endedEpochs.removeFirst() }
        }
        if current?.epoch == epoch { current!.end = min(current!.end ?? time, time) }
        if upcoming?.epoch == epoch { upcoming!.end = min(upcoming!.end ?? time, time) }
    }

    /// When the coordinator ended `epoch`, if it has.
    private func endTime(of epoch: UInt32?) -> CoordinatorTime? {
        guard let epoch else { return nil }
        return endedEpochs.last { $0.epoch == epoch }?.at
    }

    static func isNewer(_ a: UInt32, than b: UInt32) -> Bool { Int32(bitPattern: a &- b) > 0 }

    func stopPlayback() {
        cursor = nil
        errorFilter.reset()
        settlingUntil = nil
        servo.reset()
        decoder.reset()
        concealedInARow = 0
        fadeIn = 0
        slewing = false
        dryFrames = 0
    }

    /// The device's timeline moved (it restarted, underran, or began to play): settle again,
    /// stepping out the error it left rather than slewing it away slowly.
    public func deviceTimelineChanged() {
        settlingUntil = nil
        errorFilter.reset()
    }
}
