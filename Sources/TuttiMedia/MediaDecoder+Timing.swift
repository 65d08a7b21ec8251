import CFFmpeg
import TuttiCore

/// Who trims a track's encoder delay and padding, and where it ends.
struct Trimming {
    /// FFmpeg's decoder trims by the container's side data (MP3's LAME header, Opus's
    /// pre-skip, FFmpeg's own reading of an edit list); false: it trims nothing, the window does.
    var byCodec = true
    /// Frames decoded before the track's first (the encoder's priming, when the window trims).
    var priming: Int64 = 0
    /// The track's length in frames, and whether it is exact (frames past it are padding).
    var length: Int64?
    var exact = false
    /// Skip side data at the stream's start still counts (the window trims Vorbis's end only).
    var sideDataStart = false
    /// A frame holds no more than its packet's duration says (MP4 through FFmpeg's edit list).
    var toPacketDuration = false
    /// The stream's timestamp of the track's first frame.
    var startTimestamp: Int64 = 0
}

extension MediaDecoder {
    /// Frames to decode ahead of a seek's target: none for lossless codecs; the codec's own
    /// pre-roll (Opus: 80 ms), or a few frames for the others (overlapping transforms, MP3's
    /// bit reservoir).
    static func preroll(_ parameters: AVCodecParameters) -> Int64 {
        if let descriptor = avcodec_descriptor_get(parameters.codec_id),
           descriptor.pointee.props & AV_CODEC_PROP_LOSSLESS != 0, descriptor.pointee.props & AV_CODEC_PROP_LOSSY == 0 {
            return 0
        }
        return max(Int64(parameters.seek_preroll), 4_608)
    }

    /// Whether the input starts as an MP4 does (an `ftyp` box); it is read again from its start.
    static func looksLikeMP4(_ input: MediaInput) -> Bool {
        guard input.seek(to: 0) else { return false }
        let head = input.readBytes(8)
        _ = input.seek(to: 0)
        return head.count == 8 && String(decoding: head[4..<8], as: UTF8.self) == "ftyp"
    }

    /// An MP4's own timing (its edit list, read from its boxes) when the decoder should trim
    /// by it rather than by FFmpeg's reading of it: the input (seekable, an MP4) has at most
    /// one edit of its audio.
    static func mp4Timing(_ input: MediaInput) -> MP4Timing? {
        guard let size = input.size, size > 16 else { return nil }
        defer { _ = input.seek(to: 0) }
        return MP4Timing.read(size: size) { offset, count in
            guard input.seek(to: offset) else { return nil }
            return input.readBytes(count)
        }
    }

    /// How the track is trimmed: by the MP4's own timing (`mp4`), by the window for Vorbis
    /// (FFmpeg 5 trims 128 frames too many from its end), else by FFmpeg, with the length
    /// exact where the container knows it (Ogg's granule positions, FLAC's STREAMINFO,
    /// iTunes' `iTunSMPB`) and FFmpeg's estimate elsewhere.
    static func trimming(_ context: UnsafeMutablePointer<AVFormatContext>, _ stream: UnsafeMutablePointer<AVStream>,
                         formatName: String, mp4: MP4Timing?) -> Trimming {
        let s = stream.pointee
        let parameters = s.codecpar.pointee
        let rate = Int64(parameters.sample_rate)
        let base = s.time_base
        var plan = Trimming()
        guard rate > 0, base.num > 0, base.den > 0 else { return plan }
        func frames(_ ts: Int64) -> Int64 { av_rescale(ts, Int64(base.num) * rate, Int64(base.den)) }
        let start = s.start_time == tutti_nopts_value() ? 0 : s.start_time
        let duration = s.duration != tutti_nopts_value() && s.duration > 0 ? s.duration : nil
        let smpb = iTunesGapless(context)
        if let mp4, formatName.hasPrefix("mov,") {
            // The packets' timestamps are the media's own (the edit list ignored).
            let scale = mp4.mediaTimeScale
            let priming = mp4.priming > 0 ? mp4.priming : av_rescale(smpb?.priming ?? 0, scale, rate)
            plan.byCodec = false
            plan.priming = av_rescale(priming, rate, scale)
            plan.startTimestamp = av_rescale(priming, Int64(base.den), scale * Int64(base.num))
            if let smpb, smpb.frames > 0 {
                plan.length = smpb.frames
            } else if let duration {
                var timing = mp4
                timing.priming = priming
                let end = timing.end(mediaLength: av_rescale(duration, scale * Int64(base.num), Int64(base.den)))
                plan.length = av_rescale(end, rate, scale)
            }
            plan.exact = plan.length != nil
            return plan
        }
        plan.startTimestamp = start
        plan.toPacketDuration = formatName.hasPrefix("mov,")
        if parameters.codec_id == AV_CODEC_ID_VORBIS {
            plan.byCodec = false
            plan.sideDataStart = true
        }
        if let smpb, smpb.frames > 0 {
            plan.length = smpb.frames
            plan.exact = true
        } else if let duration {
            // Ogg's duration counts Opus's pre-skip.
            let preSkip = parameters.codec_id == AV_CODEC_ID_OPUS ? Int64(parameters.initial_padding) : 0
            plan.length = max(0, frames(duration) - frames(start) - preSkip)
            plan.exact = formatName == "ogg" || formatName == "flac"
        } else if context.pointee.duration != tutti_nopts_value(), context.pointee.duration > 0 {
            plan.length = av_rescale(context.pointee.duration, rate, Int64(AV_TIME_BASE))
        }
        return plan
    }

    /// iTunes' gapless information (`iTunSMPB`: priming, padding and the real frame count).
    static func iTunesGapless(_ context: UnsafeMutablePointer<AVFormatContext>) -> (priming: Int64, frames: Int64)? {
        guard let entry = av_dict_get(context.pointee.metadata, "iTunSMPB", nil, 0), let value = entry.pointee.value else { return nil }
        let fields = String(cString: value).split(separator: " ")
        guard fields.count >= 4, let priming = Int64(fields[1], radix: 16), let frames = Int64(fields[3], radix: 16),
              priming >= 0, frames >= 0 else { return nil }
        return (priming, frames)
    }
}
