/// How often a follower exchanges time with the coordinator: a burst to lock quickly (100
/// exchanges a millisecond apart: on a jittery path the quickest of them lies near each
/// floor, so a follower that joins mid-song plays in sync from its first sound), then
/// as often as the estimate needs. While its bound is wide (just started, a jittery path, a
/// restarted coordinator) readings come fast, and thin out once it is locked.
///
/// On a jittery path each exchange is a chance of a quick one, and the quick ones are what
/// the estimate is made of: more exchanges find the path's floor sooner. An exchange is 16
/// bytes out and 32 back: 200 a second (while the bound is wider than 50 µs: the first
/// seconds, or for good on a very jittery path) is 10 kB/s, 100 a second 4.8 kB/s, beside
/// the stream's 16 kB/s; a locked follower on a quiet network sends 4 pairs a second.
///
/// A locked follower's exchanges go in pairs a millisecond apart, and the second of a pair is
/// the quick one: a quarter of a second after the last, the first finds both hosts' paths
/// cold (a process woken from sleep, caches gone), and on a quiet wired path (loopback: 2 to
/// 5 µs each way while exchanges came every few milliseconds) its delays grew to 12 to 25 µs
/// each way, by amounts that differ from one exchange to the next and between the ways. The
/// floors the estimate is made of then rose and wandered by as much as they did, and its
/// offset with them: two rooms on the coordinator's host moved 10 µs apart and back over tens
/// of seconds (bench/sync's clock traces, replayed).
public enum ExchangeSchedule {
    /// Exchanges in the opening burst (a millisecond apart: 4.8 kB in 100 ms).
    public static let burst = 100

    /// The gap between a locked follower's paired exchanges.
    public static let pairGap: Int64 = 1_000_000

    /// Nanoseconds to wait after the `count`-th exchange (counting from 0), given the
    /// estimate's current bound (nil: not locked) and whether it is in doubt (exchanges
    /// disagree with it: the coordinator may have restarted).
    public static func interval(after count: Int, uncertainty: Int64?, suspect: Bool = false) -> Int64 {
        if count < burst { return 1_000_000 }
        if suspect { return 5_000_000 }
        guard let uncertainty else { return 5_000_000 }
        switch uncertainty {
        case 50_000...: return 5_000_000
        case 25_000...: return 10_000_000
        case 10_000...: return 20_000_000
        default: return count.isMultiple(of: 2) ? pairGap : 250_000_000 - pairGap
        }
    }
}
