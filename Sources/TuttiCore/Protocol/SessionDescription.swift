/// Builds the SDP (RFC 4566) that describes tutti's stream, so stock receivers (GStreamer,
/// ffmpeg) can decode it: the RFC 7587 Opus rtpmap and fmtp, and RFC 7273 clock lines.
public struct SessionDescription: Sendable {
    public var sessionID: UInt64
    public var originAddress: String
    /// Where the stream goes: a multicast group or a unicast address.
    public var connectionAddress: String
    public var isMulticast: Bool
    public var port: UInt16
    public var payloadType: UInt8
    public var frameMilliseconds: Double
    /// The RTP timestamp at coordinator time 0 (RFC 7273 `mediaclk:direct`), when known.
    public var mediaClockOffset: UInt32?

    public init(sessionID: UInt64, originAddress: String, connectionAddress: String, isMulticast: Bool,
                port: UInt16, payloadType: UInt8 = RTPPacket.defaultPayloadType, frameMilliseconds: Double,
                mediaClockOffset: UInt32?) {
        self.sessionID = sessionID
        self.originAddress = originAddress
        self.connectionAddress = connectionAddress
        self.isMulticast = isMulticast
        self.port = port
        self.payloadType = payloadType
        self.frameMilliseconds = frameMilliseconds
        self.mediaClockOffset = mediaClockOffset
    }

    /// The RTP timestamp that would be presented at coordinator time 0, from any one
    /// (timestamp, presentation time) pair of the stream.
    public static func mediaClockOffset(timestamp: StreamTimestamp, presentedAt time: CoordinatorTime) -> UInt32 {
        let frames = AudioFormat.frames(forNanoseconds: time.nanoseconds)
        return timestamp.advanced(by: -frames).rawValue
    }

    public var text: String {
        let ptime = frameMilliseconds == frameMilliseconds.rounded() ? String(Int(frameMilliseconds)) : String(frameMilliseconds)
        var lines = [
            "v=0",
            "o=- \(sessionID) 1 IN IP4 \(originAddress)",
            "s=tutti",
            "i=tutti synchronized house audio (Opus, presentation times on the coordinator clock)",
            "c=IN IP4 \(connectionAddress)\(isMulticast ? "/1" : "")",
            "t=0 0",
            "a=tool:tutti",
            "a=recvonly",
            "m=audio \(port) RTP/AVP \(payloadType)",
            "a=rtpmap:\(payloadType) opus/48000/2",
            "a=fmtp:\(payloadType) stereo=1; sprop-stereo=1; useinbandfec=1",
            "a=rtcp-fb:\(payloadType) nack",
            "a=ptime:\(ptime)",
            "a=extmap:1 urn:tutti:presentation-time",
            "a=extmap:2 urn:tutti:epoch",
            "a=extmap:3 urn:tutti:send-time",
            "a=ts-refclk:local",
        ]
        if let mediaClockOffset {
            lines.append("a=mediaclk:direct=\(mediaClockOffset)")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
