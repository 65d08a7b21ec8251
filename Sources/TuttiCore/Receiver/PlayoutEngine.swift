/// The follower's receiver, without I/O: packets and clock samples go in, and the sound
/// device pulls the frames that are due at a given local time. It is assembled from one
/// type per stage, in the order a packet meets them (each in a file of its own under
/// TuttiCore/Receiver, as roc-toolkit's receiver session assembles its pipeline):
///
///     gate      PacketGate        validate: the house's stream, clock locked, due ahead
///     segments  SegmentSwitch     which epoch plays and which follows; where each ends
///               JitterBuffer      (one per segment) reorder, duplicates, missing slots
///     decoding  FrameDecoding     Opus decode, in-band FEC, concealment (PLC)
///     queue     SampleQueue       decoded samples by stream position
///     monitor   LatencyMonitor    the timing error: step, slew or resync
///     resampler Resampler         RateServo and the device's ratio → interpolation
///     fader     Fader             fade in after a start, out before a cut
///     (the shell's GainStage and the device follow: the room's volume, then the output)
///
/// `state` (`ReceiverState`) is where it stands: acquiring the clock, buffering, playing,
/// resyncing or in an outage. Each epoch of the stream is a segment; the engine plays one
/// and holds the next (a resume, seek or skip), switching at the instant the coordinator
/// chose: the first one's end, or the next one's start. Not thread-safe: one thread owns it
/// (the follower's playout thread, which also reads the sockets it is fed from;
/// docs/threads.md).
public final class PlayoutEngine {
    public struct Configuration: Sendable {
        /// The payload type of a lone decoder's packets (`init(decoder:configuration:)`).
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
        /// A room joins a stream already playing once the clock's bound is within this
        /// (nanoseconds)...
        public var joinUncertainty: Int64 = 25_000
        /// ...or this long after the clock's first exchange (its opening burst is over: a
        /// jittery path's bound stays wide, and the room plays as well as its clock allows).
        /// A room that joined on its first estimate played as far off as that estimate's
        /// error (80 µs on loopback, from one slow exchange), and slewed it out over seconds.
        public var joinWait: Int64 = 200_000_000
        public init() {}
    }

    public let configuration: Configuration
    public private(set) var clock = ClockEstimator()
    /// How the clock stands, for the control channel's pace (without copying the estimator).
    public var clockLock: ClockLock { ClockLock(clock) }

    // The stages, in the order a packet meets them.
    let gate: PacketGate
    var segments: SegmentSwitch
    var decoding: FrameDecoding
    var queue = SampleQueue(start: 0)
    var monitor: LatencyMonitor
    var resampler = Resampler()
    var fader: Fader
    public internal(set) var receiver = ReceiverState()

    /// Fractional extended stream timestamp of the next frame to output; nil when not playing.
    var cursor: Double?
    /// Calibration probes to mix in, and when each starts (at most a few: a calibration
    /// plays one per room in turn).
    var probes: [(probe: CalibrationProbe, at: CoordinatorTime)] = []
    var lastRenderAt: LocalTime?
    /// Local time per device frame, over nominal (1 / 48 kHz): the device's own rate against
    /// the local clock, as the shell's timeline of it knows it (`DeviceTimeline`).
    public var deviceRate: Double {
        get { resampler.deviceRate }
        set { resampler.deviceRate = newValue }
    }
    /// Whether the shell's timeline of the device is good enough to place a first sound on
    /// (`DeviceTimeline.isSettled`): a room joins a stream already playing only then (and
    /// only once its clock is, `Configuration.joinUncertainty`).
    public var deviceSettled = true
    public internal(set) var statistics = PlayoutStatistics()
    /// How early the stream's packets came (their least lead over the last seconds).
    public private(set) var leads = LeadWatch()
    /// Which missing packets to ask the coordinator for, and when.
    public private(set) var requester = RetransmissionRequester()

    /// A receiver of one payload type (`configuration.payloadType`).
    public convenience init(decoder: any FrameDecoder, configuration: Configuration = Configuration()) {
        self.init(decoders: [configuration.payloadType: decoder], configuration: configuration)
    }

    /// A receiver of the payload types `decoders` decode (one at least): every codec a
    /// zone's stream may carry (`StreamCodec`), each packet decoded by its own.
    public init(decoders: [UInt8: any FrameDecoder], configuration: Configuration = Configuration()) {
        self.configuration = configuration
        gate = PacketGate(payloadTypes: Set(decoders.keys), absurdHorizon: configuration.absurdHorizon)
        segments = SegmentSwitch(capacity: configuration.jitterCapacity, tolerance: configuration.timelineTolerance)
        decoding = FrameDecoding(decoders: decoders, maximumConcealment: configuration.maximumConcealment)
        monitor = LatencyMonitor(configuration: .init(
            hardResyncThreshold: configuration.hardResyncThreshold, settlingTime: configuration.settlingTime,
            stepThreshold: configuration.stepThreshold, lateStepThreshold: configuration.lateStepThreshold,
            slewThreshold: configuration.slewThreshold))
        fader = Fader(frames: configuration.fadeFrames)
    }

    /// The room's state, as its reports give it.
    public typealias State = RoomState

    public var state: State { receiver.roomState }

    public var clockEstimate: ClockEstimate? { clock.estimate }

    /// The epoch being played, if any.
    public var playingEpoch: UInt32? { cursor == nil ? nil : segments.current?.epoch }

    public func addClockSample(_ sample: ClockSample) {
        clock.add(sample)
        clockChanged()
    }

    /// The machine learns whether the clock is usable, when that changed (every packet is
    /// a reading of the clock: nothing more per packet than this comparison).
    private func clockChanged() {
        let locked = clock.estimate != nil
        guard locked == (receiver.phase == .acquiringClock) else { return }
        receiver.handle(locked ? .clockLocked(playing: cursor != nil) : .clockLost)
    }

    /// Resumes the clock from what this follower knew before it restarted (see
    /// `ClockEstimator.resume(from:)`).
    public func resumeClock(from estimate: ClockEstimate) {
        clock.resume(from: estimate)
        clockChanged()
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
        guard let packet = try? RTPPacket.decode(datagram), let payloadType = originalPayloadType(ofRetransmission: packet.payloadType),
              let playing = segments.stream ?? segments.current?.ssrc,
              let original = try? packet.originalFromRetransmission(ssrc: playing, payloadType: payloadType)
        else {
            statistics.malformed += 1
            return
        }
        // Of the zone's stream only: the answer to what the room asked of another zone's
        // (it moved since) is not this one's, though it came to this room.
        if segments.stream != nil, RTPPacket.retransmissionSSRC(of: packet.ssrc) != playing {
            statistics.otherZones += 1
            return
        }
        receive(original, at: now, retransmitted: true)
    }

    /// The payload type of the packets a retransmission of payload type `rtx` carries
    /// (RFC 4588's `apt`), if the room decodes them.
    func originalPayloadType(ofRetransmission rtx: UInt8) -> UInt8? {
        let original = rtx == RTPPacket.retransmissionPayloadType && decoding.decoders.count == 1
            ? configuration.payloadType : StreamCodec(retransmissionPayloadType: rtx)?.payloadType
        return original.flatMap { decoding.decoders[$0] == nil ? nil : $0 }
    }

    public func receive(_ packet: RTPPacket, at now: LocalTime, retransmitted: Bool = false) {
        guard let presentation = gate.presentation(of: packet) else {
            statistics.foreign += 1
            return
        }
        guard segments.isOwn(packet.ssrc) else {
            // Another zone's stream (the house's, sealed: not a stranger's).
            statistics.otherZones += 1
            return
        }
        // Every packet of the stream is also a reading of the clock: when it left, when it came.
        let sent = retransmitted ? nil : packet.sendTime.flatMap { $0.nanoseconds == 0 ? nil : $0 }
        if let sent, segments.current.map({ $0.ssrc == packet.ssrc }) ?? true {
            clock.addStreamReading(sent: sent, arrived: now)
            clockChanged()
        }
        let nowCoordinator = clock.estimate?.coordinatorTime(at: now)
        if let nowCoordinator, gate.isPlausible(presentation, now: nowCoordinator) {
            // The network's own delay: a retransmission's lead is the request's (one asked for
            // on joining may be for a packet long heard).
            if !retransmitted { leads.arrived(presentation: presentation.nanoseconds, now: nowCoordinator.nanoseconds) }
            let codec = StreamCodec(payloadType: packet.payloadType)
            requester.arrived(ssrc: packet.ssrc, sequence: packet.sequenceNumber, epoch: packet.epoch, presentation: presentation,
                              sent: sent, at: nowCoordinator, retransmitted: retransmitted,
                              duration: codec.flatMap { $0 == .opus ? nil : AudioFormat.nanoseconds(forFrames: Int64($0.framesPerPacket)) })
        }
        let verdict = gate.verdict(presentation: presentation, now: nowCoordinator)
        guard verdict == .pass else {
            PacketGate.count(verdict, in: &statistics)
            return
        }
        let hadSegment = segments.current != nil
        let (routed, fit) = segments.route(packet, presentation: presentation)
        switch routed {
        case .late:
            statistics.late += 1
            return
        case .replaced:
            if hadSegment { statistics.discontinuities += 1 }
            stopPlayback()
        case .accepted, .duplicate, .overflow:
            break
        }
        if let fit { count(fit, retransmitted: retransmitted) }
    }

    /// The packets to ask the coordinator for at `now` (the stream's SSRC, their sequence
    /// numbers, and how many copies of the request to send); `outputLead` is how far ahead
    /// of being heard the output decodes.
    public func retransmissionRequests(at now: LocalTime, outputLead: Int64) -> (ssrc: UInt32, sequences: [SequenceNumber], copies: Int)? {
        guard let estimate = clock.estimate, let ssrc = requester.stream ?? segments.current?.ssrc else { return nil }
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
        statistics.buffered = segments.buffered
    }

    /// The room plays the stream `ssrc` of its zone from now on (nil: any, a house of one
    /// zone): another one playing hands over to it within `SegmentSwitch.handoverLead`
    /// of the sound heard last, faded out and in.
    public func follow(stream ssrc: UInt32?) {
        guard ssrc != segments.stream else { return }
        let heard = lastRenderAt.flatMap { at in clock.estimate.map { $0.coordinatorTime(at: at) } }
        let playing = segments.current?.ssrc
        segments.follow(ssrc, heard: cursor == nil ? nil : heard)
        if segments.current == nil, playing != nil { stopPlayback() }
    }

    /// The coordinator ended epoch `epoch` at `time` (a pause, a stop, a cut before a seek):
    /// its sound stops there, fading out just before.
    public func endEpoch(_ epoch: UInt32, at time: CoordinatorTime) {
        requester.ended(epoch: epoch, at: time)
        segments.endEpoch(epoch, at: time)
    }

    /// A calibration probe to mix into what is heard from `at` on (the same probe again
    /// changes nothing: the coordinator sends each more than once).
    public func schedule(_ probe: CalibrationProbe, at time: CoordinatorTime) {
        guard !probes.contains(where: { $0.probe == probe && $0.at == time }) else { return }
        probes.append((probe, time))
        if probes.count > 8 { probes.removeFirst(probes.count - 8) }
    }

    /// Playback stops (`event` says why); it starts again with the next packet due.
    func stopPlayback(_ event: ReceiverState.Event = .stopped) {
        cursor = nil
        monitor.reset()
        resampler.reset()
        decoding.reset()
        fader.stopped()
        receiver.handle(event)
    }

    /// The device's timeline moved (it restarted, underran, or began to play): settle again,
    /// stepping out the error it left rather than slewing it away slowly.
    public func deviceTimelineChanged() {
        monitor.resettle()
    }
}
