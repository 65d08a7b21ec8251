import Foundation
import TuttiCore

/// Test material for decoding: signals written as WAV files and encoded into every format
/// tutti plays by the `ffmpeg` command-line tool, and the measures that compare what comes
/// back with what went in.
public enum MediaFixtures {
    /// A format to encode into, as `ffmpeg` makes it.
    public struct Format: Sendable, CustomStringConvertible {
        public var name: String
        public var fileExtension: String
        public var arguments: [String]
        /// The rate the file holds (Opus is always 48 kHz; the others keep the source's).
        public var rate: Int?
        public var lossless: Bool
        public var description: String { name }

        public init(_ name: String, _ fileExtension: String, _ arguments: [String], rate: Int? = nil, lossless: Bool) {
            self.name = name
            self.fileExtension = fileExtension
            self.arguments = arguments
            self.rate = rate
            self.lossless = lossless
        }
    }

    /// One of each format the issue names (FLAC 24/96 is FLAC from a 96 kHz source).
    public static let formats: [Format] = [
        Format("MP3", "mp3", ["-c:a", "libmp3lame", "-b:a", "192k"], lossless: false),
        Format("AAC", "m4a", ["-c:a", "aac", "-b:a", "192k"], lossless: false),
        Format("ALAC", "m4a", ["-c:a", "alac"], lossless: true),
        Format("FLAC", "flac", ["-c:a", "flac"], lossless: true),
        Format("Vorbis", "ogg", ["-c:a", "libvorbis", "-q:a", "6"], lossless: false),
        Format("Opus", "opus", ["-c:a", "libopus", "-b:a", "160k"], rate: 48_000, lossless: false),
        Format("WAV", "wav", ["-c:a", "pcm_s16le"], lossless: true),
        Format("AIFF", "aiff", ["-c:a", "pcm_s16be"], lossless: true),
    ]

    public static func format(_ name: String) -> Format { formats.first { $0.name == name }! }

    /// A chirp from `low` to `high` Hz over the signal, with a little seeded noise: no two
    /// stretches alike, so that an offset of any size shows. Interleaved; the right channel
    /// is the left at 0.8.
    public static func chirp(frames: Int, rate: Int, channels: Int = 2, low: Double = 150, high: Double = 4_000,
                             amplitude: Double = 0.5, seed: UInt64 = 7) -> [Float] {
        var generator = seed
        var out = [Float](repeating: 0, count: frames * channels)
        let duration = Double(frames) / Double(rate)
        for i in 0..<frames {
            let t = Double(i) / Double(rate)
            let phase = 2 * Double.pi * (low * t + (high - low) * t * t / (2 * max(duration, 1e-9)))
            generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(Int64(bitPattern: generator) >> 40) / Double(1 << 23) * 0.01
            let v = amplitude * sin(phase) + noise
            for c in 0..<channels { out[i * channels + c] = Float(c == 1 ? v * 0.8 : v) }
        }
        return out
    }

    /// A sine of `hz`, interleaved stereo (both channels alike).
    public static func sine(hz: Double, frames: Int, rate: Int, amplitude: Double = 0.5) -> [Float] {
        var out = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Float(amplitude * sin(2 * Double.pi * hz * Double(i) / Double(rate)))
            out[2 * i] = v
            out[2 * i + 1] = v
        }
        return out
    }

    /// Writes interleaved float samples as a 32-bit float WAV file.
    public static func writeWAV(_ samples: [Float], channels: Int, rate: Int, to path: String) throws {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = UInt32(samples.count * 4)
        data.append(contentsOf: Array("RIFF".utf8)); u32(36 + bytes); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(3); u16(UInt16(channels)); u32(UInt32(rate))
        u32(UInt32(rate * channels * 4)); u16(UInt16(channels * 4)); u16(32)
        data.append(contentsOf: Array("data".utf8)); u32(bytes)
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Encodes `source` into `format` at `path` with `ffmpeg` (tags and other options in
    /// `extra`, before the output).
    public static func encode(_ source: String, as format: Format, to path: String, extra: [String] = []) throws {
        try run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source] + format.arguments + extra + [path])
    }

    /// Runs a command; throws with its error output when it fails.
    @discardableResult
    public static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure("\(arguments.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// The left channel of interleaved stereo.
    public static func left(_ interleaved: [Float]) -> [Float] {
        stride(from: 0, to: interleaved.count - 1, by: 2).map { interleaved[$0] }
    }

    /// The offset (frames) at which `decoded` best matches `reference` over `window` (of
    /// the reference), searched within ±`maxLag`, and the RMS difference there.
    public static func align(_ reference: [Float], _ decoded: [Float], window: Range<Int>, maxLag: Int = 600) -> (lag: Int, rms: Double) {
        var best = (lag: 0, rms: Double.infinity)
        for lag in -maxLag...maxLag {
            guard window.lowerBound + lag >= 0, window.upperBound + lag <= decoded.count, window.upperBound <= reference.count else { continue }
            var sum = 0.0
            for i in window {
                let d = Double(reference[i]) - Double(decoded[i + lag])
                sum += d * d
            }
            let rms = (sum / Double(window.count)).squareRoot()
            if rms < best.rms { best = (lag, rms) }
        }
        return best
    }

    /// The RMS difference of two signals over `window`.
    public static func rmsDifference(_ a: [Float], _ b: [Float], window: Range<Int>) -> Double {
        var sum = 0.0
        for i in window where i < a.count && i < b.count {
            let d = Double(a[i]) - Double(b[i])
            sum += d * d
        }
        return (sum / Double(max(1, window.count))).squareRoot()
    }
}

extension MediaFixtures {
    /// How far `signal` (mono) is from a pure tone of `hz`: the power left once the best-fitting
    /// sine of `hz` (and any DC) is taken out, against the tone's, in dB (THD+N; everything that
    /// is not the tone: harmonics, noise, aliases). Skips `margin` frames at both ends.
    public static func residualDB(_ signal: [Float], hz: Double, rate: Int, margin: Int = 2_000) -> Double {
        let range = margin..<(signal.count - margin)
        // Least squares on [sin, cos, 1].
        var s = [[Double]](repeating: [Double](repeating: 0, count: 3), count: 3)
        var r = [Double](repeating: 0, count: 3)
        for i in range {
            let w = 2 * Double.pi * hz * Double(i) / Double(rate)
            let basis = [sin(w), cos(w), 1.0]
            for a in 0..<3 {
                r[a] += basis[a] * Double(signal[i])
                for b in 0..<3 { s[a][b] += basis[a] * basis[b] }
            }
        }
        let c = solve3(s, r)
        var tone = 0.0, rest = 0.0
        for i in range {
            let w = 2 * Double.pi * hz * Double(i) / Double(rate)
            let fit = c[0] * sin(w) + c[1] * cos(w)
            tone += fit * fit
            let e = Double(signal[i]) - fit - c[2]
            rest += e * e
        }
        return 10 * log10(max(rest, 1e-30) / max(tone, 1e-30))
    }

    static func solve3(_ m: [[Double]], _ v: [Double]) -> [Double] {
        var a = m, b = v
        for col in 0..<3 {
            let pivot = (col..<3).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            a.swapAt(col, pivot)
            b.swapAt(col, pivot)
            for row in 0..<3 where row != col {
                let f = a[row][col] / a[col][col]
                for k in 0..<3 { a[row][k] -= f * a[col][k] }
                b[row] -= f * b[col]
            }
        }
        return (0..<3).map { b[$0] / a[$0][$0] }
    }
}
