import CFFmpeg

/// Why a file or a stream cannot be played, in words a user can act on.
public enum MediaError: Error, CustomStringConvertible, Equatable, Sendable {
    /// It cannot be read at all: missing, unreadable, not a regular file.
    case cannotOpen(name: String, reason: String)
    /// It is read, but holds no audio tutti knows: text, an image, video only, an unknown format.
    case notAudio(name: String, reason: String)
    /// Its audio is of a kind tutti does not play: a codec with no decoder here, DRM.
    case unsupported(name: String, reason: String)
    /// Decoding went wrong past repair.
    case decodeFailed(name: String, reason: String)
    /// A seek could not be made.
    case cannotSeek(name: String, reason: String)
    /// The sample-rate converter could not be made or run.
    case resampler(reason: String)

    public var description: String {
        switch self {
        case let .cannotOpen(name, reason): "cannot open \(name): \(reason)"
        case let .notAudio(name, reason): "\(name) is not audio tutti plays: \(reason)"
        case let .unsupported(name, reason): "\(name) cannot be played: \(reason)"
        case let .decodeFailed(name, reason): "decoding \(name) failed: \(reason)"
        case let .cannotSeek(name, reason): "cannot seek in \(name): \(reason)"
        case let .resampler(reason): "sample-rate conversion failed: \(reason)"
        }
    }

    /// FFmpeg's words for an error code.
    static func words(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        _ = av_strerror(code, &buffer, buffer.count)
        let text = buffer.withUnsafeBufferPointer { String(validatingCString: $0.baseAddress!) } ?? ""
        return text.isEmpty ? "error \(code)" : text.prefix(1).lowercased() + text.dropFirst()
    }
}
