import TuttiCore

/// Loss concealment for the lossless codecs, which have none of their own: a lost packet
/// is the last one decoded played again, fading out, so that a lone loss is a soft
/// repetition rather than a click into silence; the fade runs on across losses in a row
/// and reaches silence after `fadeFrames` (20 ms), as Opus's concealment decays. A packet
/// decoded sets the gain back to one. (Retransmission, not this, is what keeps a lossless
/// room whole: this only covers what came too late.)
struct Concealment {
    static let fadeFrames = 960
    /// The last packet decoded, interleaved stereo.
    private var last: [Float] = []
    /// Frames concealed since the last packet decoded.
    private var concealed = 0

    /// Remembers the packet just decoded (the `frames` stereo frames ending `output`).
    mutating func decoded(_ output: [Float], frames: Int) {
        last.removeAll(keepingCapacity: true)
        last.append(contentsOf: output[(output.count - frames * 2)...])
        concealed = 0
    }

    /// `frames` frames in place of a lost packet.
    mutating func conceal(frames: Int, into output: inout [Float]) -> Int {
        output.reserveCapacity(output.count + frames * 2)
        let source = last.count / 2
        for i in 0..<frames {
            let gain = Float(max(0, Self.fadeFrames - concealed - i)) / Float(Self.fadeFrames)
            if source == 0 || gain == 0 {
                output.append(0)
                output.append(0)
            } else {
                let k = (i % source) * 2
                output.append(last[k] * gain)
                output.append(last[k + 1] * gain)
            }
        }
        concealed += frames
        return frames
    }

    mutating func reset() {
        last.removeAll(keepingCapacity: true)
        concealed = 0
    }
}

/// A lossless codec's decoder: no FEC of its own, and `Concealment` for what is lost.
protocol ConcealingDecoder: FrameDecoder {
    var concealment: Concealment { get set }
}

extension ConcealingDecoder {
    public func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }

    public func conceal(frames: Int, into output: inout [Float]) throws -> Int {
        concealment.conceal(frames: frames, into: &output)
    }

    public func reset() { concealment.reset() }
}
