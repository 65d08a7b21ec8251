/// The room's volume: scales the output, gliding to a new gain at most `rampPerFrame` a
/// frame (full scale in 50 ms), so that a volume change, a mute or an interruption never
/// clicks. At unity it costs nothing.
public struct GainStage: Sendable {
    public private(set) var gain: Float = 1
    /// The gain to glide to.
    public var target: Float = 1
    public let rampPerFrame: Float

    /// `rampFrames`: frames to glide across full scale; `gain`: where it starts (and stays
    /// until told otherwise).
    public init(rampFrames: Int = 2_400, gain: Float = 1) {
        rampPerFrame = 1 / Float(max(1, rampFrames))
        self.gain = gain
        target = gain
    }

    /// Scales interleaved stereo frames in place, from sample index `from` on.
    public mutating func apply(to samples: inout [Float], from: Int = 0) {
        if gain == target && gain == 1 { return }
        samples.withUnsafeMutableBufferPointer { s in
            var i = from
            while i + 1 < s.count {
                if gain != target {
                    gain = gain < target ? min(target, gain + rampPerFrame) : max(target, gain - rampPerFrame)
                }
                s[i] *= gain
                s[i + 1] *= gain
                i += 2
            }
        }
    }
}
