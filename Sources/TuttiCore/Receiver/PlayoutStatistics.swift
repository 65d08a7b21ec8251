/// Counters a follower keeps about its stream and its playback; all monotonic except the
/// gauges (`lastError`, `ratio`, `buffered`).
public struct PlayoutStatistics: Equatable, Sendable {
    public var packetsReceived = 0
    public var malformed = 0
    /// Valid RTP but not our stream: wrong payload type, unknown SSRC, no presentation time.
    public var foreign = 0
    /// Packets of the house's other zones' streams (not the room's zone's).
    public var otherZones = 0
    public var duplicates = 0
    /// Arrived after their turn, or after their presentation time.
    public var late = 0
    /// Presentation time absurdly far from now.
    public var absurd = 0
    public var overflow = 0
    /// Packets that arrived before the clock was locked.
    public var beforeClockLock = 0
    /// Packets the decoder found missing (never came, or came too late).
    public var lost = 0
    /// Packets that came back by retransmission in time (after the network lost them).
    public var retransmitted = 0
    public var recoveredByFEC = 0
    public var concealedFrames = 0
    /// Packets' worth of audio made up for missing ones (concealed, or silence once
    /// concealment has gone on too long): each a hole the listener hears.
    public var concealments = 0
    public var silenceFrames = 0
    public var decodeErrors = 0
    public var resyncs = 0
    /// Timing errors stepped out (a jump of the position): while settling after a start, or
    /// beyond what slewing corrects in a few seconds.
    public var steps = 0
    /// Timing errors beyond a sample brought back by resampling (inaudible).
    public var slews = 0
    /// Times the stream stopped coming (the buffer ran dry) and playback stopped until it returned.
    public var outages = 0
    public var discontinuities = 0
    /// Last measured playback error, nanoseconds (positive: late).
    public var lastError: Int64 = 0
    public var ratio: Double = 1
    /// Packets waiting in the jitter buffer.
    public var buffered = 0

    public init() {}
}
