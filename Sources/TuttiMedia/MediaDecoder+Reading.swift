import CFFmpeg
import TuttiCore

extension MediaDecoder {
    /// Packets in a row that may fail to decode (a damaged stretch) before the track is
    /// given up.
    static let failuresAllowed = 64

    /// The track position of the next frame `read` gives, in frames of `sampleRate`.
    public var position: TrackFrames { TrackFrames(min(window.next, window.limit ?? .max), rate: sampleRate) }

    /// Appends the next decoded frames (interleaved stereo, at `sampleRate`) to `output`;
    /// returns how many, 0 at the end of the track.
    public func read(into output: inout [Float]) throws(MediaError) -> Int {
        while !ended {
            let received = avcodec_receive_frame(codec, frame)
            if received >= 0 {
                defer { av_frame_unref(frame) }
                let n = try take(frame!, into: &output)
                if n > 0 { return n }
                continue
            }
            if received == tutti_averror_eof() {
                ended = true
            } else if received != tutti_averror_eagain() {
                try failed(received)
            } else if window.isPastEnd {
                ended = true  // the rest is padding
            } else {
                try feed()
            }
        }
        if framesDecoded == 0, !sought {
            throw .notAudio(name: name, reason: "no audio could be decoded from it")
        }
        return 0
    }

    /// Reads the next packet of the audio stream into the decoder (or, at the end of the
    /// input, starts draining it).
    func feed() throws(MediaError) {
        guard !draining else {
            ended = true
            return
        }
        let rc = av_read_frame(format, packet)
        if rc < 0 {
            if bridge.failed { throw .decodeFailed(name: name, reason: bridge.failure ?? "the input failed") }
            // The end, or a damaged end (a truncated file): what was decoded stays.
            draining = true
            _ = avcodec_send_packet(codec, nil)
            return
        }
        defer { av_packet_unref(packet) }
        noteMetadataEvents()
        guard packet!.pointee.stream_index == streamIndex else { return }
        let sent = avcodec_send_packet(codec, packet)
        if sent < 0, sent != tutti_averror_eagain() { try failed(sent) }
    }

    func failed(_ code: Int32) throws(MediaError) {
        failuresInARow += 1
        if failuresInARow > Self.failuresAllowed {
            throw .decodeFailed(name: name, reason: "\(Self.failuresAllowed) packets in a row would not decode (\(MediaError.words(code)))")
        }
    }

    /// Converts a decoded frame and appends the part of it that belongs to the track.
    func take(_ frame: UnsafeMutablePointer<AVFrame>, into output: inout [Float]) throws(MediaError) -> Int {
        let f = frame.pointee
        if f.sample_rate > 0, Int(f.sample_rate) != sampleRate { sampleRate = Int(f.sample_rate) }
        var n = try converter.convert(frame)
        failuresInARow = 0
        if trimming.toPacketDuration, f.pkt_duration > 0 { n = min(n, Int(timestampFrames(f.pkt_duration))) }
        guard n > 0 else { return 0 }
        var skip = 0
        if trimming.sideDataStart, window.next == 0, window.target == nil { skip = min(n, Self.startSkip(frame)) }
        var placed: Int64?
        if window.target != nil, f.best_effort_timestamp != tutti_nopts_value() {
            placed = timestampFrames(f.best_effort_timestamp - trimming.startTimestamp)
        }
        let kept = window.keep(count: n - skip, placed: placed)
        guard !kept.isEmpty else { return 0 }
        output.append(contentsOf: converter.samples[(skip + kept.lowerBound) * 2..<(skip + kept.upperBound) * 2])
        framesDecoded += Int64(kept.count)
        return kept.count
    }

    /// Frames for a span of the stream's time base, at `sampleRate`.
    func timestampFrames(_ ts: Int64) -> Int64 {
        let base = stream.pointee.time_base
        return av_rescale(ts, Int64(base.num) * Int64(sampleRate), Int64(base.den))
    }

    /// The frames a decoder that trims nothing by itself should drop from the start of a
    /// frame (its skip-samples side data).
    static func startSkip(_ frame: UnsafeMutablePointer<AVFrame>) -> Int {
        guard let data = av_frame_get_side_data(frame, AV_FRAME_DATA_SKIP_SAMPLES), data.pointee.size >= 4 else { return 0 }
        let b = data.pointee.data!
        return Int(UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24)
    }

    /// Moves to track position `target` (at any rate: in frames of `sampleRate`, rounded
    /// down), so that the next `read`
    /// starts there exactly: to a packet a little before it, then decoding forward. `fast`:
    /// a jump where the file's table of contents (or its bit rate) places the target, when
    /// finding it exactly would mean reading up to it (a remote MP3 far beyond what is loaded):
    /// within a fraction of a second of it.
    public func seek(to position: TrackFrames, fast: Bool = false) throws(MediaError) {
        let target = AudioFormat.frames(position.count, at: position.rate, to: sampleRate)
        guard bridge.input.canSeek else { throw .cannotSeek(name: name, reason: "it is a stream") }
        guard target >= 0 else { throw .cannotSeek(name: name, reason: "position \(target) is before the start") }
        let base = stream.pointee.time_base
        // Before the target by the pre-roll, into the encoder's priming if need be.
        let back = av_rescale(target - preroll, Int64(base.den), Int64(base.num) * Int64(max(1, sampleRate)))
        let timestamp = max(0, trimming.startTimestamp + back)
        if fast { format?.pointee.flags |= AVFMT_FLAG_FAST_SEEK }
        defer { format?.pointee.flags &= ~AVFMT_FLAG_FAST_SEEK }
        var rc = av_seek_frame(format, streamIndex, timestamp, AVSEEK_FLAG_BACKWARD)
        if rc < 0 {
            // No index to seek by: from the start, decoding forward.
            rc = avformat_seek_file(format, -1, .min, 0, 0, AVSEEK_FLAG_BYTE)
        }
        guard rc >= 0 else { throw .cannotSeek(name: name, reason: MediaError.words(rc)) }
        avcodec_flush_buffers(codec)
        draining = false
        ended = false
        window.seek(to: target)
        sought = true
    }

    /// Notes that the stream's tags changed (a chained Ogg stream's next song).
    func noteMetadataEvents() {
        guard let format else { return }
        if format.pointee.event_flags & AVFMT_EVENT_FLAG_METADATA_UPDATED != 0 {
            format.pointee.event_flags &= ~AVFMT_EVENT_FLAG_METADATA_UPDATED
            metadataChanged = true
        }
        if stream.pointee.event_flags & AVSTREAM_EVENT_FLAG_METADATA_UPDATED != 0 {
            stream.pointee.event_flags &= ~AVSTREAM_EVENT_FLAG_METADATA_UPDATED
            metadataChanged = true
        }
    }

    /// The stream's tags, when they changed since last asked (a radio's next song sent in
    /// band); nil when they did not.
    public func takeChangedTags() -> TrackTags? {
        guard metadataChanged, let format else { return nil }
        metadataChanged = false
        return Self.tags(of: format, stream: stream)
    }
}
