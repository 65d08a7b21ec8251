import CFFmpeg

/// Turns decoded frames, whatever their sample format and channels, into interleaved
/// stereo float at their own rate (libswresample, without changing the rate): mono goes to
/// both channels at full level, more channels are mixed down.
final class SampleConverter {
    private var context: OpaquePointer?
    /// What the context was made for.
    private var made: (format: Int32, channels: Int32, mask: UInt64, rate: Int32)?
    /// Interleaved output of the last conversion (mono output is widened after).
    private(set) var samples: [Float] = []

    deinit { swr_free(&context) }

    /// Converts `frame`; the result is in `samples` (2 per frame). Returns the frames made.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Int {
        let f = frame.pointee
        let count = Int(f.nb_samples)
        let channels = f.ch_layout.nb_channels
        guard count > 0, channels > 0 else { return 0 }
        let mask = f.ch_layout.order == AV_CHANNEL_ORDER_NATIVE ? f.ch_layout.u.mask : 0
        // Interleaved stereo float already: copied as it is.
        if f.format == AV_SAMPLE_FMT_FLT.rawValue, channels == 2 {
            samples.removeAll(keepingCapacity: true)
            let data = UnsafeRawPointer(f.data.0!).assumingMemoryBound(to: Float.self)
            samples.append(contentsOf: UnsafeBufferPointer(start: data, count: count * 2))
            return count
        }
        if made == nil || made! != (f.format, channels, mask, f.sample_rate) {
            try make(frame, mono: channels == 1)
            made = (f.format, channels, mask, f.sample_rate)
        }
        let outChannels = channels == 1 ? 1 : 2
        if samples.count < count * outChannels { samples = [Float](repeating: 0, count: count * outChannels) }
        let inputs = UnsafeMutableRawPointer(f.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
        let converted: Int32 = samples.withUnsafeMutableBytes { out in
            var outPointer: UnsafeMutablePointer<UInt8>? = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return swr_convert(context, &outPointer, Int32(count), inputs, Int32(count))
        }
        guard converted >= 0 else { throw .decodeFailed(name: "audio", reason: "cannot convert samples: \(MediaError.words(converted))") }
        let n = Int(converted)
        if channels == 1 {
            // Mono: the one channel on both sides, from the end back so that it widens in place.
            if samples.count < n * 2 { samples += [Float](repeating: 0, count: n * 2 - samples.count) }
            var i = n - 1
            while i >= 0 {
                samples[2 * i + 1] = samples[i]
                samples[2 * i] = samples[i]
                i -= 1
            }
        }
        samples.removeSubrange((n * 2)...)
        return n
    }

    private func make(_ frame: UnsafeMutablePointer<AVFrame>, mono: Bool) throws(MediaError) {
        swr_free(&context)
        var input = AVChannelLayout()
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            tutti_default_layout(&input, frame.pointee.ch_layout.nb_channels)
        } else if av_channel_layout_copy(&input, &frame.pointee.ch_layout) < 0 {
            throw .decodeFailed(name: "audio", reason: "unreadable channel layout")
        }
        defer { av_channel_layout_uninit(&input) }
        var output = AVChannelLayout()
        tutti_default_layout(&output, mono ? 1 : 2)
        defer { av_channel_layout_uninit(&output) }
        let rate = frame.pointee.sample_rate
        let rc = swr_alloc_set_opts2(&context, &output, AV_SAMPLE_FMT_FLT, rate, &input,
                                     AVSampleFormat(rawValue: frame.pointee.format), rate, 0, nil)
        guard rc >= 0, context != nil else { throw .decodeFailed(name: "audio", reason: "cannot convert samples: \(MediaError.words(rc))") }
        // A mix-down never past full scale (its levels are scaled down to fit).
        if !mono, frame.pointee.ch_layout.nb_channels > 2 { _ = av_opt_set_double(UnsafeMutableRawPointer(context), "rematrix_maxval", 1, 0) }
        let initialized = swr_init(context)
        guard initialized >= 0 else {
            throw .decodeFailed(name: "audio", reason: "cannot convert these samples: \(MediaError.words(initialized))")
        }
    }
}
