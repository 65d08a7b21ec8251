import CFFmpeg
import TuttiCore

extension MediaDecoder {
    static func open(_ bridge: InputBridge, name: String, formatHint: String?, live: Bool,
                     ignoringEditList: Bool) throws(MediaError) -> (UnsafeMutablePointer<AVFormatContext>, Int32) {
        guard var context = avformat_alloc_context() else { throw .cannotOpen(name: name, reason: "out of memory") }
        context.pointee.pb = bridge.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        if live {
            // A stream: decide on little, so that it starts soon.
            // (A station sends a second's burst, then real time: asking more than the burst
            // holds would wait for it.)
            context.pointee.probesize = 32 * 1024
            context.pointee.max_analyze_duration = 250_000
        }
        var options: OpaquePointer?
        av_dict_set(&options, "format_whitelist", audioFormats, 0)
        // No demuxer may open anything else (a playlist's entries, a reference to another file).
        av_dict_set(&options, "protocol_whitelist", "none", 0)
        // MP4: the decoder trims by the file's own timing (MP4Timing).
        if ignoringEditList { av_dict_set(&options, "ignore_editlist", "1", 0) }
        defer { av_dict_free(&options) }
        let hinted = formatHint.flatMap { av_find_input_format($0) }
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let rc = avformat_open_input(&opened, nil, hinted, &options)
        guard rc >= 0, let ready = opened else {
            // avformat_open_input frees the context when it fails.
            if bridge.input.size == 0 { throw .notAudio(name: name, reason: "it is empty") }
            throw rc == tutti_averror_invaliddata() || rc == tutti_averror_eof()
                ? .notAudio(name: name, reason: rc == tutti_averror_eof() ? "it ends before any audio (cut short?)" : "its format is not one tutti knows")
                : .cannotOpen(name: name, reason: MediaError.words(rc))
        }
        context = ready
        let found = avformat_find_stream_info(context, nil)
        if found < 0 {
            var doomed: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&doomed)
            throw .notAudio(name: name, reason: "its streams cannot be read (\(MediaError.words(found)))")
        }
        do {
            return (context, try audioStream(context, name: name))
        } catch {
            var doomed: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&doomed)
            throw error
        }
    }

    /// The stream to play: the best audio stream FFmpeg can decode, with reasons when there is none.
    static func audioStream(_ context: UnsafeMutablePointer<AVFormatContext>, name: String) throws(MediaError) -> Int32 {
        var audio: [Int32] = []
        var video = false
        for i in 0..<Int32(context.pointee.nb_streams) {
            let s = context.pointee.streams[Int(i)]!.pointee
            switch s.codecpar.pointee.codec_type {
            case AVMEDIA_TYPE_AUDIO: audio.append(i)
            case AVMEDIA_TYPE_VIDEO where s.disposition & AV_DISPOSITION_ATTACHED_PIC == 0: video = true
            default: break
            }
        }
        guard !audio.isEmpty else {
            throw .notAudio(name: name, reason: video ? "it holds video only, no audio" : "it holds no audio stream")
        }
        for i in audio {
            let parameters = context.pointee.streams[Int(i)]!.pointee.codecpar.pointee
            if let why = protection(parameters) { throw .unsupported(name: name, reason: why) }
        }
        let best = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        if best >= 0, avcodec_find_decoder(context.pointee.streams[Int(best)]!.pointee.codecpar.pointee.codec_id) != nil {
            return best
        }
        let codec = String(cString: avcodec_get_name(context.pointee.streams[Int(audio[0])]!.pointee.codecpar.pointee.codec_id))
        throw .unsupported(name: name, reason: "its audio (\(codec)) has no decoder here")
    }

    /// Why a stream's audio is protected (DRM), if it is.
    static func protection(_ parameters: AVCodecParameters) -> String? {
        let tag = parameters.codec_tag
        let fourCC = String(decoding: [UInt8(tag & 0xFF), UInt8(tag >> 8 & 0xFF), UInt8(tag >> 16 & 0xFF), UInt8(tag >> 24 & 0xFF)],
                            as: UTF8.self)
        switch fourCC {
        case "drms", "drmi", "p608": return "it is protected by DRM (the iTunes Store's FairPlay)"
        case "enca": return "it is encrypted (DRM)"
        default: return nil
        }
    }

    static func openCodec(_ parameters: UnsafeMutablePointer<AVCodecParameters>, stream: UnsafeMutablePointer<AVStream>,
                          name: String, trimsByItself: Bool) throws(MediaError) -> UnsafeMutablePointer<AVCodecContext> {
        guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else {
            throw .unsupported(name: name, reason: "its audio has no decoder here")
        }
        guard let codec = avcodec_alloc_context3(decoder) else { throw .decodeFailed(name: name, reason: "out of memory") }
        var rc = avcodec_parameters_to_context(codec, parameters)
        if rc >= 0 {
            codec.pointee.pkt_timebase = stream.pointee.time_base
            codec.pointee.thread_count = 1
            if !trimsByItself { codec.pointee.flags2 |= AV_CODEC_FLAG2_SKIP_MANUAL }
            rc = avcodec_open2(codec, decoder, nil)
        }
        guard rc >= 0 else {
            var doomed: UnsafeMutablePointer<AVCodecContext>? = codec
            avcodec_free_context(&doomed)
            throw .unsupported(name: name, reason: "its audio (\(String(cString: decoder.pointee.name))) cannot be decoded: \(MediaError.words(rc))")
        }
        return codec
    }
}
