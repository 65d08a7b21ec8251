/// How full the playout keeps its sound device: when it writes, how much, and the margin it
/// keeps against its own lateness.
///
/// A device runs dry at `dryAt` (local time): when it will have taken every frame written
/// so far into what it is already playing (a sound server takes its sink's latency ahead of
/// hearing; a sound card only its FIFO). A write is due `floor` before that, and tops the
/// device up to `floor + period` past the moment it is made. So the playout wakes once a
/// period, and a write that comes late by less than the floor still lands in time, whatever
/// the size of the sound server's requests or the phase of its sink's blocks.
///
/// The floor starts at `Configuration.floor` and never shrinks while the follower runs:
/// a write that finds the device within half the floor of running dry (a near miss) raises
/// it to twice the lateness that ate into it, and one that finds it dry already (a hole)
/// raises it at least twofold. So a machine that once woke the playout 15 ms late keeps
/// 30 ms in hand from then on. Pure logic: times are arguments.
public struct DeviceFill: Sendable {
    public struct Configuration: Equatable, Sendable {
        /// The audio written at a time (ns): the playout writes about this often.
        public var period: Int64 = 40_000_000
        /// The least margin between a write and the device running dry (ns).
        public var floor: Int64 = 20_000_000
        /// The most the floor grows to (ns): what the device can hold, less a period.
        public var ceiling: Int64 = 250_000_000
        public init() {}
    }

    /// What a write found.
    public enum Event: Equatable, Sendable {
        /// It came `margin` before the device ran dry, within half the floor: the floor grew
        /// to `floor`.
        case nearMiss(margin: Int64, floor: Int64)
        /// The device had been dry for `dry` already (its frames in that span are lost):
        /// the floor grew to `floor`.
        case ranDry(dry: Int64, floor: Int64)
    }

    /// The most a write renders beyond the fill for time already past (ns).
    static let catchUpLimit: Int64 = 500_000_000

    public let configuration: Configuration
    /// The margin kept now (ns).
    public private(set) var floor: Int64
    /// The closest a write came to the device running dry (ns; negative: after it).
    public private(set) var closest: Int64?
    public private(set) var nearMisses = 0
    /// Writes that found the device dry.
    public private(set) var dryWrites = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        floor = min(configuration.floor, configuration.ceiling)
    }

    /// When the next write is due, for a device that runs dry at `dryAt`.
    public func writeDue(dryAt: Int64) -> Int64 { dryAt - floor }

    /// How far ahead of `now` a write fills the device: the floor and a period.
    public var fillTarget: Int64 { floor + configuration.period }

    /// The frames to write at `now` to a device that runs dry at `dryAt` (nil: nothing is
    /// known of it yet, as before its first write), so that it then runs dry `floor +
    /// period` from now; and what the write found, if it is news. `frameTime` is the
    /// device's frame in local nanoseconds. `judged`: the write was planned on the device's
    /// measured timeline, so its margin is the playout's lateness (until the device's first
    /// report, the plan is a guess: a sound server starts its stream's clock when it opens
    /// it, before the first write).
    public mutating func write(at now: Int64, dryAt: Int64?, judged: Bool = true,
                               frameTime: Double = 1e9 / Double(AudioFormat.sampleRate)) -> (frames: Int, event: Event?) {
        guard let dryAt else {
            return (Self.frames(fillTarget, frameTime), nil)
        }
        let margin = dryAt - now
        var event: Event?
        if !judged {
        } else if margin < 0 {
            closest = min(closest ?? margin, margin)
            dryWrites += 1
            grow(to: max(2 * floor, 2 * (floor - margin)))
            event = .ranDry(dry: -margin, floor: floor)
        } else if margin < floor / 2 {
            closest = min(closest ?? margin, margin)
            nearMisses += 1
            grow(to: max(floor + floor / 2, 2 * (floor - margin)))
            event = .nearMiss(margin: margin, floor: floor)
        } else {
            closest = min(closest ?? margin, margin)
        }
        // A device found dry kept its frames' places (a sound server's read index moves on;
        // an output that skips the frames whose time passed has moved `dryAt` already):
        // what is written for the time past is dropped there, and the rest plays on time.
        // Seconds past (a machine that slept) are not rendered all at once.
        let needed = min(now + fillTarget - dryAt, fillTarget + Self.catchUpLimit)
        return (max(0, Self.frames(needed, frameTime)), event)
    }

    /// Whole frames covering `duration` (a frame's float rounding not counted as one more).
    private static func frames(_ duration: Int64, _ frameTime: Double) -> Int {
        Int((Double(duration) / frameTime - 1e-6).rounded(.up))
    }

    /// The device itself said it ran dry (a sound server's underflow) where the writes had
    /// seen no danger: its own margin is wider than assumed. The floor grows by half.
    public mutating func deviceRanDry() {
        grow(to: floor + floor / 2)
    }

    private mutating func grow(to wanted: Int64) {
        floor = min(configuration.ceiling, max(floor, wanted))
    }
}
