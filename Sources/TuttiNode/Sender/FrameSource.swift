import TuttiCore
import TuttiNet

/// What the player streams: interleaved stereo float at the source's own rate (the player's
/// `SourceChain` brings it to 48 kHz), from a file of any format, a remote source or a
/// live input. Positions and lengths are `MediaFrames` (frames at 48 kHz).
protocol FrameSource: AnyObject {
    /// What the log calls it.
    var name: String { get }
    /// True when the source makes audio in real time by itself (a pipe): the player stamps
    /// its frames on arrival instead of pacing them.
    var isLive: Bool { get }
    /// True for stored audio (a file, local or remote; not a station, nor a pipe): the
    /// player may send it up to the house's lookahead ahead of when it is heard.
    var isStored: Bool { get }
    /// Frames read so far (at its own rate).
    var framesRead: Int64 { get }
    /// The rate of the frames the last `read` gave (a stream may change it).
    var sampleRate: Int { get }
    /// The length in frames at 48 kHz, when known.
    var length: MediaFrames? { get }
    /// What its tags say of its loudness (ReplayGain); nil for a live input, which plays
    /// as it comes.
    var loudness: Loudness? { get }
    /// Appends frames to `output` at `sampleRate`; returns how many, 0 at the end, nil when
    /// a live source had nothing within a short wait (its writer paused).
    func read(into output: inout [Float]) throws -> Int?
    /// Moves to media position `frame` (48 kHz), so that the next `read` starts there.
    func seek(to position: MediaFrames) throws
    /// How a remote source is doing (nil for the others).
    var status: StreamStatus? { get }
    /// Kept across epochs of the same item: a seek (or a resume) moves it, keeping what it
    /// has loaded.
    var seeksInPlace: Bool { get }
    /// Let go when its epoch ends: a live stream stops listening while paused.
    var closesWhenIdle: Bool { get }
}

extension FrameSource {
    var isStored: Bool { !isLive }
    var sampleRate: Int { AudioFormat.sampleRate }
    var loudness: Loudness? { Loudness() }
    var status: StreamStatus? { nil }
    var seeksInPlace: Bool { false }
    var closesWhenIdle: Bool { false }
}

/// Opens what a queue entry names: a live input (`pcm:`), a URL or a file of any format.
/// `pcmFiles`: the `pcm:` entries that may read a regular file (those the coordinator was
/// started with); any other plays a named pipe or standard input only.
func openFrameSource(_ entry: String, pcmFiles: Set<String> = []) throws -> any FrameSource {
    if ReceiverEntry.isReceiver(entry) { return try ReceiverSource(ReceiverEntry(parsing: entry)) }
    if LiveInput.isLive(entry) { return try PCMReader(LiveInput(parsing: entry), allowingFile: pcmFiles.contains(entry)) }
    if RemoteLocation.isRemote(entry) { return try RemoteSource(url: entry) }
    return try FileSource(path: entry)
}

/// Reads raw PCM (`s16le` or `f32le`, stereo, 48 or 44.1 kHz: the chain converts it to
/// 48 kHz) from a named pipe, standard input or a file. A pipe is live and never ends by itself: it is opened for reading and writing,
/// so that its writer may close it and come back (the rooms fall quiet meanwhile). A
/// regular file is not live: it is paced like a track, and can seek.
final class PCMReader: FrameSource {
    let input: LiveInput
    private let file: InputFile
    let isLive: Bool
    private(set) var framesRead: Int64 = 0
    private var chunk = [UInt8](repeating: 0, count: 32_768)
    /// Bytes of a frame split across two reads.
    private var carry: [UInt8] = []
    /// How long a read waits for a live input's next bytes (milliseconds).
    static let wait: Int32 = 20

    var name: String { input.title }
    var sampleRate: Int { input.rate }
    var loudness: Loudness? { nil }
    var length: MediaFrames? {
        guard !isLive, let size = file.size else { return nil }
        return TrackFrames(size / Int64(input.bytesPerFrame), rate: input.rate).media
    }

    /// - Parameter allowingFile: a regular file may be read as raw PCM too (the coordinator
    ///   was started with it). Otherwise only a named pipe or standard input: raw PCM from
    ///   any file the coordinator can read would play its bytes into the rooms.
    init(_ input: LiveInput, allowingFile: Bool = true) throws {
        self.input = input
        if input.path == "-" {
            file = InputFile()
        } else {
            let kind = InputFile.kind(of: input.path)
            guard kind != .missing else { throw SourceError.missing(input.path) }
            guard kind == .pipe || kind == .file else { throw SourceError.notAFile(input.path, "neither a named pipe nor a file") }
            guard kind == .pipe || allowingFile else { throw SourceError.pcmFile(input.path) }
            do {
                // A named pipe for reading and writing: opening does not wait for a writer,
                // and a writer that closes does not end the input.
                file = try InputFile(pipeOrFile: input.path, isPipe: kind == .pipe)
            } catch {
                throw SourceError.unreadable("\(input.path): \(error.reason)")
            }
        }
        isLive = !file.isRegular
    }

    func read(into output: inout [Float]) throws -> Int? {
        if isLive, !file.readable(within: Self.wait) { return nil }
        let read = chunk.withUnsafeMutableBytes { buffer in Result { () throws(SystemError) in try file.read(into: buffer) } }
        guard case let .success(count) = read else {
            if case let .failure(error) = read { throw SourceError.unreadable("\(input.title): \(error.reason)") }
            return nil
        }
        guard let n = count else { return nil }
        if n == 0 { return 0 }
        carry += chunk[0..<n]
        let frames = carry.count / input.bytesPerFrame
        convert(frames * 2, into: &output)
        carry.removeFirst(frames * input.bytesPerFrame)
        framesRead += Int64(frames)
        return frames
    }

    /// The first `samples` samples of `carry` as floats, appended to `output`.
    private func convert(_ samples: Int, into output: inout [Float]) {
        carry.withUnsafeBytes { raw in
            switch input.format {
            case .s16le:
                for i in 0..<samples {
                    output.append(Float(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: i * 2, as: Int16.self))) / 32_768)
                }
            case .f32le:
                for i in 0..<samples {
                    let bits = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
                    let v = Float(bitPattern: bits)
                    output.append(v.isFinite ? max(-1, min(1, v)) : 0)
                }
            }
        }
    }

    func seek(to position: MediaFrames) throws {
        guard !isLive else { throw SourceError.cannotSeek(input.title) }
        let inputFrame = TrackFrames(position, rate: input.rate).count
        do {
            try file.seek(to: inputFrame * Int64(input.bytesPerFrame))
        } catch {
            throw SourceError.unreadable("\(input.title): cannot seek: \(error.reason)")
        }
        carry.removeAll()
        framesRead = inputFrame
    }
}
