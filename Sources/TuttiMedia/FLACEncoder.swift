import CFFmpeg

/// FLAC, lossless, through FFmpeg's encoder: interleaved floats in, one FLAC frame per block
/// out (each frame stands alone: a player may start at any of them). For streams whose
/// frames must each carry their own instant (Sendspin's chunks), every `encode` call of
/// `blockSize` frames gives exactly one FLAC frame, encoded at once (no lookahead).
public final class FLACEncoder: @unchecked Sendable {
    public let sampleRate: Int
    public let channels: Int
    public let bitDepth: Int
    public let blockSize: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The stream's STREAMINFO (34 bytes), as the encoder made it.
    public let streamInfo: [UInt8]

    /// - Parameters:
    ///   - bitDepth: 16 or 24.
    ///   - blockSize: frames per FLAC frame (16 to 65,535).
    public init(sampleRate: Int = 48_000, channels: Int, bitDepth: Int, blockSize: Int) throws(MediaError) {
        guard [16, 24].contains(bitDepth), (1...8).contains(channels), (16...65_535).contains(blockSize) else {
            throw .unsupported(name: "FLAC", reason: "\(channels) channels of \(bitDepth) bits in blocks of \(blockSize)")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitDepth = bitDepth
        self.blockSize = blockSize
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_FLAC), let context = avcodec_alloc_context3(codec) else {
            throw .unsupported(name: "FLAC", reason: "this FFmpeg has no FLAC encoder")
        }
        self.context = context
        context.pointee.sample_rate = Int32(sampleRate)
        tutti_default_layout(&context.pointee.ch_layout, Int32(channels))
        context.pointee.sample_fmt = bitDepth == 16 ? AV_SAMPLE_FMT_S16 : AV_SAMPLE_FMT_S32
        context.pointee.bits_per_raw_sample = Int32(bitDepth)
        context.pointee.frame_size = Int32(blockSize)
        context.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        // Level 5 (FFmpeg's default) is a tenth of a real-time core's per cent here.
        context.pointee.compression_level = 5
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0, let extradata = context.pointee.extradata, context.pointee.extradata_size >= 34 else {
            avcodec_free_context(&self.context)
            throw .unsupported(name: "FLAC", reason: "the encoder did not open: \(MediaError.words(opened))")
        }
        streamInfo = Array(UnsafeBufferPointer(start: extradata, count: 34))
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard let frame else { throw .unsupported(name: "FLAC", reason: "out of memory") }
        frame.pointee.format = context.pointee.sample_fmt.rawValue
        frame.pointee.nb_samples = Int32(blockSize)
        frame.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw .unsupported(name: "FLAC", reason: "out of memory") }
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&frame)
        avcodec_free_context(&context)
    }

    /// A FLAC stream's opening: `fLaC` and its STREAMINFO block, marked the last metadata block.
    public var streamHeader: [UInt8] { Array("fLaC".utf8) + [0x80, 0x00, 0x00, 0x22] + streamInfo }

    /// One block of interleaved samples (`blockSize` × `channels`; a short one is padded with
    /// silence) as one FLAC frame.
    public func encode(_ samples: [Float]) throws(MediaError) -> [UInt8] {
        guard let context, let frame, let packet else { throw .decodeFailed(name: "FLAC", reason: "the encoder is closed") }
        guard av_frame_make_writable(frame) >= 0, let data = frame.pointee.data.0 else {
            throw .decodeFailed(name: "FLAC", reason: "no frame to fill")
        }
        let count = blockSize * channels
        if bitDepth == 16 {
            data.withMemoryRebound(to: Int16.self, capacity: count) { out in
                for i in 0..<count { out[i] = i < samples.count ? Int16(clamping: Int((samples[i] * 32_768).rounded())) : 0 }
            }
        } else {
            // 24 bits left-justified in 32, as FFmpeg's S32 with 24 raw bits has them.
            data.withMemoryRebound(to: Int32.self, capacity: count) { out in
                for i in 0..<count {
                    let value = i < samples.count ? min(max(Int((Double(samples[i]) * 8_388_608).rounded()), -8_388_608), 8_388_607) : 0
                    out[i] = Int32(value) << 8
                }
            }
        }
        var sent = avcodec_send_frame(context, frame)
        guard sent >= 0 else { throw .decodeFailed(name: "FLAC", reason: MediaError.words(sent)) }
        sent = avcodec_receive_packet(context, packet)
        guard sent >= 0, let bytes = packet.pointee.data else {
            throw .decodeFailed(name: "FLAC", reason: "no frame came out: \(MediaError.words(sent))")
        }
        defer { av_packet_unref(packet) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(packet.pointee.size)))
    }
}
