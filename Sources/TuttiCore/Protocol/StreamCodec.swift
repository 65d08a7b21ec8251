/// What a zone's stream carries (`--codec`): Opus (RFC 7587, the default: about 130 kbit/s,
/// 20 ms packets), or the house's audio without loss: PCM as L24 (RFC 3190, 24-bit
/// big-endian, 2.3 Mbit/s) or FLAC frames (tutti's own payload: one FLAC frame per packet,
/// each standing alone). The lossless codecs go in 4 ms packets (192 frames): an L24
/// packet's 1,152 bytes, with RTP's header, the SRTP tag, UDP and IP, leave room for 23
/// member tags under Ethernet's 1,500-byte MTU, so that no packet is fragmented (a
/// fragment lost loses the packet). Each codec has a payload type of its own, and its
/// retransmissions one more (RFC 4588 `apt`), so a follower decodes every packet by what
/// it is, whichever zone it plays.
public enum StreamCodec: String, CaseIterable, Codable, Sendable {
    case opus, pcm, flac

    /// The RTP payload type of the stream's packets.
    public var payloadType: UInt8 {
        switch self {
        case .opus: RTPPacket.defaultPayloadType
        case .pcm: 98
        case .flac: 100
        }
    }

    /// The payload type of its retransmissions (RFC 4588), tied to it by `apt`.
    public var retransmissionPayloadType: UInt8 { payloadType + 1 }

    /// The codec whose stream packets have payload type `payloadType`.
    public init?(payloadType: UInt8) {
        guard let codec = Self.allCases.first(where: { $0.payloadType == payloadType }) else { return nil }
        self = codec
    }

    /// The codec whose retransmissions have payload type `payloadType`.
    public init?(retransmissionPayloadType: UInt8) {
        guard let codec = Self.allCases.first(where: { $0.retransmissionPayloadType == retransmissionPayloadType }) else { return nil }
        self = codec
    }

    /// Frames (48 kHz) per packet: Opus's 20 ms; the lossless codecs' 4 ms.
    public var framesPerPacket: Int {
        switch self {
        case .opus: 960
        case .pcm, .flac: 192
        }
    }

    public var frameMilliseconds: Double { Double(framesPerPacket) * 1_000 / Double(AudioFormat.sampleRate) }

    /// The SDP's `a=rtpmap` encoding (RFC 4566 §6): name/rate/channels.
    public var rtpmap: String {
        switch self {
        case .opus: "opus/48000/2"
        case .pcm: "L24/48000/2"
        case .flac: "X-TUTTI-FLAC/48000/2"
        }
    }

    /// The SDP's `a=fmtp` parameters, if the codec has any.
    public var fmtp: String? {
        switch self {
        case .opus: "stereo=1; sprop-stereo=1; useinbandfec=1"
        case .pcm, .flac: nil
        }
    }

    /// What people read: "Opus", "PCM (L24)", "FLAC".
    public var displayName: String {
        switch self {
        case .opus: "Opus"
        case .pcm: "PCM (L24)"
        case .flac: "FLAC"
        }
    }
}
