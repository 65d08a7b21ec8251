/// What a track's tags say about its loudness: ReplayGain's gains (decibels, to bring it to
/// ReplayGain's reference level) and peaks (linear, 1 is full scale), for the track and for
/// its album. EBU R128 gains (Opus's `R128_TRACK_GAIN`) are read into the same fields,
/// moved to ReplayGain's reference.
public struct Loudness: Equatable, Sendable, Codable {
    public var trackGain: Double?
    public var trackPeak: Double?
    public var albumGain: Double?
    public var albumPeak: Double?

    public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
    }

    /// True when no gain is known.
    public var isEmpty: Bool { trackGain == nil && albumGain == nil }

    /// Fills what is missing here from `other`.
    public mutating func merge(_ other: Loudness) {
        trackGain = trackGain ?? other.trackGain
        trackPeak = trackPeak ?? other.trackPeak
        albumGain = albumGain ?? other.albumGain
        albumPeak = albumPeak ?? other.albumPeak
    }

    /// Gains beyond this many decibels either way are taken for garbage.
    static let plausibleGain = 60.0

    /// A ReplayGain gain as tags write it: "-6.54 dB", "+1.2dB", "3.1".
    public static func gain(parsing text: String) -> Double? {
        var t = text.trimmingSpaces().lowercased()
        if t.hasSuffix("db") { t = String(t.dropLast(2)).trimmingSpaces() }
        if t.hasPrefix("+") { t.removeFirst() }
        guard let value = Double(t), value.isFinite, abs(value) <= plausibleGain else { return nil }
        return value
    }

    /// A ReplayGain peak: a linear amplitude ("0.988547"); values past 10 are garbage.
    public static func peak(parsing text: String) -> Double? {
        guard let value = Double(text.trimmingSpaces()), value.isFinite, value > 0, value <= 10 else { return nil }
        return value
    }

    /// An R128 gain (RFC 7845: a Q7.8 integer of decibels towards -23 LUFS), moved to
    /// ReplayGain's reference (-18 LUFS): 5 dB louder.
    public static func r128(parsing text: String) -> Double? {
        guard let q = Int(text.trimmingSpaces()), q >= -32_768, q <= 32_767 else { return nil }
        return Double(q) / 256 + 5
    }
}
