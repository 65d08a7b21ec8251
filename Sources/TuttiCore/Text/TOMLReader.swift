/// Reads the TOML (v1.0.0) that tutti's configuration files are: top-level keys with
/// strings (all four forms), integers (decimal, hex, octal, binary), floats, booleans and
/// arrays of those, comments anywhere. Tables, inline tables, dotted keys and dates are
/// refused with what they are, at their line: a role's options have none of them. Pure
/// and Foundation-free, so the lean follower reads its file without linking Foundation
/// (TOMLKit would: see docs/architecture.md); the tests hold it to TOMLKit on the same
/// documents.
public enum TOMLReader {
    public indirect enum Value: Equatable, Sendable {
        case string(String), integer(Int), float(Double), bool(Bool), array([Value])
    }

    public struct Entry: Equatable, Sendable {
        public let key: String
        public let value: Value
        /// The key's line (1-based).
        public let line: Int
    }

    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let line: Int
        public let column: Int
        public let message: String
        /// The key the failure is about, when it is about one.
        public let key: String?
        /// Valid TOML that a configuration file does not use (a table, a date, a list of
        /// lists), as opposed to text that is not TOML.
        public var unsupported: Bool {
            message.contains("are not used") || message.contains("is not an option's value")
        }
        public var description: String { "\(message) (line \(line), column \(column))" }
    }

    /// The document's entries, in order.
    public static func read(_ text: String) throws(Failure) -> [Entry] {
        var parser = Parser(Array(text.utf8))
        return try parser.document()
    }

    struct Parser {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var lineStart = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
        func peek(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }

        /// A failure at `position` (default: here), with its line and column.
        func fail(_ message: String, key: String? = nil, at position: Int? = nil) -> Failure {
            let position = min(position ?? index, bytes.count)
            guard position < lineStart else { return Failure(line: line, column: position - lineStart + 1, message: message, key: key) }
            // On an earlier line (a list's item after newlines): counted again.
            var line = 1, start = 0
            for i in 0..<position where bytes[i] == 10 {
                line += 1
                start = i + 1
            }
            return Failure(line: line, column: position - start + 1, message: message, key: key)
        }

        mutating func advance() {
            if bytes[index] == 10 {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }

        mutating func skipSpaces() { while let c = peek, c == 32 || c == 9 { index += 1 } }

        /// Spaces, then a comment, then the end of the line (or of the document).
        mutating func endOfLine(after what: String) throws(Failure) {
            skipSpaces()
            if peek == UInt8(ascii: "#") { try comment() }
            guard let c = peek else { return }
            if c == 13, peek(1) == 10 { index += 1 }
            guard peek == 10 else { throw fail("expected the end of the line after \(what)") }
            advance()
        }

        mutating func comment() throws(Failure) {
            while let c = peek, c != 10 {
                if c == 13, peek(1) == 10 { return }
                if c < 32 && c != 9 || c == 127 { throw fail("a control character in a comment") }
                index += 1
            }
        }

        mutating func document() throws(Failure) -> [Entry] {
            var entries: [Entry] = []
            var seen: [String: Int] = [:]
            // A byte-order mark is allowed at the start.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3; lineStart = 3 }
            while let c = peek {
                switch c {
                case 32, 9: index += 1
                case 10: advance()
                case 13 where peek(1) == 10: index += 1
                case UInt8(ascii: "#"): try comment()
                case UInt8(ascii: "["):
                    let name = String(decoding: bytes[index...].prefix { $0 != 10 && $0 != UInt8(ascii: "#") }, as: UTF8.self)
                        .trimmingTrailingSpaces
                    throw fail("\(name): tables are not used: every option is a top-level key (write them before any [table])")
                default:
                    let keyLine = line
                    let key = try self.key()
                    if let first = seen[key] { throw fail("\(key) is given twice (first on line \(first))", key: key) }
                    seen[key] = keyLine
                    skipSpaces()
                    guard peek == UInt8(ascii: "=") else {
                        throw fail(peek == UInt8(ascii: ".") ? "\(key).…: dotted keys are not used: every option is a top-level key"
                                   : "expected = after the key \(key)", key: key)
                    }
                    index += 1
                    skipSpaces()
                    let value = try self.value(key: key)
                    entries.append(Entry(key: key, value: value, line: keyLine))
                    try endOfLine(after: "the value of \(key)")
                }
            }
            return entries
        }

        mutating func key() throws(Failure) -> String {
            switch peek {
            case UInt8(ascii: "\""): return try basicString()
            case UInt8(ascii: "'"): return try literalString()
            default:
                let start = index
                while let c = peek, Self.isBare(c) { index += 1 }
                guard index > start else { throw fail("expected a key (letters, digits, - and _) or a quoted key") }
                return String(decoding: bytes[start..<index], as: UTF8.self)
            }
        }

        static func isBare(_ c: UInt8) -> Bool {
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 95
        }

        mutating func value(key: String) throws(Failure) -> Value {
            guard let c = peek else { throw fail("expected a value for \(key)", key: key) }
            switch c {
            case UInt8(ascii: "\""):
                return .string(peek(1) == c && peek(2) == c ? try multilineString(literal: false) : try basicString())
            case UInt8(ascii: "'"):
                return .string(peek(1) == c && peek(2) == c ? try multilineString(literal: true) : try literalString())
            case UInt8(ascii: "["): return try array(key: key)
            case UInt8(ascii: "{"): throw fail("\(key): a table is not an option's value", key: key)
            case UInt8(ascii: "t"), UInt8(ascii: "f"):
                if bytes[index...].starts(with: Array("true".utf8)) { index += 4; return .bool(true) }
                if bytes[index...].starts(with: Array("false".utf8)) { index += 5; return .bool(false) }
                throw fail("\(key): not a value (text goes in quotes)", key: key)
            default:
                return try number(key: key)
            }
        }

        mutating func array(key: String) throws(Failure) -> Value {
            index += 1
            var items: [Value] = []
            while true {
                try skipBlank()
                guard let c = peek else { throw fail("\(key): the list is not closed with ]", key: key) }
                if c == UInt8(ascii: "]") { index += 1; return .array(items) }
                // (Refused before it is read: a list nested a thousand deep reads no deeper than this.)
                if c == UInt8(ascii: "[") { throw fail("\(key): a list inside a list is not an option's value", key: key) }
                let item = try value(key: key)
                items.append(item)
                try skipBlank()
                if peek == UInt8(ascii: ",") { index += 1; continue }
                guard peek == UInt8(ascii: "]") else { throw fail("\(key): expected , or ] in the list", key: key) }
            }
        }

        /// Spaces, newlines and comments, inside a list.
        mutating func skipBlank() throws(Failure) {
            while let c = peek {
                if c == 32 || c == 9 { index += 1 } else if c == 10 { advance() } else if c == 13, peek(1) == 10 { index += 1 }
                else if c == UInt8(ascii: "#") { try comment() } else { return }
            }
        }

        mutating func basicString() throws(Failure) -> String {
            index += 1
            var out: [UInt8] = []
            while true {
                guard let c = peek, c != 10 else { throw fail("the text is not closed with \"") }
                index += 1
                if c == UInt8(ascii: "\"") { break }
                if c == UInt8(ascii: "\\") { try escape(into: &out); continue }
                if c < 32 && c != 9 || c == 127 { throw fail("a control character in text (write it as an escape)", at: index - 1) }
                out.append(c)
            }
            return try utf8(out)
        }

        mutating func literalString() throws(Failure) -> String {
            index += 1
            let start = index
            while let c = peek, c != UInt8(ascii: "'") {
                if c == 10 || c < 32 && c != 9 || c == 127 { throw fail("the text is not closed with '") }
                index += 1
            }
            guard peek != nil else { throw fail("the text is not closed with '") }
            defer { index += 1 }
            return try utf8(Array(bytes[start..<index]))
        }

        mutating func multilineString(literal: Bool) throws(Failure) -> String {
            let quote = literal ? UInt8(ascii: "'") : UInt8(ascii: "\"")
            index += 3
            // A newline right after the opening quotes is not part of the text.
            if peek == 13, peek(1) == 10 { index += 1 }
            if peek == 10 { advance() }
            var out: [UInt8] = []
            while true {
                guard let c = peek else { throw fail("the text is not closed with \(literal ? "'''" : "\"\"\"")") }
                if c == quote, peek(1) == quote, peek(2) == quote {
                    // Up to two more quotes just before the closing three belong to the text.
                    var extra = 0
                    while extra < 2, peek(3 + extra) == quote { extra += 1 }
                    out += Array(repeating: quote, count: extra)
                    index += 3 + extra
                    return try utf8(out)
                }
                if !literal, c == UInt8(ascii: "\\") {
                    // A backslash ending a line trims the newline and the blanks after it.
                    var look = index + 1
                    while look < bytes.count, bytes[look] == 32 || bytes[look] == 9 { look += 1 }
                    if look < bytes.count, bytes[look] == 10 || (bytes[look] == 13 && look + 1 < bytes.count && bytes[look + 1] == 10) {
                        index = look
                        while let d = peek, d == 32 || d == 9 || d == 10 || d == 13 { if d == 10 { advance() } else { index += 1 } }
                        continue
                    }
                    index += 1
                    try escape(into: &out)
                    continue
                }
                if c == 13, peek(1) == 10 { index += 1; continue }
                if c == 10 { out.append(10); advance(); continue }
                if c < 32 && c != 9 || c == 127 { throw fail("a control character in text") }
                out.append(c)
                index += 1
            }
        }

        mutating func escape(into out: inout [UInt8]) throws(Failure) {
            guard let e = peek else { throw fail("the text is not closed") }
            index += 1
            switch e {
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "\""): out.append(34)
            case UInt8(ascii: "\\"): out.append(92)
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                let count = e == UInt8(ascii: "u") ? 4 : 8
                guard index + count <= bytes.count,
                      let code = UInt32(String(decoding: bytes[index..<index + count], as: UTF8.self), radix: 16),
                      let scalar = Unicode.Scalar(code) else {
                    throw fail("\\\(Character(Unicode.Scalar(e))) takes \(count) hex digits of a Unicode scalar value", at: index - 2)
                }
                index += count
                out += Array(String(Character(scalar)).utf8)
            default:
                throw fail("\\\(Character(Unicode.Scalar(e))) is not an escape (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)", at: index - 2)
            }
        }

        func utf8(_ out: [UInt8]) throws(Failure) -> String {
            guard let text = String(validating: out, as: UTF8.self) else { throw fail("text that is not UTF-8") }
            return text
        }

        mutating func number(key: String) throws(Failure) -> Value {
            let start = index
            while let c = peek, c > 32, c != UInt8(ascii: ","), c != UInt8(ascii: "]"), c != UInt8(ascii: "#") { index += 1 }
            let token = String(decoding: bytes[start..<index], as: UTF8.self)
            let failure = self.fail("", key: key, at: start)
            let fail = { (why: String) in Failure(line: failure.line, column: failure.column, message: "\(key) = \(token): \(why)", key: key) }
            if token.isEmpty { throw fail("expected a value") }
            if Self.looksLikeDate(token) { throw self.fail("\(key): a date or time is not an option's value (quote it to pass it as text)", key: key, at: start) }
            switch token {
            case "inf", "+inf": return .float(.infinity)
            case "-inf": return .float(-.infinity)
            case "nan", "+nan", "-nan": return .float(.nan)
            default: break
            }
            for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where token.hasPrefix(prefix) {
                let digits = token.dropFirst(2)
                guard Self.underscoresBetweenDigits(digits, radix: radix), let value = Int(digits.filter { $0 != "_" }, radix: radix) else {
                    throw fail("not a number")
                }
                return .integer(value)
            }
            let unsigned = token.first == "+" || token.first == "-" ? token.dropFirst() : Substring(token)
            let isFloat = unsigned.contains { $0 == "." || $0 == "e" || $0 == "E" }
            // Parts of digits: no leading zero (but 0 itself), underscores only between digits.
            let integerPart = unsigned.prefix { $0 != "." && $0 != "e" && $0 != "E" }
            guard Self.underscoresBetweenDigits(integerPart, radix: 10), !(integerPart.count > 1 && integerPart.first == "0") else {
                throw fail(integerPart.first == "0" && integerPart.count > 1 ? "no leading zeros" : "not a number (text goes in quotes)")
            }
            if !isFloat {
                guard let value = Int(token.filter { $0 != "_" }) else { throw fail("beyond a 64-bit integer") }
                return .integer(value)
            }
            var rest = unsigned.dropFirst(integerPart.count)
            if rest.first == "." {
                let fraction = rest.dropFirst().prefix { $0 != "e" && $0 != "E" }
                guard Self.underscoresBetweenDigits(fraction, radix: 10) else { throw fail("a decimal point needs digits on both sides") }
                rest = rest.dropFirst(1 + fraction.count)
            }
            if let e = rest.first, e == "e" || e == "E" {
                var exponent = rest.dropFirst()
                if exponent.first == "+" || exponent.first == "-" { exponent = exponent.dropFirst() }
                guard Self.underscoresBetweenDigits(exponent, radix: 10) else { throw fail("an exponent needs digits") }
                rest = rest.dropFirst(rest.count)
            }
            guard rest.isEmpty, let value = Double(token.filter { $0 != "_" }) else { throw fail("not a number") }
            return .float(value)
        }

        static func underscoresBetweenDigits(_ text: Substring, radix: Int) -> Bool {
            guard !text.isEmpty, text.first != "_", text.last != "_", !zip(text, text.dropFirst()).contains(where: { $0 == "_" && $1 == "_" }) else {
                return false
            }
            return text.allSatisfy { $0 == "_" || $0.hexDigitValue.map { $0 < radix } == true }
        }

        static func looksLikeDate(_ token: String) -> Bool {
            let b = Array(token.utf8)
            func digits(_ range: Range<Int>) -> Bool { range.upperBound <= b.count && range.allSatisfy { b[$0] >= 48 && b[$0] <= 57 } }
            return (digits(0..<4) && b.count > 4 && b[4] == UInt8(ascii: "-")) || (digits(0..<2) && b.count > 2 && b[2] == UInt8(ascii: ":"))
        }
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while let last = s.last, last == " " || last == "\t" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
