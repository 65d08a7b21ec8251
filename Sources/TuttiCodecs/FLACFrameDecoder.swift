import CFLAC
import TuttiCore

/// Decodes FLAC frames, one a packet, into 48 kHz interleaved stereo float with libFLAC.
/// Each frame stands alone (its header names its rate, depth and length, so no STREAMINFO
/// is needed): the decoder is given one packet's bytes and nothing after them, and its
/// input is flushed after every frame, so a packet can neither borrow from the next nor
/// leave anything for it. A frame libFLAC reports an error for (a lost sync, a bad header,
/// a CRC mismatch) throws, and is concealed; so is a lost one (`Concealment`).
public final class FLACFrameDecoder: ConcealingDecoder {
    /// The largest block taken: 120 ms (FLAC allows 65,535 frames; a forged header must not
    /// make a room's queue grow by seconds).
    static let maximumFrames = 5_760
    private var decoder: UnsafeMutablePointer<FLAC__StreamDecoder>?
    var concealment = Concealment()
    /// The packet being decoded, and how much of it libFLAC has read.
    private var input: ArraySlice<UInt8> = []
    /// What the frame decoded to (interleaved stereo), and whether libFLAC objected.
    private var decoded: [Float] = []
    private var failure: String?

    public init() throws(CodecError) {
        guard let decoder = FLAC__stream_decoder_new() else {
            throw .lossless(codec: "FLAC", reason: "libFLAC could not make a decoder")
        }
        self.decoder = decoder
        FLAC__stream_decoder_set_md5_checking(decoder, 0)
        let status = FLAC__stream_decoder_init_stream(
            decoder, Self.read, nil, nil, nil, nil, Self.write, nil, Self.error, Unmanaged.passUnretained(self).toOpaque())
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            FLAC__stream_decoder_delete(decoder)
            self.decoder = nil
            throw .lossless(codec: "FLAC", reason: "libFLAC's decoder did not start (status \(status.rawValue))")
        }
        decoded.reserveCapacity(Self.maximumFrames * 2)
    }

    deinit {
        if let decoder {
            FLAC__stream_decoder_finish(decoder)
            FLAC__stream_decoder_delete(decoder)
        }
    }

    public func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        guard let decoder else { throw CodecError.lossless(codec: "FLAC", reason: "the decoder is closed") }
        input = payload
        decoded.removeAll(keepingCapacity: true)
        failure = nil
        let ran = FLAC__stream_decoder_process_single(decoder)
        // Whatever it did, the next packet starts clean (and a decoder that hit the packet's
        // end, or gave up, is ready again).
        input = []
        FLAC__stream_decoder_flush(decoder)
        if ran == 0 || failure != nil || decoded.isEmpty {
            throw CodecError.lossless(codec: "FLAC", reason: failure ?? "no whole frame in \(payload.count) bytes")
        }
        output.append(contentsOf: decoded)
        let frames = decoded.count / 2
        concealment.decoded(output, frames: frames)
        return frames
    }

    // MARK: - libFLAC's callbacks (client data: this decoder, unretained)

    private static func this(_ client: UnsafeMutableRawPointer?) -> FLACFrameDecoder {
        Unmanaged<FLACFrameDecoder>.fromOpaque(client!).takeUnretainedValue()
    }

    /// Gives libFLAC what is left of the packet; past its end, the stream's end (the decoder
    /// stops there, and is flushed).
    private static let read: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in
        let me = this(client)
        guard let buffer, let bytes, !me.input.isEmpty else {
            bytes?.pointee = 0
            return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM
        }
        let n = min(bytes.pointee, me.input.count)
        me.input.prefix(n).withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: n) }
        me.input = me.input.dropFirst(n)
        bytes.pointee = n
        return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
    }

    /// One frame decoded: its channels (the first two; mono to both sides) interleaved, at
    /// full scale of its depth.
    private static let write: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
        let me = this(client)
        guard let header = frame?.pointee.header, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        let frames = Int(header.blocksize)
        let channels = Int(header.channels)
        let depth = Int(header.bits_per_sample)
        guard frames <= maximumFrames, channels >= 1, (4...32).contains(depth), me.decoded.isEmpty,
              let left = buffer[0], let right = channels > 1 ? buffer[1] : buffer[0] else {
            me.failure = "a frame of \(frames) frames, \(channels) channels of \(depth) bits"
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
        if header.sample_rate != UInt32(AudioFormat.sampleRate) {
            me.failure = "a frame at \(header.sample_rate) Hz"
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
        let scale = 1 / Float(Int64(1) << (depth - 1))
        for i in 0..<frames {
            me.decoded.append(Float(left[i]) * scale)
            me.decoded.append(Float(right[i]) * scale)
        }
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    private static let error: FLAC__StreamDecoderErrorCallback = { _, status, client in
        let me = this(client)
        if me.failure == nil {
            me.failure = switch status {
            case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: "no FLAC frame sync"
            case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: "a bad FLAC frame header"
            case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: "the frame's CRC does not match"
            default: "an unparseable FLAC stream (status \(status.rawValue))"
            }
        }
    }
}
