import CFFmpeg

/// Cover art made to a display's measure (Sendspin's artwork role): a picture as a file
/// carries it (JPEG, PNG, or any image FFmpeg decodes), scaled to fit `width` × `height`
/// with its proportions kept and centred on black (letterboxed, as the reference server
/// does), then encoded as JPEG or PNG. Through FFmpeg: its decoders, libswscale's bicubic
/// scaling, its encoders. Nil for bytes that are no picture.
public enum CoverRenderer {
    public enum Format: String, Sendable {
        case jpeg, png
    }

    /// The largest picture it decodes, in pixels a side (a cover is far smaller).
    public static let maximumSide = 8_192

    public static func render(_ image: [UInt8], width: Int, height: Int, format: Format) -> [UInt8]? {
        guard (1...4_096).contains(width), (1...4_096).contains(height), !image.isEmpty, let decoded = decode(image) else { return nil }
        var source: UnsafeMutablePointer<AVFrame>? = decoded
        defer { av_frame_free(&source) }
        let target: AVPixelFormat = format == .jpeg ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_RGB24
        guard let canvas = blackFrame(width: width, height: height, format: target) else { return nil }
        var owned: UnsafeMutablePointer<AVFrame>? = canvas
        defer { av_frame_free(&owned) }
        // Fit within the canvas, proportions kept.
        let w = Int(decoded.pointee.width), h = Int(decoded.pointee.height)
        let scale = min(Double(width) / Double(w), Double(height) / Double(h))
        // (Even sizes and offsets: 4:2:0 halves them.)
        let fw = min(max(2, Int((Double(w) * scale).rounded()) & ~1), width)
        let fh = min(max(2, Int((Double(h) * scale).rounded()) & ~1), height)
        let x = ((width - fw) / 2) & ~1, y = ((height - fh) / 2) & ~1
        guard let scaler = sws_getContext(Int32(w), Int32(h), AVPixelFormat(decoded.pointee.format), Int32(fw), Int32(fh), target,
                                          Int32(SWS_BICUBIC), nil, nil, nil) else { return nil }
        defer { sws_freeContext(scaler) }
        // The destination: the canvas's planes, offset to where the picture goes.
        let (canvasPlanes, canvasStrides) = planes(of: canvas)
        var destinations: [UnsafeMutablePointer<UInt8>?] = [nil, nil, nil, nil]
        for p in 0..<(format == .jpeg ? 3 : 1) {
            let (px, py) = p == 0 ? (x, y) : (x / 2, y / 2)
            destinations[p] = canvasPlanes[p].map { $0 + py * Int(canvasStrides[p]) + px * (format == .png ? 3 : 1) }
        }
        let (sourcePlanes, sourceStrides) = planes(of: decoded)
        let sources: [UnsafePointer<UInt8>?] = sourcePlanes.map { $0.map { UnsafePointer($0) } }
        let scaled = sws_scale(scaler, sources, sourceStrides, 0, Int32(h), destinations, canvasStrides)
        guard scaled > 0 else { return nil }
        return encode(canvas, format: format)
    }

    /// A picture's size and its pixels as RGB (3 bytes each, row after row): for checking what
    /// was rendered.
    static func pixels(_ image: [UInt8]) -> (width: Int, height: Int, rgb: [UInt8])? {
        guard let decoded = decode(image) else { return nil }
        var source: UnsafeMutablePointer<AVFrame>? = decoded
        defer { av_frame_free(&source) }
        let w = Int(decoded.pointee.width), h = Int(decoded.pointee.height)
        guard let scaler = sws_getContext(Int32(w), Int32(h), AVPixelFormat(decoded.pointee.format), Int32(w), Int32(h), AV_PIX_FMT_RGB24,
                                          Int32(SWS_POINT), nil, nil, nil) else { return nil }
        defer { sws_freeContext(scaler) }
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        let (planes, strides) = planes(of: decoded)
        let sources: [UnsafePointer<UInt8>?] = planes.map { $0.map { UnsafePointer($0) } }
        let scaled = rgb.withUnsafeMutableBufferPointer { out in
            sws_scale(scaler, sources, strides, 0, Int32(h), [out.baseAddress, nil, nil, nil], [Int32(w * 3), 0, 0, 0])
        }
        return scaled > 0 ? (w, h, rgb) : nil
    }

    /// A frame's first four planes and their strides.
    private static func planes(of frame: UnsafeMutablePointer<AVFrame>) -> ([UnsafeMutablePointer<UInt8>?], [Int32]) {
        let data = frame.pointee.data, sizes = frame.pointee.linesize
        return ([data.0, data.1, data.2, data.3], [sizes.0, sizes.1, sizes.2, sizes.3])
    }

    /// The picture in `bytes`, decoded (its format found by FFmpeg's image probes).
    static func decode(_ bytes: [UInt8]) -> UnsafeMutablePointer<AVFrame>? {
        let id: AVCodecID
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { id = AV_CODEC_ID_MJPEG }
        else if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { id = AV_CODEC_ID_PNG }
        else if bytes.starts(with: Array("GIF8".utf8)) { id = AV_CODEC_ID_GIF }
        else if bytes.starts(with: Array("BM".utf8)) { id = AV_CODEC_ID_BMP }
        else if bytes.count > 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WEBP".utf8) { id = AV_CODEC_ID_WEBP }
        else { return nil }
        guard let codec = avcodec_find_decoder(id) else { return nil }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        guard let context, avcodec_open2(context, codec, nil) >= 0 else { return nil }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let packet, av_new_packet(packet, Int32(bytes.count)) >= 0 else { return nil }
        bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
        var frame = av_frame_alloc()
        guard avcodec_send_packet(context, packet) >= 0,
              let decoded = frame, avcodec_receive_frame(context, decoded) >= 0,
              (1...maximumSide).contains(Int(decoded.pointee.width)), (1...maximumSide).contains(Int(decoded.pointee.height)) else {
            av_frame_free(&frame)
            return nil
        }
        return decoded
    }

    /// A frame of `format`, all black.
    private static func blackFrame(width: Int, height: Int, format: AVPixelFormat) -> UnsafeMutablePointer<AVFrame>? {
        var frame = av_frame_alloc()
        guard let f = frame else { return nil }
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = format.rawValue
        guard av_frame_get_buffer(f, 0) >= 0 else {
            av_frame_free(&frame)
            return nil
        }
        // Black: zero luma and RGB; chroma at its middle (128).
        let (data, sizes) = planes(of: f)
        let rows = [height, (height + 1) / 2, (height + 1) / 2]
        for p in 0..<(format == AV_PIX_FMT_YUVJ420P ? 3 : 1) {
            data[p]?.update(repeating: p == 0 ? 0 : 128, count: rows[p] * Int(sizes[p]))
        }
        return f
    }

    private static func encode(_ frame: UnsafeMutablePointer<AVFrame>, format: Format) -> [UInt8]? {
        guard let codec = avcodec_find_encoder(format == .jpeg ? AV_CODEC_ID_MJPEG : AV_CODEC_ID_PNG) else { return nil }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        guard let context else { return nil }
        context.pointee.width = frame.pointee.width
        context.pointee.height = frame.pointee.height
        context.pointee.pix_fmt = AVPixelFormat(frame.pointee.format)
        context.pointee.time_base = AVRational(num: 1, den: 25)
        if format == .jpeg {
            // A quality of about 90 (FFmpeg's qscale 2 to 3).
            context.pointee.flags |= Int32(AV_CODEC_FLAG_QSCALE)
            context.pointee.global_quality = Int32(FF_QP2LAMBDA * 3)
            frame.pointee.quality = context.pointee.global_quality
        }
        guard avcodec_open2(context, codec, nil) >= 0, avcodec_send_frame(context, frame) >= 0 else { return nil }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let packet, avcodec_receive_packet(context, packet) >= 0, let data = packet.pointee.data else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
    }
}
