import CFFmpeg
import TuttiCore

/// Decodes one track of any format FFmpeg demuxes and decodes (FLAC, ALAC and AAC in
/// MP4, Ogg Vorbis, Ogg Opus, WAV, AIFF, MP3 and more), from a file or from bytes arriving
/// over the network, into interleaved stereo float at the track's own rate, sample-exact:
/// the encoder's delay and padding are not played (LAME/Xing headers, MP4 edit lists and
/// `iTunSMPB`, Opus pre-skip, Ogg granules), a seek lands on the very frame asked for.
///
/// Only the audio is read: any other stream (cover art, video) is skipped, and only the
/// demuxers of audio formats are allowed, so a file never makes FFmpeg open another.
public final class MediaDecoder {
    /// What errors and logs call it.
    public let name: String
    /// The rate of the frames `read` gives, which a stream may change (it says so by a read
    /// that gives frames at the new rate).
    public internal(set) var sampleRate: Int
    /// The text tags of the container (its pictures are in `pictures` when asked for).
    public let tags: TrackTags
    /// The cover art it holds (read when the decoder was asked to).
    public let pictures: [TrackTags.Picture]
    /// The container's and the codec's names ("flac", "mov,mp4,m4a,3gp,3g2,mj2"/"aac").
    public let formatName: String
    public let codecName: String
    /// The track's length (in frames of its `sampleRate` as it opened): exact when the
    /// container knows it, else FFmpeg's estimate; nil for an endless stream.
    public let length: TrackFrames?
    /// Whether the length is exact (frames past it are padding, and are dropped).
    public let lengthIsExact: Bool
    /// Bits per second, when known.
    public let bitRate: Int?

    let bridge: InputBridge
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    let streamIndex: Int32
    let stream: UnsafeMutablePointer<AVStream>
    var packet: UnsafeMutablePointer<AVPacket>?
    var frame: UnsafeMutablePointer<AVFrame>?
    let converter = SampleConverter()
    var window = SampleWindow()
    /// Who trims the encoder's delay and padding, and where the track ends.
    let trimming: Trimming
    /// Frames to decode before a seek's target so that the decoder has settled.
    let preroll: Int64
    /// The packets are all read; the decoder is being drained.
    var draining = false
    var ended = false
    /// Frames given so far, and packets that failed to decode in a row.
    public internal(set) var framesDecoded: Int64 = 0
    var failuresInARow = 0
    /// A seek was made: an end with nothing decoded after it is no sign of a bad file.
    var sought = false
    /// Whether the stream's metadata changed since last asked (a radio's next song).
    var metadataChanged = false

    /// The demuxers of audio formats (FFmpeg's names): nothing else is probed.
    static let audioFormats = [
        "mp3", "mov,mp4,m4a,3gp,3g2,mj2", "flac", "ogg", "wav", "w64", "aiff", "aac", "matroska,webm", "wv", "ape",
        "asf", "caf", "mpegts", "mp2", "ac3", "eac3", "dts", "tta", "au", "mpc", "mpc8", "loas", "latm", "dsf", "truehd",
    ].joined(separator: ",")

    /// Opens the regular file at `path`.
    public convenience init(path: String, readPictures: Bool = false) throws(MediaError) {
        try self.init(input: FileInput(path: path), name: path, readPictures: readPictures)
    }

    /// Opens `input`; `formatHint` names its FFmpeg demuxer when the caller knows it (a
    /// stream's content type), else its bytes say. `seekingToOpen` false: the input is read
    /// from its start only until it is open (a remote file, where a seek to its end for a
    /// tag or a length would cost a request), except an MP4, whose index may be at its end.
    public init(input: MediaInput, name: String, formatHint: String? = nil, readPictures: Bool = false,
                seekingToOpen: Bool = true) throws(MediaError) {
        MediaLibrary.quieten()
        self.name = name
        let isMP4 = input.canSeek && Self.looksLikeMP4(input)
        let mp4 = isMP4 ? Self.mp4Timing(input) : nil
        bridge = try InputBridge(input, seeking: seekingToOpen || isMP4)
        let (context, streamIndex) = try Self.open(bridge, name: name, formatHint: formatHint, live: !input.canSeek,
                                                   ignoringEditList: mp4 != nil)
        format = context
        bridge.allowSeeking()
        self.streamIndex = streamIndex
        stream = context.pointee.streams[Int(streamIndex)]!
        let parameters = stream.pointee.codecpar!
        formatName = context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "?"
        codecName = String(cString: avcodec_get_name(parameters.pointee.codec_id))
        preroll = Self.preroll(parameters.pointee)
        trimming = Self.trimming(context, stream, formatName: formatName, mp4: mp4)
        var tags = Self.tags(of: context, stream: stream)
        pictures = readPictures ? Self.pictures(of: context) : []
        tags.pictures = []
        self.tags = tags
        sampleRate = Int(parameters.pointee.sample_rate)
        bitRate = context.pointee.bit_rate > 0 ? Int(context.pointee.bit_rate)
            : parameters.pointee.bit_rate > 0 ? Int(parameters.pointee.bit_rate) : nil
        let rate = sampleRate
        length = trimming.length.map { TrackFrames($0, rate: rate) }
        lengthIsExact = trimming.exact
        window = SampleWindow(first: -trimming.priming, limit: trimming.exact ? trimming.length : nil)
        // Everything but the audio is skipped by the demuxer.
        for i in 0..<Int(context.pointee.nb_streams) where Int32(i) != streamIndex {
            context.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil else { throw .decodeFailed(name: name, reason: "out of memory") }
        codec = try Self.openCodec(parameters, stream: stream, name: name, trimsByItself: trimming.byCodec)
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&frame)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
    }
}
