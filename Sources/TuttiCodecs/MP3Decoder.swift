import CMpg123
import Glibc
import TuttiCore

/// Decodes an MP3 file with libmpg123 into 48 kHz interleaved stereo float, whatever the
/// file's own sample rate and channel count (libmpg123 resamples and upmixes).
public final class MP3Decoder {
    public let path: String
    private var handle: OpaquePointer?
    /// The file, opened here (libmpg123 reads it but leaves closing it to us).
    private var descriptor: Int32 = -1
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// Frames decoded so far.
    public private(set) var framesDecoded: Int64 = 0

    public init(path: String) throws(CodecError) {
        self.path = path
        // Only a regular file, opened without blocking: a FIFO or a device named in the
        // queue would otherwise stall the player (or stream /dev/zero for ever). Should
        // anything below throw, deinit closes it.
        descriptor = try Self.openRegularFile(path)
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else {
            throw .cannotOpen(path: path, reason: Self.message(err))
        }
        handle = h
        Self.configure(h)
        if mpg123_open_fd(h, descriptor) != MPG123_OK.rawValue {
            let reason = String(cString: mpg123_strerror(h))
            mpg123_delete(h)
            handle = nil
            throw .cannotOpen(path: path, reason: reason)
        }
    }

    deinit {
        if let handle {
            mpg123_close(handle)
            mpg123_delete(handle)
        }
        if descriptor >= 0 { close(descriptor) }
    }

    /// Asks `handle` for 48 kHz stereo float, whatever the stream is, and for quiet.
    static func configure(_ handle: OpaquePointer) {
        let flags = Int(MPG123_FORCE_STEREO.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue)
        _ = mpg123_param2(handle, Int32(MPG123_FLAGS.rawValue), flags, 0)
        _ = mpg123_param2(handle, Int32(MPG123_FORCE_RATE.rawValue), AudioFormat.sampleRate, 0)
        _ = mpg123_format_none(handle)
        _ = mpg123_format(handle, AudioFormat.sampleRate, Int32(MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue))
    }

    /// Opens `path` for reading if it is a regular file, without ever blocking on it.
    public static func openRegularFile(_ path: String) throws(CodecError) -> Int32 {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw .cannotOpen(path: path, reason: "not a regular file")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The track's length in frames, from its header (exact with a Xing/LAME header, an
    /// estimate without); nil when unknown.
    public var length: Int64? {
        guard let handle else { return nil }
        let n = mpg123_length(handle)
        return n > 0 ? Int64(n) : nil
    }

    /// Moves to frame `frame` (sample-accurate), so that the next `read` starts there.
    public func seek(toFrame frame: Int64) throws(CodecError) {
        guard let handle else { return }
        let rc = mpg123_seek(handle, off_t(frame), SEEK_SET)
        if rc < 0 { throw .decodeFailed(path: path, reason: "cannot seek to frame \(frame): \(String(cString: mpg123_strerror(handle)))") }
        framesDecoded = Int64(rc)
    }

    /// Appends the next decoded frames to `output`; returns how many, 0 at the end of the file.
    public func read(into output: inout [Float]) throws(CodecError) -> Int {
        guard let handle else { return 0 }
        while true {
            var done = 0
            let rc = scratch.withUnsafeMutableBytes { mpg123_read(handle, $0.baseAddress, $0.count, &done) }
            if done > 0 {
                let frames = done / (MemoryLayout<Float>.size * 2)
                scratch.withUnsafeBytes { raw in
                    let floats = raw.bindMemory(to: Float.self)
                    output.append(contentsOf: floats[0..<(frames * 2)])
                }
                framesDecoded += Int64(frames)
                return frames
            }
            switch rc {
            case MPG123_OK.rawValue, MPG123_NEW_FORMAT.rawValue:
                continue
            case MPG123_DONE.rawValue:
                if framesDecoded == 0 { throw .notAudio(path: path, reason: "no MPEG audio frames found") }
                return 0
            default:
                throw .decodeFailed(path: path, reason: String(cString: mpg123_strerror(handle)))
            }
        }
    }

    static func message(_ code: Int32) -> String {
        String(cString: mpg123_plain_strerror(code))
    }
}
