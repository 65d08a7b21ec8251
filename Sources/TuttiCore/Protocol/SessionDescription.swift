/// Builds the SDP (RFC 4566) that describes tutti's stream, so stock receivers (GStreamer,
/// ffmpeg) can decode it: the codec's rtpmap and fmtp (RFC 7587 Opus, RFC 3190 L24, or
/// tutti's FLAC frames), and RFC 7273 clock lines.
public struct SessionDescription: Sendable {
    public var sessionID: UInt64
    public var originAddress: String
    /// Where the stream goes: a multicast group or a unicast address.
    public var connectionAddress: String
    public var isMulticast: Bool
    public var port: UInt16
    public var codec: StreamCodec
    public var payloadType: UInt8 { codec.payloadType }
    public var frameMilliseconds: Double
    /// The RTP timestamp at coordinator time 0 (RFC 7273 `mediaclk:direct`), when known.
    public var mediaClockOffset: UInt32?
    /// The SRTP master key and salt in base64 (RFC 4568 `inline:`) when the stream is sealed
    /// with AEAD_AES_128_GCM (RFC 7714): whoever reads this SDP can hear the house.
    public var srtpKey: String?
    /// The stream's SSRC and RTCP canonical name (RFC 5576 `a=ssrc`): an SRTP receiver keys
    /// its context by SSRC.
    public var source: (ssrc: UInt32, cname: String)?

    public init(sessionID: UInt64, originAddress: String, connectionAddress: String, isMulticast: Bool,
                port: UInt16, codec: StreamCodec = .opus, frameMilliseconds: Double,
                mediaClockOffset: UInt32?, srtpKey: String? = nil, source: (ssrc: UInt32, cname: String)? = nil) {
        self.sessionID = sessionID
        self.originAddress = originAddress
        self.connectionAddress = connectionAddress
        self.isMulticast = isMulticast
        self.port = port
        self.codec = codec
        self.frameMilliseconds = frameMilliseconds
        self.mediaClockOffset = mediaClockOffset
        self.srtpKey = srtpKey
        self.source = source
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
            "i=tutti synchronized house audio (\(codec.displayName), presentation times on the coordinator clock)",
            "c=IN IP4 \(connectionAddress)\(isMulticast ? "/1" : "")",
            "t=0 0",
            "a=tool:tutti",
            "a=recvonly",
            "m=audio \(port) \(srtpKey == nil ? "RTP/AVP" : "RTP/SAVP") \(payloadType)",
            "a=rtpmap:\(payloadType) \(codec.rtpmap)",
        ] + (codec.fmtp.map { ["a=fmtp:\(payloadType) \($0)"] } ?? []) + [
            "a=rtcp-fb:\(payloadType) nack",
            "a=ptime:\(ptime)",
            "a=extmap:1 urn:tutti:presentation-time",
            "a=extmap:2 urn:tutti:epoch",
            "a=extmap:3 urn:tutti:send-time",
            "a=ts-refclk:local",
        ]
        if let srtpKey {
            lines.append("a=crypto:1 AEAD_AES_128_GCM inline:\(srtpKey)")
            lines.append("a=extmap:4 urn:tutti:srtp-rollover")
        }
        if let source {
            lines.append("a=ssrc:\(source.ssrc) cname:\(source.cname)")
        }
        if let mediaClockOffset {
            lines.append("a=mediaclk:direct=\(mediaClockOffset)")
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
