/// Frames of media at the house's rate (48 kHz): a position in a track or on a stream's
/// timeline, or a length of media. What the transport, the timeline, the senders and the
/// saved house count in. A decoder's frames, at a file's own rate, are `TrackFrames`, which
/// say their rate: the two cannot be mixed up.
///
/// Saved and sent as the bare count (the saved house's JSON is unchanged).
public struct MediaFrames: Hashable, Comparable, Sendable, Codable, ExpressibleByIntegerLiteral, AdditiveArithmetic,
    CustomStringConvertible {
    public var count: Int64

    public init(_ count: Int64) { self.count = count }
    public init(integerLiteral value: Int64) { count = value }
    /// The frames that last `seconds` at 48 kHz (rounded toward zero).
    public init(seconds: Double) { count = Int64(seconds * Double(AudioFormat.sampleRate)) }

    public static let zero = MediaFrames(0)
    public static func + (a: Self, b: Self) -> Self { Self(a.count + b.count) }
    public static func - (a: Self, b: Self) -> Self { Self(a.count - b.count) }
    public static func < (a: Self, b: Self) -> Bool { a.count < b.count }
    /// So many times as long (`3 * second`).
    public static func * (n: Int64, a: Self) -> Self { Self(n * a.count) }
    /// A `n`th as long (rounded toward zero).
    public static func / (a: Self, n: Int64) -> Self { Self(a.count / n) }

    /// How long they last (ns).
    public var nanoseconds: Int64 { AudioFormat.nanoseconds(forFrames: count) }
    public var seconds: Double { Double(count) / Double(AudioFormat.sampleRate) }

    public init(from decoder: any Decoder) throws { count = try decoder.singleValueContainer().decode(Int64.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(count)
    }

    public var description: String { "\(count) frames" }
}

/// Frames at a track's own rate, as its decoder counts them, with that rate: a decoder's
/// position or a file's length. `media` is the same at the house's rate.
public struct TrackFrames: Hashable, Sendable, CustomStringConvertible {
    public var count: Int64
    /// Frames per second.
    public var rate: Int

    public init(_ count: Int64, rate: Int) {
        self.count = count
        self.rate = rate
    }

    /// `media` at `rate` (rounded down).
    public init(_ media: MediaFrames, rate: Int) {
        self.init(AudioFormat.frames(media.count, at: AudioFormat.sampleRate, to: rate), rate: rate)
    }

    /// At the house's rate (rounded down).
    public var media: MediaFrames { MediaFrames(AudioFormat.frames(count, at: rate)) }

    public var description: String { "\(count) frames at \(rate) Hz" }
}
