/// Number formatting and trimming without Foundation (whose `String(format:)` and
/// `CharacterSet` live in the full Foundation library): the follower is built on
/// FoundationEssentials alone, which keeps its memory small.

extension BinaryFloatingPoint {
    /// The value with `decimals` digits after the point (at most 9), as `%.Nf` writes it;
    /// with `sign`, a plus sign before positive values, as `%+.Nf` writes it.
    public func fixed(_ decimals: Int, sign: Bool = false) -> String {
        let value = Double(self)
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : sign ? "+inf" : "inf") }
        let decimals = Swift.max(0, Swift.min(decimals, 9))
        var scale: UInt64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (value.magnitude * Double(scale)).rounded()
        guard scaled < 9e18 else { return value.description }
        let units = UInt64(scaled)
        var text = String(units / scale)
        if scale > 1 {
            let fraction = String(units % scale)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return (value < 0 && units != 0 ? "-" : sign ? "+" : "") + text
    }
}

extension BinaryInteger {
    /// The value (not negative) in lower-case hexadecimal, zero-padded to `digits` (`%0Nx`).
    public func hex(digits: Int) -> String { Self.zeroPadded(String(self, radix: 16), digits) }

    /// The value in decimal, zero-padded to `digits` (`%0Nd`).
    public func zeroPadded(_ digits: Int) -> String {
        self < 0 ? "-" + Self.zeroPadded(String(magnitude), digits - 1) : Self.zeroPadded(String(self), digits)
    }

    private static func zeroPadded(_ text: String, _ digits: Int) -> String {
        String(repeating: "0", count: Swift.max(0, digits - text.count)) + text
    }
}

extension String {
    /// `text` right-aligned in `width` characters (`%Ns`, `%Nd`).
    public static func padded(_ text: String, to width: Int) -> String {
        String(repeating: " ", count: Swift.max(0, width - text.count)) + text
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (Foundation's `.whitespaces`: tab and the
    /// Unicode space separators; line breaks stay).
    public func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator } }
    }

    /// Without white space or line breaks at either end (`.whitespacesAndNewlines`).
    public func trimmingWhitespace() -> String { trimming(\.isWhitespace) }

    private func trimming(_ drop: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else { return "" }
        return String(self[first...last])
    }
}
