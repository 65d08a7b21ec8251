/// Stamps encoded frames into RTP packets on the coordinator: sequence numbers, stream
/// timestamps and presentation times on the shared clock, all continuous across tracks.
///
/// The presentation time of stream timestamp `s` is `origin + (s - firstTimestamp) / 48 kHz`,
/// so the timeline is exact to the nanosecond however long the stream runs.
public struct StreamPacketizer: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    public private(set) var epoch: UInt32
    private var sequence: SequenceNumber
    private let firstTimestamp: StreamTimestamp
    /// Frames emitted since the timeline origin.
    public private(set) var framesSinceOrigin: Int64 = 0
    private var origin: CoordinatorTime
    /// Frames the codec delays its output by; decoded sample `k` belongs to input sample `k - codecDelay`.
    public let codecDelay: Int64
    public private(set) var packetCount: UInt32 = 0
    public private(set) var octetCount: UInt32 = 0
    /// The next packet is its epoch's first: it carries the marker (RFC 3551's first packet
    /// after silence), so that a room can tell a stream that starts from one it joins.
    private var startsEpoch = true

    public init(ssrc: UInt32, payloadType: UInt8 = RTPPacket.defaultPayloadType, initialSequence: UInt16,
                initialTimestamp: UInt32, origin: CoordinatorTime, codecDelay: Int64 = 0, epoch: UInt32 = 0) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.sequence = SequenceNumber(initialSequence)
        self.firstTimestamp = StreamTimestamp(initialTimestamp)
        self.origin = origin
        self.codecDelay = codecDelay
        self.epoch = epoch
    }

    /// The stream timestamp of the next packet.
    public var nextTimestamp: StreamTimestamp { firstTimestamp.advanced(by: framesSinceOrigin) }

    /// The presentation time of the next packet's first decoded sample.
    public var nextPresentationTime: CoordinatorTime {
        presentationTime(ofFrame: framesSinceOrigin)
    }

    public func presentationTime(ofFrame frame: Int64) -> CoordinatorTime {
        origin + AudioFormat.nanoseconds(forFrames: frame - codecDelay)
    }

    /// Wraps one encoded frame of `frames` samples. Its send time is a placeholder (the
    /// packet's nominal send time is unknown here); the sender stamps the real one.
    public mutating func packetize(_ payload: [UInt8], frames: Int) -> RTPPacket {
        let packet = RTPPacket(
            marker: startsEpoch, payloadType: payloadType, sequenceNumber: sequence, timestamp: nextTimestamp,
            ssrc: ssrc, presentationTime: nextPresentationTime, epoch: epoch, sendTime: CoordinatorTime(nanoseconds: 0),
            payload: payload)
        sequence = sequence.advanced(by: 1)
        startsEpoch = false
        framesSinceOrigin += Int64(frames)
        packetCount &+= 1
        octetCount &+= UInt32(truncatingIfNeeded: payload.count)
        return packet
    }

    /// Moves the timeline past `frames` frames without sending them (stale live input): the
    /// next packet's timestamp jumps ahead, its sequence number does not.
    public mutating func skip(frames: Int) {
        framesSinceOrigin += Int64(frames)
    }

    /// Cuts the timeline: the next packet plays at `origin`, under a new epoch (the next
    /// one, or the one given).
    public mutating func restart(at origin: CoordinatorTime, epoch: UInt32? = nil) {
        // Stream timestamps keep moving forward; only their mapping to time changes.
        self.origin = origin - AudioFormat.nanoseconds(forFrames: framesSinceOrigin - codecDelay)
        self.epoch = epoch ?? self.epoch &+ 1
        startsEpoch = true
    }

    /// A sender report for the current position: the next timestamp and when it is presented.
    public func senderReport(cname: String) -> RTCPSenderReport {
        RTCPSenderReport(ssrc: ssrc, ntpTime: NTPTimestamp(nextPresentationTime), rtpTimestamp: nextTimestamp,
                         packetCount: packetCount, octetCount: octetCount, cname: cname)
    }
}
