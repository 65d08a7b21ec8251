/// A sound device, or something that behaves like one: it consumes frames in real time.
///
/// The follower's playout loop waits for the device to want more (`awaitDemand`), learns
/// from its timing reports (`takeTiming`) when the next frame written (`framesWritten`) will be heard,
/// renders exactly the frames due then, and writes them. Frame indices count every frame
/// written since the output opened; a device that runs dry keeps counting time, so late
/// frames are dropped rather than shifting everything after them.
public protocol AudioOutput: AnyObject {
    /// A human-readable name, for logs.
    var name: String { get }
    /// Waits up to `timeout` nanoseconds until the device can take `frames` more frames;
    /// false if it could not take them by then. Throws when the device has failed.
    func awaitDemand(frames: Int, timeout: Int64) throws -> Bool
    /// The newest timing report not taken yet, if any.
    func takeTiming() -> DeviceTiming?
    /// The index of the next frame `write` appends.
    var framesWritten: Int64 { get }
    /// Writes interleaved stereo float frames.
    func write(_ samples: [Float]) throws
    /// Whether the sound server asked this stream to pause for another one (a phone call:
    /// PulseAudio's role-based corking).
    var interrupted: Bool { get }
    /// How much history its timing reports are fitted over (`DeviceTimeline`), when it
    /// needs more than the usual 5 s: reports that wander slowly around the truth.
    var timingWindow: Int64? { get }
    /// How far ahead of being heard the last frame written is once the device's buffer is
    /// full, just after a write (ns), as the buffer was set up: what the room will commit to, reported before its
    /// measurements show it (the buffer fills over its first writes).
    var bufferLatency: Int64? { get }
    /// How often the player wants timing reports from now on (ns), at most; nil: as often
    /// as the output was set up to ask. A report that costs the device a round trip (a
    /// sound server's) is asked for often while the player's timeline of the device is
    /// young, seldom once it is steady. An output whose reports cost nothing ignores it.
    func paceTiming(every interval: Int64?)
}

extension AudioOutput {
    public var timingWindow: Int64? { nil }
    public var bufferLatency: Int64? { nil }
    public func paceTiming(every interval: Int64?) {}
}
