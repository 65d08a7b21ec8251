/// One epoch of the stream as a follower receives it: its packets, and how its stream
/// timestamps map to presentation times. The follower plays one segment and may hold the
/// next (a seek, a skip, a resume) until the first one's time is up.
struct PlayoutSegment {
    let ssrc: UInt32
    let epoch: UInt32?
    private var sequences = Unwrapper(bits: 16)
    private var timestamps = Unwrapper(bits: 32)
    /// An extended stream timestamp and its presentation time.
    private(set) var anchor: (timestamp: Int64, time: CoordinatorTime)?
    var jitter: JitterBuffer
    /// When the coordinator ended this epoch (a pause, a stop, a cut): silence from then on.
    var end: CoordinatorTime?

    init(ssrc: UInt32, epoch: UInt32?, capacity: Int) {
        self.ssrc = ssrc
        self.epoch = epoch
        jitter = JitterBuffer(capacity: capacity)
    }

    enum Fit { case accepted, duplicate, late, overflow, offTimeline }

    /// Unwraps and buffers a packet of this segment; `offTimeline` when its presentation
    /// time does not follow from the segment's anchor (the stream was restarted).
    mutating func insert(_ packet: RTPPacket, presentation: CoordinatorTime, tolerance: Int64) -> Fit {
        let seq = sequences.unwrap(UInt64(packet.sequenceNumber.rawValue))
        let ts = timestamps.unwrap(UInt64(packet.timestamp.rawValue))
        if let anchor {
            let expected = anchor.time + AudioFormat.nanoseconds(forFrames: ts - anchor.timestamp)
            if abs(presentation - expected) > tolerance { return .offTimeline }
        } else {
            anchor = (ts, presentation)
        }
        switch jitter.insert(BufferedPacket(sequence: seq, timestamp: ts, presentationTime: presentation, payload: packet.payload,
                                                   startsEpoch: packet.marker, payloadType: packet.payloadType)) {
        case .accepted: return .accepted
        case .duplicate: return .duplicate
        case .late: return .late
        case .overflow: return .overflow
        }
    }

    /// The presentation time of a (fractional) extended stream timestamp.
    func presentation(of position: Double) -> CoordinatorTime? {
        guard let anchor else { return nil }
        let offset = (position - Double(anchor.timestamp)) * 1e9 / Double(AudioFormat.sampleRate)
        return anchor.time + Int64(offset.rounded())
    }

    /// The (fractional) extended stream timestamp due at coordinator time `time`.
    func position(at time: CoordinatorTime) -> Double? {
        anchor.map { Double($0.timestamp) + AudioFormat.exactFrames(forNanoseconds: time - $0.time) }
    }

    /// When the segment's first buffered packet is due: its start, while it is still to come.
    var start: CoordinatorTime? { jitter.first?.presentationTime }
}
