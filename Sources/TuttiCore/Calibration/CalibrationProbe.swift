/// The sound a room plays so that a microphone can tell when it arrived: one second of
/// white noise at 48 kHz, made from a seed (each probe of a calibration has its own, so that
/// each is found apart from the others, which it barely resembles: their correlation is
/// about 1/√48000 of a probe's with itself), with 5 ms smooth (smoothstep) edges. White noise
/// correlates to a peak one sample wide, so its arrival is found to a sample, and it is
/// found under as much noise as signal (its correlation gains 47 dB).
///
/// Any sample is made from the seed and its index alone (a counter-based generator), so a
/// follower mixes it in block by block without holding a second of it. Pure.
public struct CalibrationProbe: Sendable, Equatable {
    public var seed: UInt32
    /// Its peak amplitude (0 to 1, of full scale).
    public var level: Float

    /// Its length in frames (1 s at 48 kHz).
    public static let length = 48_000
    /// Its edges, in frames (5 ms).
    static let edge = 240

    public init(seed: UInt32, level: Float) {
        self.seed = seed
        self.level = min(max(level, 0), 1)
    }

    /// Sample `index` (0 outside the probe).
    public func sample(_ index: Int) -> Float {
        guard index >= 0, index < Self.length else { return 0 }
        var z = UInt64(seed) << 32 | UInt64(index)
        // splitmix64's finaliser: each index to its own uniform 64 bits.
        z &+= 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let uniform = Float(z >> 40) / Float(1 << 24) * 2 - 1
        let fromEdge = min(index, Self.length - 1 - index)
        let t = Float(min(fromEdge, Self.edge)) / Float(Self.edge)
        let ramp = t * t * (3 - 2 * t)
        return uniform * level * ramp
    }

    /// The whole probe (at level 1 when analysing, as the level does not move a peak).
    public var samples: [Float] { (0..<Self.length).map(sample) }

    /// Adds the probe, starting at `start` (coordinator time, ns), into `frames` stereo
    /// frames of `out` from `offset` on, the first of which is heard at `heard`; frames run
    /// at 48 kHz. Returns whether any of the probe fell in them.
    @discardableResult
    public func mix(at start: Int64, into out: inout [Float], offset: Int, frames: Int, heard: Int64) -> Bool {
        // The block's first frame, as an index into the probe (rounded to the nearest frame).
        let first = Int(((Double(heard - start) * 48_000) / 1e9).rounded())
        guard first < Self.length, first + frames > 0 else { return false }
        for frame in max(0, -first)..<min(frames, Self.length - first) {
            let value = sample(first + frame)
            out[offset + 2 * frame] += value
            out[offset + 2 * frame + 1] += value
        }
        return true
    }
}
