/// Which decoded frames belong to the track: none before a seek's target, none past the
/// track's known end (a codec's padding the container trims). Counts positions in frames of
/// the decoder's own rate from the track's start.
struct SampleWindow {
    /// The track's end (exclusive), when the container knows it exactly.
    var limit: Int64?
    /// The track position of the next frame decoded (negative while the encoder's priming
    /// is being decoded, when the window trims it).
    private(set) var next: Int64 = 0

    init(first: Int64 = 0, limit: Int64? = nil) {
        next = first
        self.limit = limit
    }
    /// After a seek: frames before this one are dropped, and the next block's own
    /// timestamp says where it lies.
    private(set) var target: Int64?

    /// Starts counting again at `position`, dropping what comes before it; the next block
    /// placed by its timestamp (a seek lands before its target).
    mutating func seek(to position: Int64) {
        target = position
        next = position
    }

    /// True once everything up to the end has been decoded.
    var isPastEnd: Bool { limit.map { next >= $0 } ?? false }

    /// The part (offsets within the block) of a block of `count` decoded frames to keep;
    /// `placed` is where the block lies when its timestamp says (used after a seek).
    mutating func keep(count: Int, placed: Int64?) -> Range<Int> {
        let start = target != nil ? (placed ?? target!) : next
        let end = start + Int64(count)
        next = end
        var lower = max(start, 0)
        if let t = target {
            if end <= t { return 0..<0 }
            lower = max(start, t)
            target = nil
        }
        let upper = min(end, limit ?? .max)
        guard upper > lower else { return 0..<0 }
        return Int(lower - start)..<Int(upper - start)
    }
}
