import Foundation

/// Reading WAV files and measuring time offsets between signals by cross-correlation
/// with sub-sample (parabolic) interpolation.
enum Analysis {
    /// Reads a 16-bit PCM WAV; returns its channels as floats.
    static func readWAV(_ path: String) -> (channels: [[Float]], rate: Int)? {
        guard let data = FileManager.default.contents(atPath: path), data.count > 44 else { return nil }
        let bytes = [UInt8](data)
        func u16(_ o: Int) -> Int { Int(bytes[o]) | Int(bytes[o + 1]) << 8 }
        func u32(_ o: Int) -> Int { u16(o) | u16(o + 2) << 16 }
        var offset = 12
        var channels = 2, rate = 48_000, bits = 16
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            var size = u32(offset + 4)
            if id == "fmt " {
                channels = u16(offset + 10)
                rate = u32(offset + 12)
                bits = u16(offset + 22)
            } else if id == "data" {
                if size == 0 || size == 0xFFFF_FFFF || offset + 8 + size > bytes.count { size = bytes.count - offset - 8 }
                guard bits == 16 else { return nil }
                let frames = size / (2 * channels)
                var out = [[Float]](repeating: [], count: channels)
                for c in 0..<channels { out[c].reserveCapacity(frames) }
                var p = offset + 8
                for _ in 0..<frames {
                    for c in 0..<channels {
                        out[c].append(Float(Int16(bitPattern: UInt16(u16(p)))) / 32768)
                        p += 2
                    }
                }
                return (out, rate)
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    /// The lag (in samples, fractional) by which `b` trails `a` over `a[start..<start+length]`,
    /// searched within ±`maxLag`; and the normalized correlation at the peak.
    static func lag(_ a: [Float], _ b: [Float], start: Int, length: Int, maxLag: Int) -> (lag: Double, correlation: Double)? {
        guard start - maxLag >= 0, start + length + maxLag <= b.count, start + length <= a.count else { return nil }
        var best = -Double.infinity, bestLag = 0
        var scores = [Double](repeating: 0, count: 2 * maxLag + 1)
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in
                for l in -maxLag...maxLag {
                    var s: Float = 0
                    for i in start..<(start + length) { s += pa[i] * pb[i + l] }
                    scores[l + maxLag] = Double(s)
                    if Double(s) > best { best = Double(s); bestLag = l }
                }
            }
        }
        var ea = 0.0, eb = 0.0
        for i in start..<(start + length) {
            ea += Double(a[i] * a[i])
            eb += Double(b[i + bestLag] * b[i + bestLag])
        }
        guard ea > 0, eb > 0 else { return nil }
        var frac = 0.0
        let k = bestLag + maxLag
        if k > 0 && k < scores.count - 1 {
            let y0 = scores[k - 1], y1 = scores[k], y2 = scores[k + 1]
            let d = y0 - 2 * y1 + y2
            if d < 0 { frac = 0.5 * (y0 - y2) / d }
        }
        return (Double(bestLag) + frac, best / (ea * eb).squareRoot())
    }

    /// Sliding-window lags (in microseconds) of `b` against `a`, over windows with signal.
    static func skews(_ a: [Float], _ b: [Float], window: Int = 4_800, hop: Int = 4_800, maxLag: Int = 96,
                      from: Int, to: Int) -> [Double] {
        // Differentiate first: it whitens the low-frequency-heavy music, so peaks are sharp.
        // Whether the windows hold the same sound is asked of the signals themselves: whitened,
        // two rooms half a sample apart (10 µs, in sync) correlate at 0.8 or less at the
        // nearest whole sample, and such windows were dropped (a test found 11 of 40).
        let da = difference(a), db = difference(b)
        var out: [Double] = []
        var start = from
        while start + window + maxLag < min(to, a.count, b.count) {
            if let r = lag(da, db, start: start, length: window, maxLag: maxLag),
               correlation(a, b, start: start, length: window, shift: Int(r.lag.rounded())) > 0.8 {
                out.append(r.lag / 48_000 * 1e6)
            }
            start += hop
        }
        return out
    }

    /// The normalized correlation of `a[start..<start+length]` with `b` moved by `shift`.
    static func correlation(_ a: [Float], _ b: [Float], start: Int, length: Int, shift: Int) -> Double {
        guard start >= 0, start + shift >= 0, start + length <= a.count, start + shift + length <= b.count else { return 0 }
        var ab = 0.0, aa = 0.0, bb = 0.0
        for i in start..<(start + length) {
            let x = Double(a[i]), y = Double(b[i + shift])
            ab += x * y
            aa += x * x
            bb += y * y
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    static func difference(_ x: [Float]) -> [Float] {
        guard x.count > 1 else { return x }
        var out = [Float](repeating: 0, count: x.count)
        for i in 1..<x.count { out[i] = x[i] - x[i - 1] }
        return out
    }

    static func percentile(_ xs: [Double], _ p: Double) -> Double {
        let s = xs.sorted()
        return s.isEmpty ? .nan : s[min(s.count - 1, Int(Double(s.count) * p))]
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        return s.isEmpty ? .nan : s[s.count / 2]
    }

    static func rms(_ xs: ArraySlice<Float>) -> Double {
        guard !xs.isEmpty else { return 0 }
        return (xs.reduce(0.0) { $0 + Double($1 * $1) } / Double(xs.count)).squareRoot()
    }

    /// How well `received` (one channel, 48 kHz) matches the decoded demo song: the peak
    /// normalized correlation of half a second taken a second after its first sound,
    /// searched over the song's first seconds.
    static func correlationWithSource(_ received: [Float], source: [Float]) -> Double? {
        guard let onset = received.firstIndex(where: { abs($0) > 0.01 }) else { return nil }
        let start = onset + 48_000
        let window = 24_000
        guard start + window + 48_000 < received.count else { return nil }
        var padded = [Float](repeating: 0, count: 48_000) + source
        padded += [Float](repeating: 0, count: max(0, start + window + 96_000 - padded.count))
        let heard = Array(received[(start - 48_000)...])
        // Found first on both signals averaged over 8 samples (a 64th of the work: a debug
        // build took 20 s a call at the full rate), then to the sample within 32 of there.
        let factor = 8
        guard let coarse = lag(decimated(heard, factor), decimated(padded, factor), start: 48_000 / factor, length: window / factor,
                               maxLag: 47_000 / factor) else { return nil }
        let near = Int((coarse.lag * Double(factor)).rounded())
        let moved = near >= 0 ? Array(padded.dropFirst(near)) : [Float](repeating: 0, count: -near) + padded
        return lag(heard, moved, start: 48_000, length: window, maxLag: 32)?.correlation
    }

    /// `x` averaged over each run of `factor` samples.
    static func decimated(_ x: [Float], _ factor: Int) -> [Float] {
        stride(from: 0, to: x.count - factor + 1, by: factor).map { i in x[i..<(i + factor)].reduce(0, +) / Float(factor) }
    }
}
