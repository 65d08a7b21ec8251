import CMpg123
import Glibc
import TuttiCore

/// Decodes MP3 that arrives in pieces (from a network stream) with libmpg123's feed mode,
/// into 48 kHz interleaved stereo float, whatever the stream's own rate and channels. It
/// never waits: when the bytes fed so far are used up, `decode` says so and the caller
/// feeds more when it has them.
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
    /// Bytes fed without a frame coming out: past a limit, the stream is not MP3.
    private var fedWithoutAudio = 0
    private var hasDecoded = false

    public init(name: String) throws(CodecError) {
        self.name = name
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else { throw .cannotOpen(path: name, reason: MP3Decoder.message(err)) }
        handle = h
        MP3Decoder.configure(h)
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
            case MPG123_OK.rawValue, MPG123_NEW_FORMAT.rawValue:
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
