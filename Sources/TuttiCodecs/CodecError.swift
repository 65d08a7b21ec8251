/// What went wrong in a codec, with enough detail to act on.
public enum CodecError: Error, CustomStringConvertible, Equatable {
    case opus(operation: String, code: Int32, message: String)
    /// A lossless packet (L24, FLAC) that does not decode: `reason` says why.
    case lossless(codec: String, reason: String)

    public var description: String {
        switch self {
        case let .opus(op, code, message): "Opus \(op) failed (\(code)): \(message)"
        case let .lossless(codec, reason): "\(codec) packet not decoded: \(reason)"
        }
    }
}
