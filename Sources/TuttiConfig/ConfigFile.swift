import TuttiCore

/// A role's configuration file: TOML, one top-level key per option of the role's command
/// line, named as the option without its dashes (`latency-ms = 150`, `unicast = true`,
/// `inputs = ["/srv/music"]`). Read by `TOMLReader` (TuttiCore).
public struct ConfigFile: Sendable {
    public typealias Entry = TOMLReader.Entry

    public let path: String
    public let entries: [Entry]

    /// Parses `text` (the contents of `path`); a syntax error names its line and column,
    /// a value TOML has but an option cannot take (a table, a date) names its key's line.
    public init(text: String, path: String) throws(ConfigError) {
        self.path = path
        do {
            entries = try TOMLReader.read(text)
        } catch {
            throw ConfigError(path: path, line: error.line,
                              error.unsupported ? error.message : "not TOML: \(error.message) (column \(error.column))")
        }
    }
}

extension TOMLReader.Value {
    /// As the command line would spell it.
    var argument: String? {
        switch self {
        case let .string(s): s
        case let .integer(i): String(i)
        case let .float(d): d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : "\(d)"
        case .bool, .array: nil
        }
    }

    /// As TOML spells it, for messages.
    var toml: String {
        switch self {
        case let .string(s): "\"\(s)\""
        case let .integer(i): String(i)
        case let .float(d): "\(d)"
        case let .bool(b): b ? "true" : "false"
        case let .array(items): "[" + items.map(\.toml).joined(separator: ", ") + "]"
        }
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
