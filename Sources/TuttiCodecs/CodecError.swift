/// What went wrong in the Opus codec, with enough detail to act on.
public enum CodecError: Error, CustomStringConvertible, Equatable {
    case opus(operation: String, code: Int32, message: String)

    public var description: String {
        switch self {
        case let .opus(op, code, message): "Opus \(op) failed (\(code)): \(message)"
        }
    }
}
