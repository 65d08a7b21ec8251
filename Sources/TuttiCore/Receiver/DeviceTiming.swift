/// One timing report from a sound device: frame `frame` of the device's stream (counting
/// every frame written since the output opened) is heard at local time `heardAt`.
///
/// Reports come from the sound server (PulseAudio's read index and sink latency) or from a
/// clocked output that knows its timeline exactly. `uncertainty` is how long the query took
/// (its round trip): the report's error grows with it, so the timeline trusts quick ones most.
public struct DeviceTiming: Equatable, Sendable {
    public var frame: Int64
    public var heardAt: LocalTime
    /// When the report was taken, on the local clock.
    public var measuredAt: LocalTime
    /// Nanoseconds: the query's round trip, or 0 for an exact report.
    public var uncertainty: Int64

    public init(frame: Int64, heardAt: LocalTime, measuredAt: LocalTime, uncertainty: Int64 = 0) {
        self.frame = frame
        self.heardAt = heardAt
        self.measuredAt = measuredAt
        self.uncertainty = uncertainty
    }

    /// The local time frame 0 is (or would have been) heard, at the nominal rate.
    public var anchor: LocalTime { heardAt - AudioFormat.nanoseconds(forFrames: frame) }
}
