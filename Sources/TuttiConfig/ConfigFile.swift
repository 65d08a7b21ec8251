import TOMLKit

/// A role's configuration file: TOML, one top-level key per option of the role's command
/// line, named as the option without its dashes (`latency-ms = 150`, `unicast = true`,
/// `inputs = ["/srv/music"]`). Read through TOMLKit (toml++), its only importer.
public struct ConfigFile: Sendable {
    public enum Value: Equatable, Sendable {
        case string(String), integer(Int), float(Double), bool(Bool), list([Value])

        /// As the command line would spell it.
        var argument: String? {
            switch self {
            case let .string(s): s
            case let .integer(i): String(i)
            case let .float(d): d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : "\(d)"
            case .bool, .list: nil
            }
        }

        /// As TOML spells it, for messages.
        var toml: String {
            switch self {
            case let .string(s): "\"\(s)\""
            case let .integer(i): String(i)
            case let .float(d): "\(d)"
            case let .bool(b): b ? "true" : "false"
            case let .list(l): "[" + l.map(\.toml).joined(separator: ", ") + "]"
            }
        }
    }

    public struct Entry: Equatable, Sendable {
        public let key: String
        public let value: Value
        /// Where the key is written (1-based).
        public let line: Int
    }

    public let path: String
    public let entries: [Entry]

    /// Parses `text` (the contents of `path`); a syntax error names its line and column,
    /// a value TOML has but an option cannot take (a table, a date) names its key's line.
    public init(text: String, path: String) throws(ConfigError) {
        self.path = path
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(path: path, line: error.source.begin.line,
                              "not TOML: \(error.description) (column \(error.source.begin.column))")
        } catch {
            throw ConfigError(path: path, line: nil, "not TOML: \(error)")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var entries: [Entry] = []
        var errors: [ConfigError] = []
        for key in table.keys {
            let line = Self.line(of: key, in: lines)
            guard let node = table[key] else { continue }
            do {
                entries.append(Entry(key: key, value: try Self.value(node.tomlValue, key: key), line: line ?? 0))
            } catch let message {
                errors.append(ConfigError(path: path, line: line, message.text))
            }
        }
        if let first = errors.first { throw errors.count == 1 ? first : ConfigError(path: path, several: errors) }
        self.entries = entries.sorted { $0.line < $1.line }
    }

    struct Refusal: Error { let text: String }

    private static func value(_ node: TOMLValue, key: String) throws(Refusal) -> Value {
        switch node.type {
        case .string: return .string(node.string ?? "")
        case .int: return .integer(node.int ?? 0)
        case .double: return .float(node.double ?? 0)
        case .bool: return .bool(node.bool ?? false)
        case .array:
            var items: [Value] = []
            for item in node.array ?? TOMLArray() {
                let value = try value(item.tomlValue, key: key)
                if case .list = value { throw Refusal(text: "\(key): a list inside a list is not an option's value") }
                items.append(value)
            }
            return .list(items)
        case .table:
            throw Refusal(text: "[\(key)]: tables are not used: every option is a top-level key (write them before any [table])")
        case .date, .time, .dateTime:
            throw Refusal(text: "\(key): a date or time is not an option's value (quote it to pass it as text)")
        }
    }

    /// The first line where `key` is assigned at the top level (TOML forbids a second).
    static func line(of key: String, in lines: [String]) -> Int? {
        let spellings = [key, "\"\(key)\"", "'\(key)'"]
        for (index, raw) in lines.enumerated() {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            for spelling in spellings where line.hasPrefix(spelling) {
                let rest = line.dropFirst(spelling.count).drop { $0 == " " || $0 == "\t" }
                if rest.first == "=" { return index + 1 }
                if rest.first == "]", line.first == "[" { return index + 1 }
            }
            if line.hasPrefix("[\(key)]") { return index + 1 }
        }
        return nil
    }
}

/// What is wrong with a configuration: in which file (or variable), on which line, what.
public struct ConfigError: Error, CustomStringConvertible, Equatable, Sendable {
    public let path: String
    public let line: Int?
    public let message: String
    /// More than one, for `tutti config check`.
    public let all: [ConfigError]

    public init(path: String, line: Int?, _ message: String) {
        self.path = path
        self.line = line
        self.message = message
        all = []
    }

    init(path: String, several: [ConfigError]) {
        self.path = path
        line = several.first?.line
        message = several.map(\.description).joined(separator: "\n")
        all = several
    }

    public var description: String {
        if !all.isEmpty { return message }
        return line.map { "\(path) line \($0): \(message)" } ?? "\(path): \(message)"
    }
}
