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
/// the stream's 16 kB/s; a locked follower on a quiet network sends 4 a second.
public enum ExchangeSchedule {
    /// Exchanges in the opening burst (a millisecond apart: 4.8 kB in 100 ms).
    public static let burst = 100

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
        default: return 250_000_000
        }
    }
}
