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
/// Once the bound is under 25 µs, exchanges go in pairs a millisecond apart, and the second
/// of a pair is the quick one. Exchanges even 5 ms apart find both hosts' paths cold (a
/// process woken from sleep, caches gone): on a quiet wired path (loopback: 2 to 5 µs each way
/// within the burst) their delays were 8 to 17 µs each way at 5 to 20 ms apart and 12 to 25 µs
/// at a quarter of a second, by amounts that differ from one exchange to the next and between
/// the ways. The floors the estimate is made of then rose above the burst's and wandered, the
/// drift's line pivoted between them, and the offset moved with it: two rooms on the
/// coordinator's host moved 10 µs apart and back over tens of seconds, and a room that joined
/// ran 2 ppm off for its first 7 s (bench/sync's clock traces, replayed). The second of a pair
/// found 3 to 5 µs each way. A pair comes every two of the pace's intervals, so that a path
/// gets as many exchanges as before, or every quarter of a second once locked. (Paired at
/// every pace, the simulated jittery paths of ClockEstimatorTests settled no better and some
/// seeds worse: there a pair is two tickets drawn at one moment of the path's queue.)
public enum ExchangeSchedule {
    /// Exchanges in the opening burst (a millisecond apart: 4.8 kB in 100 ms).
    public static let burst = 100

    /// The gap between the two exchanges of a pair.
    public static let pairGap: Int64 = 1_000_000

    /// Nanoseconds to wait after the `count`-th exchange (counting from 0), given the
    /// estimate's current bound (nil: not locked) and whether it is in doubt (exchanges
    /// disagree with it: the coordinator may have restarted).
    public static func interval(after count: Int, uncertainty: Int64?, suspect: Bool = false) -> Int64 {
        if count < burst { return 1_000_000 }
        // The pace: single exchanges this far apart, as many as the bound needs.
        let pace: Int64
        if suspect {
            pace = 5_000_000
        } else if let uncertainty {
            switch uncertainty {
            case 50_000...: pace = 5_000_000
            case 25_000...: pace = 10_000_000
            case 10_000...: pace = 20_000_000
            default: pace = 125_000_000
            }
        } else {
            pace = 5_000_000
        }
        // Paired only where a path is quiet enough (a bound under 25 µs) for a host's warmth to
        // show: on a jittery one every exchange is a ticket, and a pair spends two on one
        // moment of the path's queue.
        guard pace >= pairedPace else { return pace }
        return (count - burst).isMultiple(of: 2) ? pairGap : 2 * pace - pairGap
    }

    /// The pace from which exchanges go in pairs.
    static let pairedPace: Int64 = 20_000_000
}
