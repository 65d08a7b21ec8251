import Foundation
import TuttiCore

/// An output that consumes samples in real time like a sound card, without one: the
/// null output, or a WAV file whose frame `k` is "heard" at local time `start + k / 48 kHz`.
///
/// Underruns are filled with silence in the file, so the file stays on the local timeline;
/// its first frame's local time is written to `PATH.start` (nanoseconds, CLOCK_MONOTONIC).
public final class ClockedOutput: AudioOutput {
    private let clock: any MonotonicClock
    private let buffer: Int64
    private let writer: WAVWriter?
    /// Local time at which the last frame written so far finishes playing.
    private var playedUntil: Int64?
    public let name: String

    public init(clock: any MonotonicClock, bufferMilliseconds: Int = 40, wavPath: String? = nil) throws(AudioError) {
        self.clock = clock
        buffer = Int64(bufferMilliseconds) * 1_000_000
        if let wavPath {
            writer = try WAVWriter(path: wavPath)
            name = "wav:\(wavPath)"
        } else {
            writer = nil
            name = "null"
        }
    }

    public func latency() throws -> Int64 {
        guard let playedUntil else { return 0 }
        return max(0, playedUntil - clock.nanosecondsNow())
    }

    public func write(_ samples: [Float]) throws {
        let now = clock.nanosecondsNow()
        if playedUntil == nil, let writer {
            try? String(now).write(toFile: writer.path + ".start", atomically: true, encoding: .utf8)
        }
        var start = playedUntil ?? now
        if start < now {  // underrun: the device played silence meanwhile
            let gap = Int(AudioFormat.frames(forNanoseconds: now - start))
            // Fill the file's timeline with silence, in bounded pieces (a suspended machine
            // can come back hours later).
            var left = gap
            while left > 0 {
                let piece = min(left, AudioFormat.sampleRate)
                writer?.write([Float](repeating: 0, count: piece * 2))
                left -= piece
            }
            start += AudioFormat.nanoseconds(forFrames: Int64(gap))
        }
        writer?.write(samples)
        let end = start + AudioFormat.nanoseconds(forFrames: Int64(samples.count / 2))
        playedUntil = end
        let wake = end - buffer
        let wait = wake - clock.nanosecondsNow()
        if wait > 0 { Thread.sleep(forTimeInterval: Double(wait) / 1e9) }
    }

    public func flush() throws {
        playedUntil = nil
    }

    public func close() { writer?.close() }
}
