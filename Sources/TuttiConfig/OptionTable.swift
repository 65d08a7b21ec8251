import ArgumentParser
import FoundationEssentials

/// A command's options as ArgumentParser knows them (from its help dump): what each key
/// of a configuration file or `TUTTI_*` variable stands for, and how it is spelled on
/// the command line.
public struct OptionTable: Sendable, Equatable {
    public struct Option: Sendable, Equatable {
        public enum Kind: String, Sendable { case option, flag, positional }
        /// The long name (`latency-ms`), or a positional argument's value name (`inputs`).
        public let key: String
        public let kind: Kind
        public let repeating: Bool
        public let abstract: String
        public let defaultValue: String?
        /// One-letter names (`h`), for reading the command line.
        let shortNames: [String]

        public init(key: String, kind: Kind, repeating: Bool = false, abstract: String, defaultValue: String? = nil, shortNames: [String] = []) {
            self.key = key
            self.kind = kind
            self.repeating = repeating
            self.abstract = abstract
            self.defaultValue = defaultValue
            self.shortNames = shortNames
        }

        /// The variable that sets it: `TUTTI_LATENCY_MS`.
        public var environmentName: String {
            "TUTTI_" + key.uppercased().map { $0 == "-" ? "_" : $0 }.map(String.init).joined()
        }
    }

    public let options: [Option]
    /// The command's subcommands, by name (`tutti ctl` has them; a leaf has none).
    public let subcommands: [String: OptionTable]

    public func option(_ key: String) -> Option? { options.first { $0.key == key } }

    /// The leaves' options together, for a command with subcommands (what a `ctl.toml`
    /// may hold); the command's own for a leaf.
    public var everyOption: [Option] {
        guard !subcommands.isEmpty else { return options }
        var seen = Set<String>()
        return (options + subcommands.keys.sorted().flatMap { subcommands[$0]!.everyOption }).filter { seen.insert($0.key).inserted }
    }

    /// The table of `command`'s subcommand `name` alone, when it has one: a role's own help
    /// dump (the whole tree's takes a debug build a quarter of a second).
    public static func of(_ command: any ParsableCommand.Type, subcommand name: String) -> OptionTable? {
        guard let sub = command.configuration.subcommands.first(where: { $0._commandName == name }) else { return nil }
        return OptionTable(options: [], subcommands: [name: of(sub)])
    }

    /// The table of `command` (from ArgumentParser's JSON help dump).
    public static func of(_ command: any ParsableCommand.Type) -> OptionTable {
        let json = command._dumpHelp()
        guard let dump = try? JSONDecoder().decode(Dump.self, from: Data(json.utf8)) else {
            return OptionTable(options: [], subcommands: [:])
        }
        return OptionTable(dump.command)
    }

    /// A leaf's plain command line as (key, value) pairs in order (a flag's value empty):
    /// `--key value`, `--key=value` and `--flag` only, with `--config` (the settings' own)
    /// left out. Nil for anything else: a short or unknown name, a positional argument, a
    /// flag given a value, a value that starts with a dash, a repeating option. A program
    /// that reads its options without ArgumentParser takes these, and hands anything else to
    /// ArgumentParser, which reads and explains it.
    public func plainValues(_ arguments: [String]) -> [(key: String, value: String)]? {
        var pairs: [(key: String, value: String)] = []
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            guard token.hasPrefix("--"), token.count > 2 else { return nil }
            let body = token.dropFirst(2)
            let equals = body.firstIndex(of: "=")
            let key = String(equals.map { body[..<$0] } ?? body)
            var value = equals.map { String(body[body.index(after: $0)...]) }
            if key == "config" {
                if value == nil {
                    guard index < arguments.count, !arguments[index].hasPrefix("-") else { return nil }
                    index += 1
                }
                continue
            }
            guard let option = option(key), !option.repeating else { return nil }
            switch option.kind {
            case .flag:
                guard value == nil else { return nil }
                pairs.append((key, ""))
            case .option:
                if value == nil {
                    guard index < arguments.count, !arguments[index].hasPrefix("-") else { return nil }
                    value = arguments[index]
                    index += 1
                }
                pairs.append((key, value!))
            case .positional:
                return nil
            }
        }
        return pairs
    }

    /// The table `path` leads to (`["ctl", "queue", "add"]`), or nil.
    public func descend(_ path: [String]) -> OptionTable? {
        var table = self
        for name in path {
            guard let next = table.subcommands[name] else { return nil }
            table = next
        }
        return table
    }

    public init(options: [Option], subcommands: [String: OptionTable] = [:]) {
        self.options = options
        self.subcommands = subcommands
    }

    init(_ command: Dump.Command) {
        options = (command.arguments ?? []).compactMap { argument in
            // Help, version and the file's own path are not settings.
            guard let kind = Option.Kind(rawValue: argument.kind) else { return nil }
            let long = argument.names?.first { $0.kind == "long" || $0.kind == "longWithSingleDash" }?.name
            let key = kind == .positional ? argument.valueName : long
            guard let key, !["help", "version", "config", "experimental-dump-help"].contains(key) else { return nil }
            return Option(key: key, kind: kind, repeating: argument.isRepeating ?? false, abstract: argument.abstract ?? "",
                          defaultValue: argument.defaultValue,
                          shortNames: argument.names?.filter { $0.kind == "short" }.map(\.name) ?? [])
        }
        var subcommands: [String: OptionTable] = [:]
        for sub in command.subcommands ?? [] where sub.commandName != "help" {
            subcommands[sub.commandName] = OptionTable(sub)
        }
        self.subcommands = subcommands
    }

    /// The table as Swift source: `extension TYPE { public static let optionTable = ... }`, for
    /// a program that should not make ArgumentParser's help dump at every start (the dump
    /// kept about 1 MB of the lean follower's code resident). A leaf's table only.
    public func swiftSource(extending type: String, generatedBy command: String) -> String {
        func literal(_ text: String) -> String {
            "\"" + String(text.flatMap { $0 == "\n" ? ["\\", "n"] : $0 == "\\" || $0 == "\"" ? ["\\", $0] : [$0] }) + "\""
        }
        var text = """
            // Generated by `\(command)`: the options ArgumentParser's help dump gives, so that
            // the program reads its configuration without making the dump. A unit test checks
            // it is current (TuttiConfigTests); deploy/make-config-examples.sh writes it again.
            import TuttiConfig

            extension \(type) {
                public static let optionTable = OptionTable(options: [

            """
        for option in options {
            var fields = ["key: \(literal(option.key))", "kind: .\(option.kind.rawValue)"]
            if option.repeating { fields.append("repeating: true") }
            fields.append("abstract: \(literal(option.abstract))")
            if let value = option.defaultValue { fields.append("defaultValue: \(literal(value))") }
            if !option.shortNames.isEmpty { fields.append("shortNames: [\(option.shortNames.map(literal).joined(separator: ", "))]") }
            text += "        .init(\(fields.joined(separator: ", "))),\n"
        }
        return text + "    ])\n}\n"
    }

    /// ArgumentParser's help dump (ToolInfoV0), the fields read here.
    struct Dump: Decodable {
        struct Name: Decodable { let kind: String, name: String }
        struct Argument: Decodable {
            let kind: String
            let names: [Name]?
            let valueName: String?
            let isRepeating: Bool?
            let abstract: String?
            let defaultValue: String?
        }
        final class Command: Decodable {
            let commandName: String
            let arguments: [Argument]?
            let subcommands: [Command]?
        }
        let command: Command
    }
}
