import CFFmpeg
import TuttiCore
import TuttiNet

/// Where a decoder's bytes come from: a file, or bytes arriving from the network. Read from
/// the decoder's thread only.
public protocol MediaInput: AnyObject {
    /// Reads up to `buffer.count` bytes into `buffer`: how many (more than 0), 0 at the end
    /// of the input, or nil when it failed (or was closed) and nothing more will come.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
    /// Its whole size in bytes, when known.
    var size: Int64? { get }
    /// Whether `seek` can work.
    var canSeek: Bool { get }
    /// Moves the next read to `offset` bytes from the start; false when it cannot.
    func seek(to offset: Int64) -> Bool
    /// Why reading failed, once it has.
    var failure: String? { get }
}

extension MediaInput {
    public var failure: String? { nil }

    /// The next `count` bytes (fewer at the end, or when a read fails).
    func readBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) } ?? 0
            if n <= 0 { break }
            filled += n
        }
        return Array(bytes.prefix(filled))
    }
}

/// A regular file, opened without ever blocking on it: a named pipe or a device named in
/// the queue is refused, never read.
public final class FileInput: MediaInput {
    public let path: String
    private let file: InputFile

    public init(path: String) throws(MediaError) {
        self.path = path
        do {
            file = try InputFile(regularFile: path)
        } catch {
            throw .cannotOpen(name: path, reason: error.errno == InputFile.notRegularFile ? "not a regular file" : error.reason)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? { file.readFully(into: buffer) }

    public var size: Int64? { file.size }

    public var canSeek: Bool { true }

    public func seek(to offset: Int64) -> Bool { (try? file.seek(to: offset)) != nil }
}

/// FFmpeg's view of a `MediaInput`: an AVIOContext whose callbacks read it.
final class InputBridge {
    let input: MediaInput
    private(set) var context: UnsafeMutablePointer<AVIOContext>?
    /// Where the next read starts, for FFmpeg's relative seeks.
    private var offset: Int64 = 0
    /// The input failed: what FFmpeg took for an end was not one.
    private(set) var failed = false
    var failure: String? { input.failure }
    static let bufferSize = 32 * 1024

    /// `seeking`: FFmpeg may seek while it opens the input (else only once it is open: a
    /// remote file is not asked for its end to read a tag or a length).
    init(_ input: MediaInput, seeking: Bool = true) throws(MediaError) {
        self.input = input
        guard let buffer = av_malloc(Self.bufferSize) else { throw .cannotOpen(name: "input", reason: "out of memory") }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.bufferSize), 0, opaque,
            { opaque, bytes, size in
                let bridge = Unmanaged<InputBridge>.fromOpaque(opaque!).takeUnretainedValue()
                return bridge.read(bytes, Int(size))
            },
            nil,
            input.canSeek ? { opaque, offset, whence in
                let bridge = Unmanaged<InputBridge>.fromOpaque(opaque!).takeUnretainedValue()
                return bridge.seek(offset, whence)
            } : nil)
        guard context != nil else {
            av_free(buffer)
            throw .cannotOpen(name: "input", reason: "out of memory")
        }
        if !input.canSeek || !seeking { context!.pointee.seekable = 0 }
    }

    /// From now on FFmpeg may seek (when the input can).
    func allowSeeking() {
        if input.canSeek { context?.pointee.seekable = AVIO_SEEKABLE_NORMAL }
    }

    deinit {
        if context != nil {
            av_freep(&context!.pointee.buffer)
            avio_context_free(&context)
        }
    }

    private func read(_ bytes: UnsafeMutablePointer<UInt8>?, _ size: Int) -> Int32 {
        guard let bytes, size > 0 else { return tutti_averror_eio() }
        guard let n = input.read(into: UnsafeMutableRawBufferPointer(start: bytes, count: size)) else {
            failed = true
            return tutti_averror_eio()
        }
        if n == 0 { return tutti_averror_eof() }
        offset += Int64(n)
        return Int32(n)
    }

    private func seek(_ to: Int64, _ whence: Int32) -> Int64 {
        if whence & tutti_avseek_size() != 0 { return input.size ?? -1 }
        // A demuxer's seek is steered by the file's own numbers: a sum that overflows is no
        // position (FFmpeg reads -1 as a failed seek).
        let sum: (partialValue: Int64, overflow: Bool)
        switch whence & ~Int32(AVSEEK_FORCE) {
        case SEEK_SET: sum = (to, false)
        case SEEK_CUR: sum = offset.addingReportingOverflow(to)
        case SEEK_END:
            guard let size = input.size else { return -1 }
            sum = size.addingReportingOverflow(to)
        default: return -1
        }
        let target = sum.partialValue
        guard !sum.overflow, target >= 0, input.seek(to: target) else { return -1 }
        offset = target
        return target
    }
}

/// Bytes held in memory as an input (fuzzing, tests, a small download).
public final class MemoryInput: MediaInput {
    private let bytes: [UInt8]
    private var offset = 0
    public let canSeek: Bool

    public init(_ bytes: [UInt8], canSeek: Bool = true) {
        self.bytes = bytes
        self.canSeek = canSeek
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let n = min(buffer.count, bytes.count - offset)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
        offset += n
        return n
    }

    public var size: Int64? { Int64(bytes.count) }

    public func seek(to offset: Int64) -> Bool {
        guard canSeek, offset >= 0, offset <= Int64(bytes.count) else { return false }
        self.offset = Int(offset)
        return true
    }
}
