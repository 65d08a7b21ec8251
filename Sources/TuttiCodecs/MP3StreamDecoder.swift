import CMpg123
import Glibc
import TuttiCore

/// Decodes MP3 that arrives in pieces (from a network stream) with libmpg123's feed mode,
/// into interleaved stereo float at the stream's own rate (`sampleRate`; mono on both
/// sides). It never waits: when the bytes fed so far are used up, `decode` says so and the
/// caller feeds more when it has them.
public final class MP3StreamDecoder {
    public enum Output: Equatable {
        /// Frames appended to the output.
        case frames(Int)
        /// Everything fed has been decoded: feed more.
        case needMore
    }

    /// What the errors call the stream.
    public let name: String
    private let handle: OpaquePointer
    private var scratch = [UInt8](repeating: 0, count: 32 * 1024)
    /// Frames decoded so far (from the start of the track, after a seek from there).
    public private(set) var framesDecoded: Int64 = 0
    /// The rate of the frames decoded last (the stream's own: 32, 44.1 or 48 kHz, or less).
    public private(set) var sampleRate = AudioFormat.sampleRate
    /// Bytes fed without a frame coming out: past a limit, the stream is not MP3.
    private var fedWithoutAudio = 0
    private var hasDecoded = false

    public init(name: String) throws(CodecError) {
        self.name = name
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else { throw .cannotOpen(path: name, reason: Self.message(err)) }
        handle = h
        Self.configure(h)
        guard mpg123_open_feed(h) == MPG123_OK.rawValue else {
            let reason = String(cString: mpg123_strerror(h))
            mpg123_delete(h)
            throw .cannotOpen(path: name, reason: reason)
        }
    }

    /// The stream's length in bytes, once the server said: for the duration of a file
    /// without a Xing header, and for seeking in it.
    public func setSize(_ size: Int64) {
        if size > 0 { _ = mpg123_set_filesize(handle, off_t(size)) }
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
    }

    /// Asks `handle` for stereo float at the stream's own rate, and for quiet. Not gapless:
    /// in feed mode libmpg123 then holds back a stream's last frames for good (it is never
    /// told the bytes have ended).
    static func configure(_ handle: OpaquePointer) {
        let flags = Int(MPG123_FORCE_STEREO.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue)
        _ = mpg123_param2(handle, Int32(MPG123_FLAGS.rawValue), flags, 0)
        _ = mpg123_format_none(handle)
        var list: UnsafePointer<Int>?
        var count = 0
        mpg123_rates(&list, &count)
        for i in 0..<count { _ = mpg123_format(handle, list![i], Int32(MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue)) }
    }

    static func message(_ code: Int32) -> String {
        String(cString: mpg123_plain_strerror(code))
    }

    /// Hands the decoder the stream's next bytes (copied).
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(CodecError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if mpg123_feed(handle, base.assumingMemoryBound(to: UInt8.self), bytes.count) != MPG123_OK.rawValue {
            throw .decodeFailed(path: name, reason: String(cString: mpg123_strerror(handle)))
        }
        if !hasDecoded { fedWithoutAudio += bytes.count }
    }

    /// Decodes what it can of the bytes fed, appending frames to `output`.
    public func decode(into output: inout [Float]) throws(CodecError) -> Output {
        while true {
            var done = 0
            let rc = scratch.withUnsafeMutableBytes { mpg123_read(handle, $0.baseAddress, $0.count, &done) }
            if done > 0 {
                let frames = done / (MemoryLayout<Float>.size * 2)
                scratch.withUnsafeBytes { output.append(contentsOf: $0.bindMemory(to: Float.self)[0..<(frames * 2)]) }
                framesDecoded += Int64(frames)
                hasDecoded = true
                return .frames(frames)
            }
            switch rc {
            case MPG123_NEW_FORMAT.rawValue:
                var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
                if mpg123_getformat(handle, &rate, &channels, &encoding) == MPG123_OK.rawValue, rate > 0 { sampleRate = rate }
                continue
            case MPG123_OK.rawValue:
                continue
            case MPG123_NEED_MORE.rawValue, MPG123_DONE.rawValue:
                // 1 MB without a single frame: whatever this is, it is not MP3 audio.
                if !hasDecoded, fedWithoutAudio > 1 << 20 {
                    throw .notAudio(path: name, reason: "no MPEG audio frames in the first megabyte")
                }
                return .needMore
            default:
                throw .decodeFailed(path: name, reason: String(cString: mpg123_strerror(handle)))
            }
        }
    }

    /// True once the stream's first frame has been read (its header, and a Xing/LAME
    /// header's length and seek table, are known).
    public var isReady: Bool { hasDecoded }

    /// The track's length in frames (exact with a Xing/LAME header, else estimated from the
    /// size); nil when unknown.
    public var length: Int64? {
        let n = mpg123_length(handle)
        return n > 0 ? Int64(n) : nil
    }

    /// The stream's bit rate (bits per second) from the last frame read, or nil.
    public var bitRate: Int? {
        var info = mpg123_frameinfo2()
        guard mpg123_info2(handle, &info) == MPG123_OK.rawValue, info.bitrate > 0 else { return nil }
        return Int(info.bitrate) * 1000
    }

    /// Prepares a seek to `frame`: returns the byte offset of the stream from which the next
    /// bytes fed must come (the caller asks the server for them). Exact (`fuzzy` false): the
    /// offset is where the decoder's index of frames ends, and it reads forward from there
    /// (fine when those bytes are at hand). Fuzzy: a jump to where the seek table (or the
    /// bit rate) places the frame, within a fraction of a second, with no bytes read between.
    public func seek(toFrame frame: Int64, fuzzy: Bool = false) throws(CodecError) -> Int64 {
        let flag = fuzzy ? MPG123_ADD_FLAGS : MPG123_REMOVE_FLAGS
        _ = mpg123_param2(handle, Int32(flag.rawValue), Int(MPG123_FUZZY.rawValue), 0)
        var offset: off_t = 0
        let rc = mpg123_feedseek(handle, off_t(frame), SEEK_SET, &offset)
        if rc < 0 {
            throw .decodeFailed(path: name, reason: "cannot seek to frame \(frame): \(String(cString: mpg123_strerror(handle)))")
        }
        framesDecoded = Int64(rc)
        return Int64(offset)
    }
}
