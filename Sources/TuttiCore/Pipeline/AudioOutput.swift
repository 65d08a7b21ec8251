/// A sound device, or something that behaves like one: it consumes samples in real time.
///
/// The follower's playout loop asks `latency` how long until a sample written now is
/// heard, renders exactly the samples due then, and writes them; `write` blocks while the
/// device's buffer is full, which paces the loop.
public protocol AudioOutput: AnyObject {
    /// Nanoseconds from now until the next frame written is audible (device latency,
    /// including everything already buffered).
    func latency() throws -> Int64
    /// Writes interleaved stereo float frames; blocks while the device buffer is full.
    func write(_ samples: [Float]) throws
    /// Discards everything buffered and not yet played.
    func flush() throws
    /// A human-readable name, for logs.
    var name: String { get }
}
