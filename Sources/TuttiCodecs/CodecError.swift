/// What went wrong in a codec, with enough detail to act on.
public enum CodecError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, reason: String)
    case notAudio(path: String, reason: String)
    case decodeFailed(path: String, reason: String)
    case opus(operation: String, code: Int32, message: String)

    public var description: String {
        switch self {
        case let .cannotOpen(path, reason): "cannot open \(path): \(reason)"
        case let .notAudio(path, reason): "\(path) is not playable MP3 audio: \(reason)"
        case let .decodeFailed(path, reason): "decoding \(path) failed: \(reason)"
        case let .opus(op, code, message): "Opus \(op) failed (\(code)): \(message)"
        }
    }
}
