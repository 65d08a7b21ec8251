import CPulse
import Glibc
import TuttiCore

/// Plays through a PulseAudio sink (48 kHz stereo float), reporting the server's latency.
///
/// The stream carries `media.role=music`, so PulseAudio's role policies (such as
/// module-role-cork) apply to it.
public final class PulseOutput: AudioOutput {
    private let stream: OpaquePointer
    public let name: String

    /// - Parameters:
    ///   - sink: the sink to play to, or nil for the server's default.
    ///   - bufferMilliseconds: the target buffer (tlength) the server keeps filled.
    public init(sink: String?, clientName: String = "tutti", streamName: String = "tutti follower",
                bufferMilliseconds: Int = 50) throws(AudioError) {
        setenv("PULSE_PROP_media.role", "music", 1)
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(AudioFormat.sampleRate),
                                  channels: UInt8(AudioFormat.channels))
        let bytesPerMs = UInt32(AudioFormat.sampleRate / 1000 * AudioFormat.channels * MemoryLayout<Float>.size)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: bytesPerMs * UInt32(bufferMilliseconds),
                                  prebuf: 0, minreq: UInt32.max, fragsize: UInt32.max)
        var err: Int32 = 0
        guard let s = pa_simple_new(nil, clientName, PA_STREAM_PLAYBACK, sink, streamName, &spec, nil, &attr, &err) else {
            throw .pulse(operation: "connect to sink \(sink ?? "(default)")", message: String(cString: pa_strerror(err)))
        }
        stream = s
        name = "pulse:\(sink ?? "default")"
    }

    deinit { pa_simple_free(stream) }

    public func latency() throws -> Int64 {
        var err: Int32 = 0
        let usec = pa_simple_get_latency(stream, &err)
        if usec == UInt64.max { throw AudioError.pulse(operation: "get latency", message: String(cString: pa_strerror(err))) }
        return Int64(usec) * 1000
    }

    public func write(_ samples: [Float]) throws {
        var err: Int32 = 0
        let rc = samples.withUnsafeBytes { pa_simple_write(stream, $0.baseAddress, $0.count, &err) }
        if rc < 0 { throw AudioError.pulse(operation: "write", message: String(cString: pa_strerror(err))) }
    }

    public func flush() throws {
        var err: Int32 = 0
        if pa_simple_flush(stream, &err) < 0 {
            throw AudioError.pulse(operation: "flush", message: String(cString: pa_strerror(err)))
        }
    }
}
