/// Decoded interleaved stereo frames, addressed by extended stream timestamp, read with
/// a fractional position by linear interpolation (the resampler of the playout stage).
public struct SampleQueue: Sendable {
    /// Extended stream timestamp of the first frame held.
    public private(set) var start: Int64
    private var samples: [Float] = []
    private var head = 0  // index of `start`'s left sample in `samples`

    public init(start: Int64) {
        self.start = start
        samples.reserveCapacity(48_000)
    }

    /// The timestamp one past the last frame held.
    public var end: Int64 { start + Int64((samples.count - head) / 2) }

    public mutating func reset(start: Int64) {
        self.start = start
        samples.removeAll(keepingCapacity: true)
        head = 0
    }

    /// Appends frames produced by `body`, which appends to the array it is given.
    public mutating func append(_ body: (inout [Float]) throws -> Int) rethrows -> Int {
        try body(&samples)
    }

    public mutating func appendSilence(frames: Int) {
        samples.append(contentsOf: repeatElement(0, count: frames * 2))
    }

    /// Frees frames before `timestamp`.
    public mutating func discard(before timestamp: Int64) {
        let drop = min(max(0, timestamp - start), end - start)
        head += Int(drop) * 2
        start += drop
        if head > 96_000 && head > samples.count / 2 {
            samples.removeFirst(head)
            head = 0
        }
    }

    /// Writes `count` frames read from position `from` advancing by `step` per frame.
    /// Requires `from >= start` and `from + step * count + 1 < end`.
    public func interpolate(from: Double, step: Double, count: Int, into out: inout [Float]) {
        let base = Double(start)
        samples.withUnsafeBufferPointer { s in
            for i in 0..<count {
                let pos = from - base + step * Double(i)
                let index = Int(pos)
                let frac = Float(pos - Double(index))
                let j = head + index * 2
                let l0 = s[j], r0 = s[j + 1]
                let l1 = s[j + 2], r1 = s[j + 3]
                out.append(l0 + (l1 - l0) * frac)
                out.append(r0 + (r1 - r0) * frac)
            }
        }
    }
}
