/// How the house evens out the loudness of its tracks: ReplayGain's gain of the track or of
/// its album, applied before encoding, never past what keeps the track's peak at full scale.
public struct ReplayGain: Equatable, Sendable, Codable {
    public enum Mode: String, Codable, Sendable, CaseIterable {
        /// Tracks play as they are.
        case off
        /// Each track at the reference loudness (its album's gain when it has no track gain).
        case track
        /// Each album at the reference loudness, its tracks as loud as each other within it
        /// (the track's gain when it has no album gain).
        case album
    }

    public var mode: Mode
    /// Added to every gain read from tags (decibels).
    public var preampDB: Double
    /// The gain of a track whose tags say nothing about its loudness (decibels).
    public var untaggedDB: Double

    public init(mode: Mode = .off, preampDB: Double = 0, untaggedDB: Double = 0) {
        self.mode = mode
        self.preampDB = preampDB
        self.untaggedDB = untaggedDB
    }

    /// The house's setting until it is told otherwise: each album at the reference
    /// loudness, a track without tags as it is.
    public static let standard = ReplayGain(mode: .album)

    enum CodingKeys: String, CodingKey {
        case mode
        case preampDB = "preampDb"
        case untaggedDB = "untaggedDb"
    }

    /// The decibels past which a setting is refused (the guard below keeps peaks in, but a
    /// gain this large is a mistake).
    public static let limitDB = 24.0

    /// Whether `decibels` may be set as a pre-amplification or an untagged gain.
    public static func accepts(_ decibels: Double) -> Bool { decibels.isFinite && abs(decibels) <= limitDB }

    /// The linear gain for a track with this loudness: 1 when off, or for a source that has
    /// no loudness to speak of (`nil`: a live input, which plays as it comes).
    public func gain(for loudness: Loudness?) -> Float {
        guard mode != .off, let loudness else { return 1 }
        let (gain, peak): (Double?, Double?) = switch mode {
        case .album: (loudness.albumGain ?? loudness.trackGain, loudness.albumGain != nil ? loudness.albumPeak : loudness.trackPeak)
        default: (loudness.trackGain ?? loudness.albumGain, loudness.trackGain != nil ? loudness.trackPeak : loudness.albumPeak)
        }
        var linear = Self.linear(gain.map { $0 + preampDB } ?? untaggedDB)
        // The clipping guard: never louder than brings the peak to full scale.
        if let peak, peak > 0 { linear = min(linear, 1 / peak) }
        return Float(linear)
    }

    static func linear(_ decibels: Double) -> Double {
        let clamped = max(-limitDB * 2, min(limitDB, decibels))
        return pow10(clamped / 20)
    }

    /// 10^x, without Foundation.
    static func pow10(_ x: Double) -> Double { exp(x * 2.302_585_092_994_046) }

    /// e^x by its series after range reduction: enough for gains (|x| < 7), exact to 1e-12.
    static func exp(_ x: Double) -> Double {
        // e^x = (e^(x/2^k))^(2^k)
        var k = 0
        var y = x
        while abs(y) > 0.5 { y /= 2; k += 1 }
        var term = 1.0, sum = 1.0
        for n in 1...20 {
            term *= y / Double(n)
            sum += term
        }
        for _ in 0..<k { sum *= sum }
        return sum
    }
}
