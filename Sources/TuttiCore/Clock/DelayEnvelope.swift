/// One path's one-way readings of the clock offset, thinned to those that matter: the
/// quickest of each `bucket` of local time.
///
/// A message that leaves one clock at `a` and reaches the other at `b` reads `y = b − a` (or
/// `a − b`), which is the offset between the clocks plus or minus the path's delay. Delay is
/// never negative, so every reading lies on one side of the offset line: towards the
/// coordinator (follower → coordinator) above it by the delay, `y ≥ offset + d`; from it
/// below, `y ≤ offset − d`. Queueing only ever pushes readings further away, so the readings
/// that tell the most are the envelope's: the lowest (or highest) ones. The envelope keeps,
/// per bucket, the reading nearest the line (judged with the current drift), and fits no
/// line itself: `EnvelopeFit` does, through several envelopes at once.
struct DelayEnvelope: Sendable {
    enum Side: Sendable {
        /// Readings lie above the offset line (follower → coordinator).
        case above
        /// Readings lie below it (coordinator → follower).
        case below
    }

    struct Point: Sendable, Equatable {
        /// Local time of the reading, nanoseconds.
        var x: Int64
        /// The reading: coordinator minus local time, plus or minus the delay, nanoseconds.
        var y: Int64
    }

    let side: Side
    /// Local nanoseconds per bucket.
    let bucket: Int64
    private(set) var points: [Point] = []

    init(side: Side, bucket: Int64) {
        self.side = side
        self.bucket = bucket
        points.reserveCapacity(1024)
    }

    var isEmpty: Bool { points.isEmpty }
    var count: Int { points.count }

    /// Offers a reading; true when the envelope changed (a new bucket, or a quicker reading
    /// in the newest one). `drift` (ns per s) judges readings within a bucket.
    mutating func add(_ point: Point, drift: Double) -> Bool {
        if let last = points.last, Self.floorDivide(last.x, bucket) == Self.floorDivide(point.x, bucket) {
            // Same bucket: keep the reading nearer the line (the smaller delay).
            let dx = Double(point.x - last.x) * drift / 1e9
            let better = side == .above ? Double(point.y) - dx < Double(last.y) : Double(point.y) - dx > Double(last.y)
            guard better else { return false }
            points[points.count - 1] = point
            return true
        }
        guard points.last.map({ point.x > $0.x }) ?? true else { return false }  // out of order: not ours
        points.append(point)
        return true
    }

    /// Drops readings older than `horizon` (local time).
    mutating func expire(before horizon: Int64) {
        guard let first = points.firstIndex(where: { $0.x >= horizon }) else {
            points.removeAll(keepingCapacity: true)
            return
        }
        if first > 0 { points.removeFirst(first) }
    }

    mutating func removeAll() {
        points.removeAll(keepingCapacity: true)
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }
}
