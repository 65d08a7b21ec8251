/// A live zone's latency, fitted to its network: what its rooms need, from the headroom they
/// report (`RoomReport.headroomMilliseconds`). A room some of whose packets came too late
/// (negative headroom) needs the latency that would have left them `margin` to spare: the
/// latency in force, less its headroom, plus the margin. The need does not move with the latency (a longer latency gives as much more
/// headroom), so it can be remembered. The latency is the worst need of the last `memory`,
/// rounded up to a `step`, between the house's latency (`floor`) and `cap`: it grows as soon as a room needs more
/// (a Wi-Fi stall held its packets), and comes back down only once the network has been calm
/// for `memory`. A room's retransmissions tell their own headroom
/// (`RoomReport.recoveryHeadroomMilliseconds`): on a network that loses packets the latency
/// leaves the time to ask for them again, for as long as it loses them. The sender moves to
/// it without a gap (`SenderMachine.setLatency`).
/// Pure: every time comes in as an argument.
public struct LatencyTuner: Sendable, Equatable {
    /// The least latency (ns): the house's (`--latency-ms`, 150 ms by default).
    public let floor: Int64
    /// The most (ns).
    public let cap: Int64
    /// What a packet is to have to spare (ns) beyond the worst a room saw. A room's output
    /// latency already holds its own margins (a room on PulseAudio with an 80 ms buffer has
    /// about 45 ms of headroom at the house's 150 ms on a quiet network).
    public static let margin: Int64 = 10_000_000
    /// How long a need is remembered (ns): stalls a few seconds apart are covered from the
    /// first on, and a network calm for this long gets the shorter latency back.
    public static let memory: Int64 = 60_000_000_000
    /// Needs are kept as the worst of each span this long (ns).
    static let bucket: Int64 = 10_000_000_000
    /// The latency moves in steps this large (ns): a stall a little worse than the last
    /// one (their lengths vary by a few milliseconds) needs no new growth.
    public static let step: Int64 = 25_000_000

    /// The latency the zone is to have (ns).
    public private(set) var target: Int64
    /// The worst need of each bucket (its start, its need), oldest first.
    private var needs: [Need] = []
    private struct Need: Sendable, Equatable {
        var start: Int64, need: Int64
    }

    public init(floor: Int64, cap: Int64 = 1_000_000_000) {
        self.floor = floor
        self.cap = max(floor, cap)
        target = floor
    }

    /// A room's report at `now`: its packets had at least `headroom` to spare (ns) while the
    /// latency in force was `inForce`; `recoveries`: the retransmissions that made good its
    /// losses had. True when the target changed.
    @discardableResult
    public mutating func observe(headroom: Int64, inForce: Int64, now: Int64, recoveries: Bool = false) -> Bool {
        // Only packets that came too late to be heard make a need: a room's headroom on a
        // quiet network depends on its output (a few ms where it writes far ahead), and a
        // near miss costs nothing. Retransmissions make one whatever they had to spare: a
        // network that loses packets goes on needing the time to ask for them again, and a
        // latency that came back down once they came in time would lose them again, and grow
        // again, every `memory`.
        let need = headroom < 0 || recoveries ? inForce - headroom + Self.margin : 0
        if let last = needs.last, now - last.start < Self.bucket {
            needs[needs.count - 1].need = max(last.need, need)
        } else {
            needs.append(Need(start: now, need: need))
        }
        return update(now: now)
    }

    /// Forgets needs older than `memory` at `now` (a zone whose rooms stopped reporting comes
    /// back down too). True when the target changed.
    @discardableResult
    public mutating func update(now: Int64) -> Bool {
        needs.removeAll { now - $0.start >= Self.memory }
        let worst = needs.map(\.need).max() ?? floor
        let old = target
        let stepped = (worst + Self.step - 1) / Self.step * Self.step
        target = min(cap, max(floor, stepped))
        return target != old
    }
}
