/// One timing report from a sound device: frame `frame` of the device's stream (counting
/// every frame written since the output opened) is heard at local time `heardAt`.
///
/// Reports come from the sound server (PulseAudio's read index and sink latency) or from a
/// clocked output that knows its timeline exactly. `uncertainty` is how long the query took
/// (its round trip): the report's error grows with it, so the timeline trusts quick ones most.
///
/// A report is an instant on the local clock (when the device was asked) plus a duration the
/// device measured (its latency: frames still to play, or a sound server's figure for them),
/// `delay`. That duration is the device's time, not the local clock's: a sound card whose
/// crystal runs 200 ppm fast against the CPU's plays a 60 ms latency in 59.988 ms of local
/// time. `heardAt` adds it as reported; the timeline (`DeviceTimeline`) converts it at the
/// rate it measures for the device.
public struct DeviceTiming: Equatable, Sendable {
    public var frame: Int64
    /// When the frame is heard, the device's delay counted as if it were local time.
    public var heardAt: LocalTime
    /// Nanoseconds of the device's own time within `heardAt` (0 for an exact report).
    public var delay: Int64
    /// When the report was taken, on the local clock.
    public var measuredAt: LocalTime
    /// Nanoseconds: the query's round trip, or 0 for an exact report.
    public var uncertainty: Int64

    public init(frame: Int64, heardAt: LocalTime, measuredAt: LocalTime, uncertainty: Int64 = 0, delay: Int64 = 0) {
        self.frame = frame
        self.heardAt = heardAt
        self.delay = delay
        self.measuredAt = measuredAt
        self.uncertainty = uncertainty
    }

    /// The local time frame 0 is (or would have been) heard, at the nominal rate, the delay
    /// taken as local time.
    public var anchor: LocalTime { heardAt - AudioFormat.nanoseconds(forFrames: frame) }
}
