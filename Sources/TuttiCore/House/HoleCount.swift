/// A room's holes over the last hour, from the running total its reports carry (the holes
/// its follower caused and the packets it concealed, `RoomReport.holes` and
/// `.concealments`). A total that goes down is a follower that started again: its count
/// goes on from where the old one left off. Marks are kept a minute apart, so an hour is
/// sixty-odd of them whatever the report rate. Pure: times come in as arguments.
public struct HoleCount: Equatable, Sendable {
    struct Mark: Equatable, Sendable {
        var at: Int64
        var total: Int
    }

    /// The count carried over from the room's earlier followers.
    private var carried = 0
    private var lastReported = 0
    private var marks: [Mark] = []
    static let spacing: Int64 = 60_000_000_000
    static let hour: Int64 = 3_600_000_000_000

    public init() {}

    /// The room's running total of holes as reported at `now`.
    public mutating func record(_ reported: Int, at now: Int64) {
        let reported = max(0, reported)
        if reported < lastReported { carried += lastReported }
        lastReported = reported
        let total = carried + reported
        if let last = marks.last, now - last.at < Self.spacing, marks.count > 1 {
            marks[marks.count - 1] = Mark(at: now, total: total)  // the newest minute's, moved on
        } else {
            marks.append(Mark(at: now, total: total))
        }
        // Keep the newest mark an hour old or older, and everything after it.
        if let keep = marks.lastIndex(where: { now - $0.at >= Self.hour }), keep > 0 { marks.removeFirst(keep) }
    }

    /// Holes in the hour up to `now`: since the newest report an hour old or older, or since
    /// the first report for a room heard of for less (what its follower counted before the
    /// coordinator heard of it is not known to be of the last hour).
    public func lastHour(now: Int64) -> Int {
        guard let newest = marks.last, let first = marks.first else { return 0 }
        return newest.total - (marks.last { now - $0.at >= Self.hour } ?? first).total
    }
}
