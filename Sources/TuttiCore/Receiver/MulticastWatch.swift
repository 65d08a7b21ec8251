/// Whether a follower on multicast hears the stream: once its clock has been locked for
/// `silence` (the coordinator answers, so the network between them works) and not one
/// stream packet has come in that time, multicast does not reach it (no multicast route,
/// an access point that drops it, IGMP snooping without a querier), and it should ask for
/// unicast. Asked once: after a verdict, or the first packet, it says nothing more. (A
/// house that is paused sends nothing either: a follower started then asks for unicast,
/// which works as well, at the cost of one copy of the stream for it.)
public struct MulticastWatch: Sendable {
    public let silence: Int64
    private var lockedSince: Int64?
    /// It has said what it had to say (a packet came, or it asked for unicast): done.
    public private(set) var settled = false

    public init(silence: Int64 = 3_000_000_000) {
        self.silence = silence
    }

    /// True once, when the follower should switch to unicast. `heardStream`: a stream
    /// packet came since the last call.
    public mutating func check(now: Int64, locked: Bool, heardStream: Bool) -> Bool {
        guard !settled else { return false }
        if heardStream {
            settled = true
            return false
        }
        guard locked else {
            lockedSince = nil
            return false
        }
        let since = lockedSince ?? now
        lockedSince = since
        if now - since >= silence {
            settled = true
            return true
        }
        return false
    }
}
