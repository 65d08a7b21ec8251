/// The receiver's fader: sound fades in over `frames` after it starts, and out over as
/// many before the segment's end (a cut) or the next segment's start, so no room clicks at
/// a start, a pause, a seek or a skip.
struct Fader {
    let frames: Int
    /// Frames of fade-in still to apply.
    private var fadeIn = 0

    init(frames: Int) { self.frames = frames }

    mutating func started() { fadeIn = frames }
    mutating func stopped() { fadeIn = 0 }

    /// Fades the `count` frames of `out` from index `first` (their first heard at `heard`),
    /// with the segment's sound ending at `boundary`, if it does.
    mutating func apply(from first: Int, count: Int, heard: CoordinatorTime, boundary: CoordinatorTime?, into out: inout [Float]) {
        let length = Float(frames)
        if fadeIn > 0 {
            for i in 0..<min(fadeIn, count) {
                let gain = Float(frames - fadeIn + i) / length
                out[first + 2 * i] *= gain
                out[first + 2 * i + 1] *= gain
            }
            fadeIn = max(0, fadeIn - count)
        }
        guard let boundary else { return }
        let left = AudioFormat.frames(forNanoseconds: boundary - heard)  // frames from the first one to the end
        guard left - Int64(count) < Int64(frames) else { return }
        for i in 0..<count {
            let gain = min(1, max(0, Float(left - Int64(i)) / length))
            out[first + 2 * i] *= gain
            out[first + 2 * i + 1] *= gain
        }
    }
}
