/// How often a follower exchanges time with the coordinator: a burst to lock quickly,
/// a fast phase while the drift estimate forms, then a steady rate.
public enum ExchangeSchedule {
    /// Nanoseconds to wait after the `count`-th exchange (counting from 0).
    public static func interval(after count: Int) -> Int64 {
        switch count {
        case ..<20: 10_000_000  // 200 ms burst
        case ..<120: 100_000_000  // 10 s at 10 per second
        default: 500_000_000  // then 2 per second: 64 bytes/s each way
        }
    }
}
