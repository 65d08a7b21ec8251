/// Numbers that come from outside the house: a station's headers, a playlist, a tag, a
/// file. Each is read within the range its reader documents, where it is parsed, so that
/// nothing done with it afterwards can trap: a number outside its range is no number (nil),
/// and its reader treats what it was for as unknown, or refuses the source with an error
/// that says which number (docs/security.md, "Numbers from outside").
public enum OutsideNumber {
    /// The decimal integer `text` holds (spaces around it allowed), when it lies in `range`.
    public static func integer<T: FixedWidthInteger>(_ text: some StringProtocol, in range: ClosedRange<T>) -> T? {
        let trimmed = text.trimmingSpaces()
        // Digits beyond 40 are no integer of any width (and not worth reading).
        guard !trimmed.isEmpty, trimmed.utf8.count <= 40, let value = T(trimmed), range.contains(value) else { return nil }
        return value
    }

    /// The finite decimal number `text` holds (digits, a point, a sign, an exponent: not
    /// hexadecimal, inf or nan), when it lies in `range`.
    public static func decimal(_ text: some StringProtocol, in range: ClosedRange<Double>) -> Double? {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64, trimmed.utf8.allSatisfy({ (48...57).contains($0) || "+-.eE".utf8.contains($0) }),
              let value = Double(trimmed), value.isFinite, range.contains(value)
        else { return nil }
        return value
    }

    /// A byte count or offset an HTTP server states (Content-Length, a range's total): up to
    /// a petabyte.
    public static let bytes: ClosedRange<Int64> = 0...(1 << 50)
    /// A duration a playlist states (an HLS target duration or segment, an M3U entry): up to
    /// a day, in seconds.
    public static let playlistSeconds: ClosedRange<Double> = 0...86_400
    /// A bit rate a station announces (`icy-br`), in kbit/s.
    public static let kilobitsPerSecond: ClosedRange<Int> = 0...100_000
}
