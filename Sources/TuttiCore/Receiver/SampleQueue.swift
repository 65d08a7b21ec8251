/// Decoded interleaved stereo frames, addressed by extended stream timestamp, read with
/// a fractional position by linear interpolation (the resampler of the playout stage).
public struct SampleQueue: Sendable {
    /// Extended stream timestamp of the first frame held.
    public private(set) var start: Int64
    private var samples: [Float] = []
    private var head = 0  // index of `start`'s left sample in `samples`

    /// Played samples are freed once this many of them lie before `start`'s (a quarter second
    /// of stereo) and they outnumber those still held: the array then stays within the capacity
    /// it starts with unless more than a quarter second is queued ahead. Freeing only after a
    /// whole second doubled the array twice, to 0.75 MB (440 kB of it resident in a locked
    /// follower), for a queue that holds a few tens of milliseconds.
    static let freeAfter = 24_000

    public init(start: Int64) {
        self.start = start
        samples.reserveCapacity(2 * Self.freeAfter)
    }

    /// Samples the queue's storage has room for (tests: it does not grow in steady play).
    var capacity: Int { samples.capacity }

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

    /// Fades the frames from `timestamp` to the end out, linearly to silence.
    public mutating func fadeOut(from timestamp: Int64) {
        ramp(from: timestamp) { i, count in Float(count - 1 - i) / Float(count) }
    }

    /// Fades the frames from `timestamp` to the end in, linearly from silence.
    public mutating func fadeIn(from timestamp: Int64) {
        ramp(from: timestamp) { i, count in Float(i) / Float(count) }
    }

    private mutating func ramp(from timestamp: Int64, gain: (Int, Int) -> Float) {
        let first = max(timestamp, start), count = Int(end - first)
        guard count > 0 else { return }
        let base = head + Int(first - start) * 2
        for i in 0..<count {
            let g = gain(i, count)
            samples[base + 2 * i] *= g
            samples[base + 2 * i + 1] *= g
        }
    }

    /// Drops the frames from `timestamp` on (what a frame decoded beyond its slot).
    public mutating func truncate(from timestamp: Int64) {
        let keep = min(max(0, timestamp - start), end - start)
        samples.removeLast(samples.count - head - Int(keep) * 2)
    }

    /// Frees frames before `timestamp`.
    public mutating func discard(before timestamp: Int64) {
        let drop = min(max(0, timestamp - start), end - start)
        head += Int(drop) * 2
        start += drop
        if head >= Self.freeAfter && head > samples.count / 2 {
            samples.removeFirst(head)
            head = 0
        }
    }

    /// Writes `count` frames read from position `from` advancing by `step` per frame.
    /// Requires `from >= start` and `from + step * count + 1 < end`. This is the follower's
    /// hot path, hence the raw pointers: it runs for every frame played.
    public func interpolate(from: Double, step: Double, count: Int, into out: inout [Float]) {
        guard count > 0 else { return }
        let first = out.count
        let last = from - Double(start) + step * Double(count - 1)
        precondition(from >= Double(start) && head + Int(last) * 2 + 3 < samples.count, "reading outside the queue")
        out.append(contentsOf: repeatElement(0, count: count * 2))
        samples.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                // Frames as pairs of lanes (left, right), and positions in 32.32 fixed point:
                // integer steps are cheaper than splitting a Double into index and fraction.
                let s = UnsafeRawPointer(source.baseAddress! + head)
                let t = UnsafeMutableRawPointer(target.baseAddress! + first)
                let frameBytes = MemoryLayout<SIMD2<Float>>.stride
                let scale = 4_294_967_296.0
                var pos = Int64((from - Double(start)) * scale)
                let delta = Int64((step * scale).rounded())
                let unit: Float = 1 / 4_294_967_296
                for i in 0..<count {
                    let j = Int(truncatingIfNeeded: pos >> 32) &* frameBytes
                    let frac = Float(pos & 0xFFFF_FFFF) * unit
                    let a = s.loadUnaligned(fromByteOffset: j, as: SIMD2<Float>.self)
                    let b = s.loadUnaligned(fromByteOffset: j &+ frameBytes, as: SIMD2<Float>.self)
                    t.storeBytes(of: a + (b - a) * frac, toByteOffset: i &* frameBytes, as: SIMD2<Float>.self)
                    pos &+= delta
                }
            }
        }
    }
}
