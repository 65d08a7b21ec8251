/// One NTP-style time exchange between a follower and the coordinator.
///
/// `t1` and `t4` are on the follower's local clock (request sent, response received);
/// `t2` and `t3` on the coordinator's (request received, response sent).
public struct ClockSample: Equatable, Sendable {
    public var t1: LocalTime
    public var t2: CoordinatorTime
    public var t3: CoordinatorTime
    public var t4: LocalTime

    public init(t1: LocalTime, t2: CoordinatorTime, t3: CoordinatorTime, t4: LocalTime) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Coordinator time minus local time, assuming a symmetric path.
    public var offset: Int64 {
        ((t2.nanoseconds - t1.nanoseconds) + (t3.nanoseconds - t4.nanoseconds)) / 2
    }

    /// Network round trip, excluding the coordinator's processing time.
    public var roundTrip: Int64 { (t4 - t1) - (t3 - t2) }

    /// The local time the offset is taken at: the middle of the exchange.
    public var localMidpoint: LocalTime { LocalTime(nanoseconds: t1.nanoseconds + (t4 - t1) / 2) }
}
