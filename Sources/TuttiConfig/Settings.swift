import ArgumentParser
import TuttiNet

/// A command line completed from the role's configuration file and `TUTTI_*` variables:
/// the command line over the environment over the file, option by option. A file's list
/// (`unicast = [...]`) is replaced, not extended, by the same option on the command line.
///
/// The file is `--config PATH`, else `$TUTTI_CONFIG`, else the first of
/// `$XDG_CONFIG_HOME/tutti/ROLE.toml` (`~/.config/tutti/ROLE.toml`) and
/// `/etc/tutti/ROLE.toml` that exists; the role is the subcommand (`follower`,
/// `coordinator`, `lyrics`, `ctl`, ...).
public struct Settings: Sendable {
    public enum Origin: Equatable, Sendable, CustomStringConvertible {
        case commandLine
        case environment(String)
        case file(String, line: Int)

        public var description: String {
            switch self {
            case .commandLine: "the command line"
            case let .environment(name): "$\(name)"
            case let .file(path, line): "\(path) line \(line)"
            }
        }
    }

    /// The arguments to parse (without the program's name).
    public let arguments: [String]
    /// Where each option's value came from.
    public let origins: [String: Origin]
    /// The configuration file read, if one was.
    public let file: String?

    /// Completes `arguments` for `root` (`tutti`, or `tutti-follower` with `role: "follower"`).
    /// A root that is its role may bring its options' table made beforehand (`table`), else
    /// it is read from ArgumentParser's help dump.
    public static func resolve(root: any ParsableCommand.Type, role fixedRole: String? = nil, table precomputed: OptionTable? = nil,
                               arguments: [String], environment: (String) -> String? = System.environment,
                               read: (String) -> [UInt8]? = { Files.read($0) }) throws(ConfigError) -> Settings {
        // A role's own options only (`tutti follower`: the follower's), unless the root is the role.
        let first = arguments.first { !$0.hasPrefix("-") }
        let table = fixedRole == nil ? first.flatMap { OptionTable.of(root, subcommand: $0) } ?? OptionTable.of(root)
            : precomputed ?? OptionTable.of(root)
        var path: [String] = []
        var node = table
        for token in arguments {
            guard let next = node.subcommands[token] else { break }
            path.append(token)
            node = next
        }
        guard let role = fixedRole ?? path.first, role != "config", node.subcommands.isEmpty || !path.isEmpty else {
            return Settings(arguments: arguments, origins: [:], file: nil)
        }
        let leaf = node
        let given = Self.scan(Array(arguments.dropFirst(path.count)), leaf)
        var origins: [String: Origin] = [:]
        for key in given.keys { origins[key] = .commandLine }

        // The environment, for what the command line leaves unset.
        var fromEnvironment: [String] = []
        for option in leaf.options where origins[option.key] == nil {
            guard let text = environment(option.environmentName) else { continue }
            let tokens = try Self.tokens(option, environment: text)
            if tokens.isEmpty { continue }
            fromEnvironment += tokens
            origins[option.key] = .environment(option.environmentName)
        }

        // The file, for what both leave unset.
        var fromFile: [String] = []
        let filePath = try Self.filePath(role: role, given: given.config ?? environment("TUTTI_CONFIG").flatMap { $0.isEmpty ? nil : $0 },
                                         explicit: given.config != nil || environment("TUTTI_CONFIG") != nil,
                                         environment: environment, read: read)
        if let filePath {
            guard let bytes = read(filePath) else { throw ConfigError(path: filePath, line: nil, "cannot be read") }
            let file = try ConfigFile(text: String(decoding: bytes, as: UTF8.self), path: filePath)
            // A file for a command with subcommands (ctl) may hold any of its leaves' options;
            // each leaf takes its own.
            let roleTable = fixedRole == nil ? table.descend([role]) ?? leaf : table
            for entry in file.entries {
                guard let option = leaf.option(entry.key) else {
                    if roleTable.everyOption.contains(where: { $0.key == entry.key }) { continue }
                    throw ConfigError(path: filePath, line: entry.line, Self.unknown(entry.key, in: roleTable, role: role))
                }
                guard origins[entry.key] == nil else { continue }
                fromFile += try Self.tokens(option, entry: entry, path: filePath)
                origins[entry.key] = .file(filePath, line: entry.line)
            }
        }
        return Settings(arguments: path + fromFile + fromEnvironment + arguments.dropFirst(path.count), origins: origins, file: filePath)
    }

    /// Where the file is: the one named (which must exist), else the first that exists.
    static func filePath(role: String, given: String?, explicit: Bool, environment: (String) -> String?,
                         read: (String) -> [UInt8]?) throws(ConfigError) -> String? {
        if let given {
            guard given != "none" else { return nil }
            guard read(given) != nil else { throw ConfigError(path: given, line: nil, "no such file (named by --config or $TUTTI_CONFIG)") }
            return given
        }
        if explicit { return nil }
        return searchPath(role: role, environment: environment).first { read($0) != nil }
    }

    /// Where a role's file is looked for, in order.
    public static func searchPath(role: String, environment: (String) -> String? = System.environment) -> [String] {
        var places: [String] = []
        if let xdg = environment("XDG_CONFIG_HOME"), xdg.hasPrefix("/") {
            places.append("\(xdg)/tutti/\(role).toml")
        } else if let home = environment("HOME"), !home.isEmpty {
            places.append("\(home)/.config/tutti/\(role).toml")
        }
        places.append("/etc/tutti/\(role).toml")
        return places
    }

    /// What the command line sets: each option's key, and `--config`'s value.
    static func scan(_ tokens: [String], _ table: OptionTable) -> (keys: Set<String>, config: String?) {
        var keys = Set<String>()
        var config: String?
        var index = 0
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if token == "--" {
                if index < tokens.count, let positional = table.options.first(where: { $0.kind == .positional }) { keys.insert(positional.key) }
                break
            }
            if token.hasPrefix("--") {
                let body = token.dropFirst(2)
                let name = String(body.prefix { $0 != "=" })
                let inline = body.contains(where: { $0 == "=" })
                if name == "config" {
                    config = inline ? String(body.drop { $0 != "=" }.dropFirst()) : (index < tokens.count ? tokens[index] : nil)
                    if !inline { index += 1 }
                    continue
                }
                keys.insert(name)
                if !inline, table.option(name)?.kind == .option { index += 1 }
            } else if token.hasPrefix("-"), token.count > 1 {
                if let option = table.options.first(where: { $0.shortNames.contains(String(token.dropFirst())) }) {
                    keys.insert(option.key)
                    if option.kind == .option { index += 1 }
                }
            } else if let positional = table.options.first(where: { $0.kind == .positional }) {
                keys.insert(positional.key)
            }
        }
        return (keys, config)
    }

    /// A file's entry as command-line tokens.
    static func tokens(_ option: OptionTable.Option, entry: ConfigFile.Entry, path: String) throws(ConfigError) -> [String] {
        let fail = { (message: String) in ConfigError(path: path, line: entry.line, "\(entry.key) = \(entry.value.toml): \(message)") }
        switch (option.kind, entry.value) {
        case let (.flag, .bool(on)):
            return on ? ["--\(option.key)"] : []
        case (.flag, _):
            throw fail("a switch: write \(option.key) = true or false")
        case (_, .bool):
            throw fail("takes a value, not true or false\(option.kind == .option ? "" : " (a list of text)")")
        case let (_, .array(items)):
            guard option.repeating else { throw fail("takes one value, not a list") }
            var tokens: [String] = []
            for item in items {
                guard let text = item.argument else { throw fail("a list of text or numbers") }
                tokens += option.kind == .positional ? [text] : ["--\(option.key)", text]
            }
            return tokens
        case let (_, value):
            guard let text = value.argument else { throw fail("not a value") }
            return option.kind == .positional ? [text] : ["--\(option.key)", text]
        }
    }

    /// A variable's value as command-line tokens: a switch takes 1/0, true/false, yes/no,
    /// on/off; a list, values separated by commas.
    static func tokens(_ option: OptionTable.Option, environment text: String) throws(ConfigError) -> [String] {
        switch option.kind {
        case .flag:
            switch text.lowercased() {
            case "1", "true", "yes", "on": return ["--\(option.key)"]
            case "0", "false", "no", "off", "": return []
            default: throw ConfigError(path: "$\(option.environmentName)", line: nil, "'\(text)' is not a yes or no (1, true, yes, on; 0, false, no, off)")
            }
        case .option, .positional:
            if text.isEmpty { return [] }
            let values = option.repeating ? text.split(separator: ",").map { String($0).trimmingSpaces } : [text]
            return values.filter { !$0.isEmpty }.flatMap { option.kind == .positional ? [$0] : ["--\(option.key)", $0] }
        }
    }

    static func unknown(_ key: String, in table: OptionTable, role: String) -> String {
        let known = table.everyOption.map(\.key)
        let near = known.min { Self.distance($0, key) < Self.distance($1, key) }
        let hint = near.flatMap { Self.distance($0, key) <= 3 ? " (did you mean \($0)?)" : nil } ?? ""
        return "\(key): not an option of tutti \(role)\(hint); `tutti config example \(role)` lists them"
    }

    /// Levenshtein distance, for a hint at a misspelt key (or command: `tutti ctl`).
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let old = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = old
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }

    /// Where the option an error message of ArgumentParser names got its value, when not
    /// from the command line: "in /etc/tutti/follower.toml line 4 (latency-ms)".
    public func explain(_ message: String) -> String? {
        for key in Self.mentioned(in: message) {
            if let origin = origins[key], origin != .commandLine { return "\(key) comes from \(origin)" }
        }
        return nil
    }

    /// The option names a message mentions (`--latency-ms`, `<inputs>`).
    static func mentioned(in message: String) -> [String] {
        var keys: [String] = []
        var rest = Substring(message)
        while let start = rest.firstIndex(where: { $0 == "-" || $0 == "<" }) {
            var body = rest[start...]
            if body.hasPrefix("--") { body = body.dropFirst(2) } else if body.hasPrefix("<") { body = body.dropFirst() } else {
                rest = rest[rest.index(after: start)...]
                continue
            }
            let name = body.prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            if !name.isEmpty { keys.append(String(name)) }
            rest = body.dropFirst(max(name.count, 0))
            if rest.isEmpty { break }
        }
        return keys
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
