import Testing
@testable import TuttiCore

/// The codecs a zone's stream may carry: their payload types, the zones' choice, the SDP,
/// and a receiver that decodes each packet by its own.
@Suite("Stream codecs")
struct StreamCodecTests {
    @Test func eachCodecHasItsPayloadTypesAndPackets() {
        #expect(StreamCodec.allCases.map(\.payloadType) == [96, 98, 100])
        #expect(StreamCodec.allCases.map(\.retransmissionPayloadType) == [97, 99, 101])
        for codec in StreamCodec.allCases {
            #expect(StreamCodec(payloadType: codec.payloadType) == codec)
            #expect(StreamCodec(retransmissionPayloadType: codec.retransmissionPayloadType) == codec)
        }
        #expect(StreamCodec(payloadType: 97) == nil && StreamCodec(retransmissionPayloadType: 96) == nil)
        #expect(StreamCodec.pcm.framesPerPacket == 192 && StreamCodec.pcm.frameMilliseconds == 4)
        // An L24 packet, with RTP's sealed header, its tag, UDP and IP, fits Ethernet's MTU
        // with room for 23 member tags.
        #expect(StreamCodec.pcm.framesPerPacket * 6 + 44 + 16 + 28 + 23 * 11 <= 1_500)
    }

    @Test func zonesHaveTheHousesCodecOrTheirOwnByNameOrId() {
        var codecs = ZoneCodecs(.opus)
        let kids = ZoneCodecs.parse("Kids Room=flac")
        #expect(kids?.zone == "Kids Room" && kids?.codec == .flac)
        codecs.set(.flac, forZone: "Kids Room")
        codecs.set(.pcm, forZone: "default")
        #expect(codecs.codec(forZone: "kids-room") == .flac)
        #expect(codecs.codec(forZone: "default") == .pcm)
        #expect(codecs.codec(forZone: "garden") == .opus)
        #expect(codecs.all == [.opus, .flac, .pcm])
        #expect(ZoneCodecs.parse("a=b=PCM")?.zone == "a=b")  // the last '=' splits: a name may hold one
        for bad in ["kids", "kids=mp3", "=flac", " =pcm"] { #expect(ZoneCodecs.parse(bad) == nil, "\(bad)") }
    }

    @Test func theSDPNamesTheCodec() {
        func sdp(_ codec: StreamCodec) -> String {
            SessionDescription(sessionID: 1, originAddress: "127.0.0.1", connectionAddress: "127.0.0.1", isMulticast: false, port: 5004,
                               codec: codec, frameMilliseconds: codec.frameMilliseconds, mediaClockOffset: nil).text
        }
        #expect(sdp(.pcm).contains("m=audio 5004 RTP/AVP 98\r\na=rtpmap:98 L24/48000/2\r\na=rtcp-fb:98 nack\r\na=ptime:4\r\n"))
        #expect(!sdp(.pcm).contains("fmtp"))
        #expect(sdp(.flac).contains("a=rtpmap:100 X-TUTTI-FLAC/48000/2"))
        #expect(sdp(.opus).contains("a=rtpmap:96 opus/48000/2\r\na=fmtp:96 stereo=1; sprop-stereo=1; useinbandfec=1\r\n"))
    }

    /// Retransmissions of a lossless zone's packets carry its codec's own payload type,
    /// and a receiver puts them back as that codec's.
    @Test func retransmissionsKeepTheirCodec() throws {
        var r = Retransmitter<Int>(mediaSSRC: 0xABCD, ssrc: 55, initialSequence: 1, configuration: .init())
        r.record(RTPPacket(payloadType: 98, sequenceNumber: SequenceNumber(7), timestamp: StreamTimestamp(0), ssrc: 0xABCD,
                           presentationTime: CoordinatorTime(nanoseconds: 1), epoch: 1, payload: [1, 2, 3, 4, 5, 6]))
        let resent = r.answer(GenericNACK(senderSSRC: 1, mediaSSRC: 0xABCD, sequences: [SequenceNumber(7)]), from: 1, now: 0)
        #expect(resent.map(\.payloadType) == [99])
    }

    /// Decoders that say which they are: every frame of a packet is the decoder's mark.
    final class Marked: FrameDecoder {
        let mark: Float
        var resets = 0
        init(_ mark: Float) { self.mark = mark }
        func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
            output.append(contentsOf: repeatElement(mark, count: payload.count * 2))
            return payload.count
        }
        func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }
        func conceal(frames: Int, into output: inout [Float]) throws -> Int {
            output.append(contentsOf: repeatElement(-mark, count: frames * 2))
            return frames
        }
        func reset() { resets += 1 }
    }

    /// A stream that changes codec (a room moved into a lossless zone): each packet goes to
    /// its payload type's decoder, which starts clean; what is lost is concealed by the
    /// one that decoded last.
    @Test func eachPacketIsDecodedByItsPayloadTypesDecoder() {
        let opus = Marked(1), pcm = Marked(2)
        var decoding = FrameDecoding(decoders: [96: opus, 98: pcm], maximumConcealment: 9_600)
        var jitter = JitterBuffer(capacity: 16)
        var queue = SampleQueue(start: 0)
        var statistics = PlayoutStatistics()
        let packets: [(sequence: Int64, timestamp: Int64, type: UInt8)] = [(0, 0, 96), (1, 4, 96), (2, 8, 98), (4, 12, 98)]
        for p in packets {
            _ = jitter.insert(BufferedPacket(sequence: p.sequence, timestamp: p.timestamp, presentationTime: CoordinatorTime(nanoseconds: 0),
                                             payload: ArraySlice(repeating: 0, count: 4), payloadType: p.type))
        }
        decoding.fill(until: 16, from: &jitter, into: &queue, statistics: &statistics)
        var out: [Float] = []
        queue.interpolate(from: 0, step: 1, count: 15, into: &out)
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        #expect(left == [1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, -2, -2, -2], "\(left)")
        #expect(pcm.resets == 1 && opus.resets == 0)
        #expect(statistics.lost == 1)
    }

    /// A retransmission of payload type 99 goes back in as an L24 packet (98) where the
    /// room decodes L24; one of a codec the room has no decoder for is not taken; the gate
    /// passes the payload types the room decodes.
    @Test func aReceiverTakesEachCodecsRetransmissions() {
        let engine = PlayoutEngine(decoders: [96: Marked(1), 98: Marked(2)])
        #expect(engine.originalPayloadType(ofRetransmission: 99) == 98)
        #expect(engine.originalPayloadType(ofRetransmission: 97) == 96)
        #expect(engine.originalPayloadType(ofRetransmission: 101) == nil)  // FLAC: no decoder here
        #expect(engine.originalPayloadType(ofRetransmission: 98) == nil)
        // A lone decoder of its own payload type takes the retransmissions of 97, as always.
        var single = PlayoutEngine.Configuration()
        single.payloadType = 111
        #expect(PlayoutEngine(decoder: Marked(1), configuration: single).originalPayloadType(ofRetransmission: 97) == 111)
        #expect(engine.gate.presentation(of: RTPPacket(payloadType: 98, sequenceNumber: SequenceNumber(1), timestamp: StreamTimestamp(0),
                                                        ssrc: 5, presentationTime: CoordinatorTime(nanoseconds: 1), epoch: 1,
                                                        payload: [1])) != nil)
        #expect(engine.gate.presentation(of: RTPPacket(payloadType: 100, sequenceNumber: SequenceNumber(1), timestamp: StreamTimestamp(0),
                                                        ssrc: 5, presentationTime: CoordinatorTime(nanoseconds: 1), epoch: 1,
                                                        payload: [1])) == nil)
    }
}
