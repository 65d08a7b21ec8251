/// Retransmission packets (RFC 4588): a resent packet travels as its own payload type with
/// its own SSRC and sequence numbers, its payload prefixed by the original sequence number
/// (OSN). Timestamp, marker and tutti's header extensions are the original's, so a follower
/// can put it back exactly where the original belonged.
extension RTPPacket {
    /// The payload type of tutti's retransmissions (`a=rtpmap:97 rtx/48000`, `apt=96`).
    public static let retransmissionPayloadType: UInt8 = 97

    /// The SSRC of the retransmission stream of media stream `ssrc`, and the other way
    /// round: tied to it, so that a follower knows which stream a retransmission belongs to
    /// (a room that moved to another zone still gets answers to what it asked of the last).
    public static func retransmissionSSRC(of ssrc: UInt32) -> UInt32 { ssrc ^ 0x7274_7800 }

    /// This packet as a retransmission: payload type `payloadType`, SSRC `ssrc`, sequence
    /// number `sequence` of the retransmission stream.
    public func retransmission(payloadType: UInt8 = RTPPacket.retransmissionPayloadType, ssrc: UInt32,
                               sequence: SequenceNumber) -> RTPPacket {
        var rtx = self
        rtx.payloadType = payloadType
        rtx.ssrc = ssrc
        rtx.sequenceNumber = sequence
        rtx.payload = ([UInt8(sequenceNumber.rawValue >> 8), UInt8(sequenceNumber.rawValue & 0xFF)] + payload)[...]
        return rtx
    }

    /// The original packet a retransmission carries, given the original stream's SSRC and
    /// payload type. Throws for a payload too short to hold the original sequence number.
    public func originalFromRetransmission(ssrc: UInt32, payloadType: UInt8 = RTPPacket.defaultPayloadType)
        throws(PacketError) -> RTPPacket
    {
        guard payload.count >= 2 else { throw .badPayload("retransmission without its original sequence number") }
        var original = self
        original.payloadType = payloadType
        original.ssrc = ssrc
        let start = payload.startIndex
        original.sequenceNumber = SequenceNumber(UInt16(payload[start]) << 8 | UInt16(payload[start + 1]))
        original.payload = payload[(start + 2)...]
        return original
    }
}
