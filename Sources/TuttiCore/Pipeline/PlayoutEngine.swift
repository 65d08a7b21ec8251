/// The follower's pipeline, without I/O: packets and clock samples go in, and the sound
/// device pulls the frames that are due at a given local time.
///
/// Stages, in order: validate → jitter buffer → decode (FEC, concealment) → sample queue
/// → resample (rate servo) → out. A timeline anchor maps stream timestamps to presentation
/// times; an anchor that no longer fits (new epoch or SSRC, or a presentation time that
/// jumps) starts a new segment. Not thread-safe: the shell serializes calls.
public final class PlayoutEngine {
    public struct Configuration: Sendable {
        public var payloadType: UInt8 = RTPPacket.defaultPayloadType
        /// Packets the jitter buffer holds at most.
        public var jitterCapacity = 512
        /// Beyond this timing error, jump instead of slewing (nanoseconds).
        public var hardResyncThreshold: Int64 = 5_000_000
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
        /// At any time, errors beyond this are stepped out: slewing them at the servo's
        /// ±500 ppm would leave the room audibly apart for seconds (an echo).
        public var lateStepThreshold: Int64 = 1_500_000
        public init() {}
    }

    public enum State: String, Sendable {
        case acquiringClock = "acquiring-clock"
        case waiting
        case playing
    }

    public let configuration: Configuration
    private let decoder: any FrameDecoder
    public private(set) var clock = ClockEstimator()
    private var jitter: JitterBuffer
    private var queue = SampleQueue(start: 0)
    private var servo = RateServo()
    /// Filters the measured timing error before it steers anything.
    private var errorFilter = MedianFilter(width: 9)

    // Stream identity and timeline.
    private var ssrc: UInt32?
    private var epoch: UInt32?
    private var seqUnwrapper = Unwrapper(bits: 16)
    private var tsUnwrapper = Unwrapper(bits: 32)
    private var anchor: (timestamp: Int64, time: CoordinatorTime)?

    // Playback.
    /// Fractional extended stream timestamp of the next frame to output; nil when not playing.
    private var cursor: Double?
    private var lastFrameCount = 960
    private var concealedInARow = 0
    private var lastRenderAt: LocalTime?
    /// The coordinator time the previous render's first frame is heard at, and its length.
    private var lastHeard: (time: CoordinatorTime, frames: Int)?
    /// Coordinator time per device frame, over nominal: the clock drift and the device's own
    /// rate together, measured from successive renders and smoothed.
    private var deviceRatio = 1.0
    /// Local time until which playback is settling; nil when not playing.
    private var settlingUntil: LocalTime?
    public private(set) var statistics = PlayoutStatistics()

    public init(decoder: any FrameDecoder, configuration: Configuration = Configuration()) {
        self.decoder = decoder
        self.configuration = configuration
        self.jitter = JitterBuffer(capacity: configuration.jitterCapacity)
    }

    public var state: State {
        if clock.estimate == nil { return .acquiringClock }
        return cursor == nil ? .waiting : .playing
    }

    public var clockEstimate: ClockEstimate? { clock.estimate }

    public func addClockSample(_ sample: ClockSample) {
        clock.add(sample)
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

    public func receive(_ packet: RTPPacket, at now: LocalTime) {
        guard packet.payloadType == configuration.payloadType, let presentation = packet.presentationTime,
              !packet.payload.isEmpty else {
            statistics.foreign += 1
            return
        }
        guard let estimate = clock.estimate else {
            statistics.beforeClockLock += 1
            return
        }
        let nowCoordinator = estimate.coordinatorTime(at: now)
        if abs(presentation - nowCoordinator) > configuration.absurdHorizon {
            statistics.absurd += 1
            return
        }
        if presentation < nowCoordinator {
            statistics.late += 1
            return
        }
        if isNewSegment(packet) {
            startSegment(packet)
        }
        let seq = seqUnwrapper.unwrap(UInt64(packet.sequenceNumber.rawValue))
        let ts = tsUnwrapper.unwrap(UInt64(packet.timestamp.rawValue))
        if let anchor {
            let expected = anchor.time + AudioFormat.nanoseconds(forFrames: ts - anchor.timestamp)
            if abs(presentation - expected) > configuration.timelineTolerance {
                startSegment(packet)
                return receive(packet, at: now)
            }
        } else {
            anchor = (ts, presentation)
        }
        statistics.packetsReceived += 1
        switch jitter.insert(BufferedPacket(sequence: seq, timestamp: ts, presentationTime: presentation,
                                            payload: packet.payload)) {
        case .accepted: break
        case .duplicate: statistics.duplicates += 1
        case .late: statistics.late += 1
        case .overflow: statistics.overflow += 1
        }
        statistics.buffered = jitter.count
    }

    private func isNewSegment(_ packet: RTPPacket) -> Bool {
        guard let ssrc else { return true }
        if packet.ssrc != ssrc { return true }
        if let e = packet.epoch, let current = epoch, e != current {
            return Int32(bitPattern: e &- current) > 0
        }
        return false
    }

    private func startSegment(_ packet: RTPPacket) {
        if ssrc != nil { statistics.discontinuities += 1 }
        ssrc = packet.ssrc
        epoch = packet.epoch
        seqUnwrapper.reset()
        tsUnwrapper.reset()
        anchor = nil
        jitter.removeAll()
        stopPlayback()
    }

    private func stopPlayback() {
        cursor = nil
        errorFilter.reset()
        settlingUntil = nil
        servo.reset()
        decoder.reset()
        concealedInARow = 0
    }

    /// The device's timeline moved (it restarted, underran, or began to play): settle again,
    /// stepping out the error it left rather than slewing it away slowly.
    public func deviceTimelineChanged() {
        settlingUntil = nil
        errorFilter.reset()
    }

    // MARK: - Rendering

    /// Appends `frames` stereo frames to `out`: the frames that must be heard from local
    /// time `heardAt` on (that is, now plus the device latency).
    public func render(frames: Int, heardAt: LocalTime, into out: inout [Float]) {
        let interval = lastRenderAt.map { Double(heardAt - $0) / 1e9 } ?? 0
        lastRenderAt = heardAt
        guard let estimate = clock.estimate else {
            return silence(frames, into: &out)
        }
        var remaining = frames
        var heard = estimate.coordinatorTime(at: heardAt)
        if let last = lastHeard {
            let measured = Double(heard - last.time) / Double(AudioFormat.nanoseconds(forFrames: Int64(last.frames)))
            if abs(measured - 1) < 0.001 { deviceRatio += (measured - deviceRatio) * 0.05 }  // jumps are not rates
        }
        lastHeard = (heard, frames)
        if let position = cursor, let raw = timingError(position: position, heard: heard),
           abs(errorFilter.add(raw)) > configuration.hardResyncThreshold, errorFilter.count >= 3 {
            statistics.resyncs += 1
            stopPlayback()
        }
        if cursor == nil {
            let lead = start(at: heard, available: remaining)
            let pad = min(remaining, lead)
            silence(pad, into: &out)
            remaining -= pad
            heard = heard + AudioFormat.nanoseconds(forFrames: Int64(pad))
            if cursor == nil || remaining == 0 { return }
        }
        guard var position = cursor, let raw = timingError(position: position, heard: heard) else {
            return silence(remaining, into: &out)
        }
        // The filter saw this render's raw error above (or starts now, after a start).
        if errorFilter.count == 0 { _ = errorFilter.add(raw) }
        var error = errorFilter.median
        if settlingUntil == nil { settlingUntil = heardAt + configuration.settlingTime }
        let settling = settlingUntil.map { heardAt < $0 } ?? false
        let threshold = settling ? configuration.stepThreshold : configuration.lateStepThreshold
        if errorFilter.count >= 3, abs(error) > threshold {
            // Step: skip ahead when late, repeat a little when early. The filter's history
            // described the old position, so it starts again.
            position = max(Double(queue.start), position + AudioFormat.exactFrames(forNanoseconds: error))
            cursor = position
            statistics.steps += 1
            errorFilter.reset()
            error = 0
        }
        statistics.lastError = error
        // Feed forward how fast coordinator time passes per device frame (clock drift and
        // the device's rate); the servo corrects what remains.
        let ratio = deviceRatio * servo.update(error: Double(error) / 1e9, interval: min(interval, 0.1))
        statistics.ratio = ratio
        let needed = Int64((position + ratio * Double(remaining)).rounded(.up)) + 2
        fill(until: needed)
        queue.interpolate(from: position, step: ratio, count: remaining, into: &out)
        position += ratio * Double(remaining)
        cursor = position
        queue.discard(before: Int64(position) - 4_800)  // keep 100 ms to step back into
        statistics.buffered = jitter.count
    }

    /// How late the frame at `position` is when heard at `heard` (nanoseconds; positive: late).
    private func timingError(position: Double, heard: CoordinatorTime) -> Int64? {
        guard let anchor else { return nil }
        let offset = (position - Double(anchor.timestamp)) * 1e9 / Double(AudioFormat.sampleRate)
        return heard - (anchor.time + Int64(offset.rounded()))
    }

    private func silence(_ frames: Int, into out: inout [Float]) {
        out.append(contentsOf: repeatElement(0, count: frames * 2))
    }

    /// Starts playback for coordinator time `heard`: returns the frames of silence to play
    /// before the first buffered packet is due. Sets `cursor` only when playback begins
    /// within `available` frames.
    private func start(at heard: CoordinatorTime, available: Int) -> Int {
        guard let anchor, let first = jitter.first else { return Int.max }
        let desired = Double(anchor.timestamp) + AudioFormat.exactFrames(forNanoseconds: heard - anchor.time)
        if desired < Double(first.timestamp) {
            let lead = Int((Double(first.timestamp) - desired).rounded(.up))
            if lead < available {
                cursor = desired + Double(lead)
                begin(at: first)
            }
            return lead
        }
        // Joining late: skip to the packet holding `desired`.
        guard let last = jitter.last, desired < Double(last.timestamp + Int64(lastFrameCount)) else {
            jitter.removeAll()
            return Int.max
        }
        var target = first
        for p in jitter.packetsInOrder where Double(p.timestamp) <= desired { target = p }
        cursor = desired
        begin(at: target)
        return 0
    }

    private func begin(at packet: BufferedPacket) {
        jitter.skip(to: packet.sequence)
        decoder.reset()
        queue.reset(start: packet.timestamp)
        servo.reset()
        concealedInARow = 0
    }

    /// Decodes until the sample queue reaches `timestamp`.
    private func fill(until timestamp: Int64) {
        while queue.end < timestamp {
            switch jitter.pop() {
            case let .packet(p):
                if p.timestamp > queue.end {  // a gap the jitter buffer could not see
                    conceal(Int(min(p.timestamp - queue.end, Int64(configuration.maximumConcealment))))
                }
                decodePacket(p)
            case let .missing(_, following):
                statistics.lost += 1
                if let following, recoverFEC(following) { continue }
                conceal(lastFrameCount)
            case .empty:
                conceal(lastFrameCount)
            }
        }
    }

    private func decodePacket(_ p: BufferedPacket) {
        do {
            let n = try queue.append { try decoder.decode(p.payload, into: &$0) }
            if n > 0 { lastFrameCount = n }
            concealedInARow = 0
        } catch {
            statistics.decodeErrors += 1
            conceal(lastFrameCount)
        }
    }

    private func recoverFEC(_ following: BufferedPacket) -> Bool {
        let frames = lastFrameCount
        let n = (try? queue.append { try decoder.decodeFEC(from: following.payload, frames: frames, into: &$0) }) ?? 0
        if n > 0 {
            statistics.recoveredByFEC += 1
            concealedInARow = 0
            return true
        }
        return false
    }

    private func conceal(_ frames: Int) {
        if concealedInARow < configuration.maximumConcealment,
           let n = try? queue.append({ try decoder.conceal(frames: frames, into: &$0) }), n > 0 {
            statistics.concealedFrames += n
            concealedInARow += n
        } else {
            queue.appendSilence(frames: frames)
            statistics.silenceFrames += frames
        }
    }
}
