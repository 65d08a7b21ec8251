/// What went wrong with a sound output, and what to do about it.
public enum AudioError: Error, CustomStringConvertible {
    case pulse(operation: String, message: String)
    case alsa(device: String, operation: String, message: String)
    case file(path: String, reason: String)
    case badOutputSpec(String)

    public var description: String {
        switch self {
        case let .pulse(op, message):
            "PulseAudio \(op) failed: \(message) (is a PulseAudio server running, and does the sink exist? try `pactl list short sinks`)"
        case let .alsa(device, op, message):
            "ALSA device \(device): cannot \(op): \(message) (does it exist? try `aplay -L`; is another program using it?)"
        case let .file(path, reason): "cannot write \(path): \(reason)"
        case let .badOutputSpec(spec): "unknown output '\(spec)': use auto, pulse, pulse:SINK, alsa, alsa:DEVICE, wav:PATH or null"
        }
    }
}
