import TuttiCore
import TuttiNet

/// An output that consumes samples in real time like a sound card, without one: the
/// null output, or a WAV file whose frame `k` is "heard" at local time `start + k / 48 kHz`.
///
/// Its timeline is exact: frame `n` is heard at `start + n / 48 kHz`. When the writer falls
/// behind, the time that passed counts as frames written (silence, in the file), so every
/// later frame keeps its place, and counts as an underrun; the first frame's local time is
/// written to `PATH.start` (nanoseconds, CLOCK_MONOTONIC).
public final class ClockedOutput: AudioOutput {
    private let clock: any MonotonicClock
    private let writer: WAVWriter?
    /// Local time at which frame 0 is heard; nil before the first write.
    private var start: Int64?
    public private(set) var framesWritten: Int64 = 0
    public let name: String
    public let interrupted = false
    public private(set) var underruns = 0

    public init(clock: any MonotonicClock, wavPath: String? = nil) throws(AudioError) {
        self.clock = clock
        if let wavPath {
            writer = try WAVWriter(path: wavPath)
            name = "wav:\(wavPath)"
        } else {
            writer = nil
            name = "null"
        }
    }

    /// Local time at which the last frame written so far finishes playing.
    private var playedUntil: Int64? {
        start.map { $0 + AudioFormat.nanoseconds(forFrames: framesWritten) }
    }

    public func wait(until deadline: Int64) throws {
        System.sleep(nanoseconds: deadline - clock.nanosecondsNow())
    }

    /// Exact, so every call once it plays has a report. Before the first write there is
    /// none: frame 0 is heard when it is written, which is not known yet (a report of "now"
    /// was early by the time the first render took, and the timeline, whose first report
    /// anchors it, carried that half millisecond for seconds: a room that joined played
    /// 100 to 150 µs off at first).
    public func takeTiming() -> DeviceTiming? {
        let now = clock.nanosecondsNow()
        catchUp(now: now)
        guard let playedUntil else { return nil }
        return DeviceTiming(frame: framesWritten, heardAt: LocalTime(nanoseconds: playedUntil), measuredAt: LocalTime(nanoseconds: now))
    }

    public func write(_ samples: [Float]) throws {
        let now = clock.nanosecondsNow()
        if start == nil {
            start = now
            if let writer { try? String(now).write(toFile: writer.path + ".start", atomically: true, encoding: .utf8) }
        }
        catchUp(now: now)
        writer?.write(samples)
        framesWritten += Int64(samples.count / 2)
    }

    /// A writer that fell behind: the device played silence meanwhile, which counts as written.
    private func catchUp(now: Int64) {
        guard let playedUntil, playedUntil < now else { return }
        var gap = Int(AudioFormat.frames(forNanoseconds: now - playedUntil))
        guard gap > 0 else { return }
        underruns += 1
        framesWritten += Int64(gap)
        // Fill the file's timeline with silence, in bounded pieces (a suspended machine
        // can come back hours later).
        while gap > 0, let writer {
            let piece = min(gap, AudioFormat.sampleRate)
            writer.write([Float](repeating: 0, count: piece * 2))
            gap -= piece
        }
    }

    public func close() { writer?.close() }
}
