/// A sound device, or something that behaves like one: it consumes frames in real time.
///
/// The follower's playout loop learns from the device's timing reports (`takeTiming`) when
/// the next frame written (`framesWritten`) will be heard, and so when the device runs dry
/// (that instant, less `committedLatency`); it sleeps (`wait`) until a write is due
/// (`DeviceFill`), renders exactly the frames due then, and writes them, as many as keep the
/// device supplied until its next write. Frame indices count every frame written since the
/// output opened; a device that runs dry keeps counting time, so late frames are dropped
/// rather than shifting everything after them.
public protocol AudioOutput: AnyObject {
    /// A human-readable name, for logs.
    var name: String { get }
    /// Sleeps until local time `deadline`, taking in what the device says meanwhile; it
    /// may return early for news the player should act on at once (the answer to a timing
    /// query). Throws when the device has failed.
    func wait(until deadline: Int64) throws
    /// The newest timing report not taken yet, if any. An output that skips the frames
    /// whose time passed while it was dry does so here first, so the report and
    /// `framesWritten` agree.
    func takeTiming() -> DeviceTiming?
    /// The index of the next frame `write` appends.
    var framesWritten: Int64 { get }
    /// Writes interleaved stereo float frames, as many as given.
    func write(_ samples: [Float]) throws
    /// Whether the sound server asked this stream to pause for another one (a phone call:
    /// PulseAudio's role-based corking). The player does not write meanwhile.
    var interrupted: Bool { get }
    /// How much history its timing reports are fitted over (`DeviceTimeline`), when it
    /// needs more than the usual 5 s: reports that wander slowly around the truth.
    var timingWindow: Int64? { get }
    /// Whether its timing reports are the device's own position to a few microseconds (a
    /// sound card's driver), so that a quarter second of them tells its rate: a room then
    /// places its first sound only once the rate is known (`DeviceTimeline.settleOnRate`).
    var reportsTellRate: Bool { get }
    /// How long before a frame is heard the device takes it from what was written, at most
    /// (ns): a sound server's sink latency, a sound card's FIFO. The device runs dry that
    /// long before the frame after the last one written would be heard.
    var committedLatency: Int64 { get }
    /// Times the device ran dry while it had been fed (underruns), as it counts them: each
    /// one a hole in what the room heard.
    var underruns: Int { get }
}

extension AudioOutput {
    public var timingWindow: Int64? { nil }
    public var reportsTellRate: Bool { false }
    public var committedLatency: Int64 { 0 }
}
