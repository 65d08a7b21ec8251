import Foundation
import Testing
import TuttiCore

/// The Foundation-free formatting and trimming against Foundation's own.
@Suite("Formatting without Foundation")
struct FormattingTests {
    @Test func fixedWritesWhatPrintfWrites() {
        let values: [Double] = [0, 1, -1, 0.05, -0.05, 0.04, 1.25, 2.5, 999.95, 123_456.789, -3.14159, 1e-9, 48_000, 0.999, -0.999]
        for value in values {
            for decimals in 0...3 {
                // Ties are rare (binary fractions) and printf rounds them to even; skip them.
                let scaled = abs(value) * pow(10, Double(decimals))
                guard abs(scaled - scaled.rounded(.down) - 0.5) > 1e-9 else { continue }
                let expected = String(format: "%.\(decimals)f", value), mine = value.fixed(decimals)
                // printf keeps the sign of a negative value that rounds to zero ("-0.0").
                #expect(mine == expected || "-" + mine == expected, "\(value) to \(decimals) decimals: \(mine), not \(expected)")
                #expect(value.fixed(decimals, sign: true).dropFirst() == value.fixed(decimals).drop { $0 == "-" })
            }
        }
        #expect(1.5.fixed(1, sign: true) == "+1.5")
        #expect((-1.5).fixed(1, sign: true) == "-1.5")
        #expect(0.0.fixed(2, sign: true) == "+0.00")
        #expect((-0.004).fixed(2) == "0.00")
        #expect(Double.nan.fixed(1) == "nan")
        #expect(0.5.fixed(12) == "0.500000000")  // at most 9 decimals
        #expect(2.0.fixed(-1) == "2")
        #expect((-Double.infinity).fixed(1) == "-inf")
        #expect(Float(2.25).fixed(1) == "2.2" || Float(2.25).fixed(1) == "2.3")
    }

    @Test func integersPadAsPrintfDoes() {
        for value: UInt32 in [0, 1, 0xAB, 0xDEAD_BEEF] {
            #expect(value.hex(digits: 8) == String(format: "%08x", value))
            #expect(UInt8(truncatingIfNeeded: value).hex(digits: 2) == String(format: "%02x", UInt8(truncatingIfNeeded: value)))
        }
        #expect(7.zeroPadded(2) == "07")
        #expect(123.zeroPadded(2) == "123")
        #expect((-7).zeroPadded(3) == "-07")
        #expect(String.padded("ab", to: 4) == "  ab")
    }

    @Test func trimmingMatchesFoundationsSets() {
        let samples = ["", "  ", "\t a b \t", "\u{00A0}word\u{2003}", " line\n", "\n x \r\n", "x", "é "]
        for text in samples {
            #expect(text.trimmingSpaces() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
    }
}
