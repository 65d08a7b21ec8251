import Synchronization
import TuttiMedia
import TuttiRemote

/// A `RemoteStream` as a decoder's input: reads wait for the bytes to come (in short
/// slices, so that the decoder's thread can be called away), the end of a finite file is
/// the end, and the start of a live stream's new connection ends this input (the decoder
/// starts afresh on what follows, which begins with the stream's own headers again).
final class RemoteStreamInput: MediaInput {
    let stream: RemoteStream
    /// Set from another thread: a read in progress gives up (a seek asked for, the source
    /// let go).
    let interruption = Atomic<Bool>(false)
    /// A new connection's first bytes, kept for the next decoder.
    private var held: ArraySlice<UInt8>?
    /// Bytes this decoder has had.
    private(set) var consumed: Int64 = 0
    /// Bytes every decoder has had (read from any thread).
    let taken = Atomic<Int64>(0)
    /// The reads ended at a new connection (not at the stream's end).
    private(set) var reachedJunction = false
    private var failureReason: String?

    init(stream: RemoteStream) {
        self.stream = stream
    }

    /// Starts the next decoder's reading: at the new connection the last one stopped at.
    func beginAgain() {
        consumed = 0
        reachedJunction = false
        failureReason = nil
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            if interruption.load(ordering: .relaxed) {
                failureReason = "interrupted"
                return nil
            }
            if let bytes = held {
                let n = min(bytes.count, buffer.count)
                bytes.withUnsafeBytes { raw in buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[0..<n])) }
                held = n < bytes.count ? bytes.dropFirst(n) : nil
                consumed += Int64(n)
                taken.add(Int64(n), ordering: .relaxed)
                return n
            }
            if let piece = stream.take(maximum: buffer.count) {
                if piece.startsAnew, consumed > 0 {
                    held = piece.bytes
                    reachedJunction = true
                    return 0
                }
                held = piece.bytes
                continue
            }
            if stream.isComplete { return 0 }
            if let failure = stream.failure {
                failureReason = failure.description
                return nil
            }
            stream.waitForBytes(beyond: 0, seconds: 0.05)
        }
    }

    var failure: String? { failureReason }

    var size: Int64? { stream.facts?.size }

    var canSeek: Bool { stream.facts.map { !$0.isLive && $0.canSeek } ?? false }

    func seek(to offset: Int64) -> Bool {
        held = nil
        do {
            try stream.move(to: offset)
            return true
        } catch {
            return false
        }
    }
}
