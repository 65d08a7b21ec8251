/// What went wrong with a sound output, and what to do about it.
public enum AudioError: Error, CustomStringConvertible {
    case pulse(operation: String, message: String)
    case file(path: String, reason: String)
    case badOutputSpec(String)

    public var description: String {
        switch self {
        case let .pulse(op, message):
            "PulseAudio \(op) failed: \(message) (is a PulseAudio server running, and does the sink exist? try `pactl list short sinks`)"
        case let .file(path, reason): "cannot write \(path): \(reason)"
        case let .badOutputSpec(spec): "unknown output '\(spec)': use pulse, pulse:SINK, wav:PATH or null"
        }
    }
}
