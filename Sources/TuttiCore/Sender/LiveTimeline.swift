/// Where a live input's frames go on the timeline, and how fast the input is read. A live
/// input (a pipe another program writes into) is fed in one of two ways, and the timeline
/// tells them apart by what arrives:
///
/// - **A writer that paces itself** (MPD's fifo output, shairport-sync, a sound card's
///   capture) gives its frames in real time by its own clock. Each is heard `latency` after
///   it arrived. Its clock is not the house's: the input is stretched (`stretch`, a few
///   hundred ppm at most) so that its frames keep arriving on the timeline, and the rooms
///   hear it continuously however long it plays.
/// - **A writer that runs ahead** (`cat`, `ffmpeg` without `-re`, librespot's pipe backend)
///   writes as fast as the pipe takes. Its frames come long before the timeline needs them,
///   so they are sent when the timeline says (latency before they are heard): the input is
///   read at the stream's rate, the pipe fills and the writer waits.
///
/// A frame that comes later than the timeline but in time for the rooms (its writer missed a
/// beat) is sent: the rooms hear nothing of it. One too late for them (its writer paused for
/// longer than half the latency) starts a new epoch: the rooms fade out where the audio
/// stopped and in again where it resumes.
///
/// The sender asks before it encodes each frame, taking the frames it holds to have arrived
/// in order, the newest at the last read that gave frames. Pure: every time comes in as an
/// argument.
public struct LiveTimeline: Sendable, Equatable {
    public enum Decision: Equatable, Sendable {
        /// Encode the frame: it is heard when the timeline says, and goes `latency` before
        /// (at once, if that time has come).
        case send
        /// Drop the frame: it waited too long in the pipe to be heard in time, or it would
        /// be heard before the epoch starts.
        case skip
        /// The epoch's first frame: the timeline starts with it, heard at `at`.
        case anchor(at: CoordinatorTime)
        /// The frame came later than the timeline by more than the rooms can wait for (half
        /// the latency: its writer paused), or the sender fell behind: a new epoch starts
        /// with this frame, heard at `at`.
        case realign(at: CoordinatorTime)
    }

    /// How the input's writer gives its frames, as last seen.
    public enum Writer: Sendable, Equatable {
        /// Not yet known (no frame placed since the input opened).
        case unknown
        /// In real time, by its own clock: its arrivals keep to the timeline.
        case paced
        /// Faster than real time: its frames wait for the timeline.
        case ahead
    }

    /// From a frame's arrival to when it is heard (nanoseconds): the latency in force, which
    /// the sender moves as the zone's network asks (`setLatency`).
    public private(set) var latency: Int64
    /// How far from the timeline a frame may come and still be on time (nanoseconds): a
    /// later one is a beat its writer missed (or a pause, past half the latency), an earlier
    /// one a writer that runs ahead.
    public let tolerance: Int64
    /// The most the input is stretched (ppm): a writer's clock further off than this falls
    /// behind now and then, and the latency takes what it lost (the sender grows it back),
    /// rather than being heard at a wrong pitch all along.
    public let maxStretch: Double
    /// Frames the sender asks about at a time (a packet's).
    public let frameSize: Int64

    public private(set) var writer = Writer.unknown {
        didSet { if writer != .ahead { aheadSince = nil } else if oldValue != .ahead { aheadSince = sinceNow } }
    }
    /// Since when (coordinator ns) the writer has run ahead, without a paced frame since.
    public private(set) var aheadSince: Int64?
    private var sinceNow: Int64 = 0
    /// How long a writer must have run ahead before its input is sent as far ahead as
    /// stored audio (ns): a writer may give more than real time for a moment (a burst after
    /// a hiccup of its own); one that runs ahead does so for good.
    public static let aheadFor: Int64 = 5_000_000_000
    /// How much a growing latency may fall behind what it counted before a frame that comes
    /// late is taken for a writer that paused (ns).
    public static let growthSlack: Int64 = 100_000_000
    /// How much the input is stretched to the house's clock (ppm): positive, frames are
    /// added (its writer's clock is slow); negative, taken away (it is fast).
    public private(set) var stretch = 0.0
    /// The stretch's integral part: the writer's clock against the house's, as learnt.
    private var drift = 0.0
    /// Frames dropped since the last anchor, waiting for one.
    private var skipped: Int64 = 0
    /// How much earlier than the timeline the frames come by their arrival, as placed
    /// (ns, at most 0): a writer that gives large blocks is placed later than their time.
    private var offset: Int64 = 0
    /// Since when (coordinator ns) every frame has come later than the tolerance.
    private var lateSince: Int64?
    /// How long frames must keep coming late before the time they lost is taken for good
    /// (ns): a writer that missed a beat catches up sooner.
    public static let lateFor: Int64 = 300_000_000
    /// The frames' lateness over the running second (ns), and since when it is counted.
    private var window = Window()
    private struct Window: Sendable, Equatable {
        var sum = 0.0, count = 0, from: Int64?
    }

    /// How hard the stretch follows the lateness: 0.1 ppm per microsecond late, which takes
    /// a millisecond off in about ten seconds; and the drift learnt from it, critically
    /// damped (a clock 300 ppm off leaves at most about 2 ms of lateness while it is learnt).
    static let proportional = 0.1
    static let integral = 0.0025

    public init(latency: Int64, tolerance: Int64 = 20_000_000, maxStretch: Double = 1_000, frameSize: Int = 960) {
        self.latency = latency
        self.tolerance = tolerance
        self.maxStretch = maxStretch
        self.frameSize = Int64(frameSize)
    }

    /// When the oldest of `bufferedFrames` frames is heard if it keeps its place in the
    /// input's own time: the newest of them arrived at `arrived`.
    public func heard(arrived: CoordinatorTime, bufferedFrames: Int64) -> CoordinatorTime {
        arrived - AudioFormat.nanoseconds(forFrames: bufferedFrames) + latency
    }

    /// What to do with the next frame. `planned` is when the current timeline has it heard
    /// (nil before the epoch's first frame); `start` is the epoch's start (nothing of it is
    /// heard earlier); `bufferedFrames` counts the frames read but not yet sent, this one
    /// included, the newest of which arrived at `arrived`.
    /// `growing`: the sender is stretching the input to grow the latency. What the stretch
    /// gave may fall short of what it counted (the chain's filters, a read's timing): a
    /// frame up to `growthSlack` later than the tolerance then takes the latency back to what
    /// the timeline holds (`latency` is less), and the growth goes on from there.
    public mutating func decide(planned: CoordinatorTime?, start: CoordinatorTime, now: CoordinatorTime,
                                arrived: CoordinatorTime, bufferedFrames: Int64, growing: Bool = false) -> Decision {
        let heard = heard(arrived: arrived, bufferedFrames: bufferedFrames)
        sinceNow = now.nanoseconds
        guard let planned else { return place(heard: heard, start: start, now: now) }
        // How much later than the timeline the frame came, over what its placing allowed.
        let lateness = heard - planned - offset
        if growing, lateness > tolerance, lateness <= tolerance + Self.growthSlack {
            latency -= lateness
            writer = .paced
            lateSince = nil
            return .send
        }
        if lateness > tolerance, lateness > latency / 2 {
            // Its writer paused, or another took its place (a player that starts writes a
            // little at first): what it is is seen anew. (A writer that ran ahead and waited
            // through the house's pause keeps what it was: that is a start, not this.)
            writer = .unknown
            lateSince = nil
            return .realign(at: heard)
        }
        // The sender fell behind (the machine stalled): the rooms would get it too late.
        if planned < now + latency / 4 {
            lateSince = nil
            return .realign(at: max(heard, now + latency))
        }
        if lateness > tolerance {
            // Late, but in time for the rooms (they wait half the latency at least): its
            // writer (or the machine) missed a beat. One that catches up has its frames on
            // time again at once; one that stays late lost that much time for good, and the
            // latency is what the timeline holds (the sender grows it back).
            let since = lateSince ?? now.nanoseconds
            lateSince = since
            if now.nanoseconds - since >= Self.lateFor {
                latency -= lateness
                lateSince = nil
            }
            writer = .paced
            return .send
        }
        lateSince = nil
        if lateness < -tolerance {
            writer = .ahead
            return .send
        }
        writer = .paced
        follow(lateness, now: now.nanoseconds)
        return .send
    }

    /// The epoch's first frame, heard at `heard` by its arrival: where the timeline starts.
    private mutating func place(heard: CoordinatorTime, start: CoordinatorTime, now: CoordinatorTime) -> Decision {
        window = Window()
        lateSince = nil
        // A writer that runs ahead waited for the input to be read: nothing it gave is late,
        // and its first frame is heard a latency from now.
        if writer == .ahead { return anchor(at: max(start, now + latency)) }
        // Half the latency is the least a room needs to get a packet and decode it. A
        // writer that gives its frames in large blocks (`arecord`'s are 125 ms) has the
        // first of each block arrive late by its own time: its timeline is placed that much
        // later, for good. Input older than that sat in the pipe (written while nobody read
        // it): it is dropped, as is input heard well before the epoch starts (a frame at most
        // the tolerance early waits for the start).
        // (A packet's first frame may wait a packet longer than the block's for its last.)
        let needed = now + latency / 2 + AudioFormat.nanoseconds(forFrames: frameSize) - heard
        if needed > latency / 2 + AudioFormat.nanoseconds(forFrames: frameSize) || heard < start - tolerance {
            // More than a latency of input at once cannot have come in real time: its
            // writer ran ahead and waited (or filled the pipe while nobody read it, and
            // waits now). What is left goes on from a latency from now.
            skipped += frameSize
            guard AudioFormat.nanoseconds(forFrames: skipped) > latency else { return .skip }
            writer = .ahead
            return anchor(at: max(start, now + latency))
        }
        let time = max(heard + max(0, needed), start)
        return anchor(at: time, offset: heard - time)
    }

    /// The timeline starts at `time`; a paced writer's frames come `offset` earlier than it
    /// by their arrival (one that runs ahead has them come whenever they are read).
    private mutating func anchor(at time: CoordinatorTime, offset: Int64 = 0) -> Decision {
        skipped = 0
        self.offset = offset
        return .anchor(at: time)
    }

    /// Whether its writer has paused at `now`: were its next write (`chunk` frames, as many
    /// as its last) to come now, on top of the `bufferedFrames` held, its first frame would
    /// part from the timeline, planned to be heard at `planned` (`decide` would start a new
    /// epoch with it). Never sooner: a writer that might still be on time is not cut off.
    public func paused(now: CoordinatorTime, planned: CoordinatorTime, bufferedFrames: Int64, chunk: Int64,
                       growing: Bool = false) -> Bool {
        let lateness = heard(arrived: now, bufferedFrames: bufferedFrames + max(1, chunk)) - planned - offset
        if growing, lateness <= tolerance + Self.growthSlack { return false }
        return lateness > tolerance && lateness > latency / 2
    }

    /// Whether the writer has run ahead for `aheadFor` at `now`: its input may be sent as far
    /// ahead as stored audio, and a room rides out a network that holds its packets.
    public func sendsAhead(now: Int64) -> Bool {
        aheadSince.map { now - $0 >= Self.aheadFor } ?? false
    }

    /// Frames are heard `latency` after they arrive from now on. The sender moves it no
    /// faster than it stretches the input (the frames then keep to the timeline), or at once
    /// while the timeline is not placed.
    public mutating func setLatency(_ latency: Int64) {
        self.latency = latency
    }

    /// Its writer paused (the rooms were told where its audio ends): what it is, when it
    /// writes again, is seen anew, as after a realignment.
    public mutating func writerPaused() {
        writer = .unknown
        lateSince = nil
    }

    /// A new input: nothing learnt of the last one's writer holds.
    public mutating func restart() {
        self = LiveTimeline(latency: latency, tolerance: tolerance, maxStretch: maxStretch, frameSize: Int(frameSize))
    }

    /// Learns the writer's clock from a paced frame's lateness (ns); once a second (when
    /// most of the second's frames came paced), sets the stretch that brings the lateness
    /// back to nothing.
    private mutating func follow(_ lateness: Int64, now: Int64) {
        let from = window.from ?? now
        window = Window(sum: window.sum + Double(lateness), count: window.count + 1, from: from)
        let span = Double(now - from) / 1e9
        guard span >= 1 else { return }
        defer { window = Window() }
        guard Double(window.count) >= span * 25 else { return }
        let error = window.sum / Double(window.count) / 1_000  // µs
        drift = min(maxStretch, max(-maxStretch, drift + Self.integral * error * span))
        stretch = min(maxStretch, max(-maxStretch, drift + Self.proportional * error))
    }
}
