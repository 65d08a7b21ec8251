import ArgumentParser
import TuttiNet

/// The programs' entry: their command lines completed from the environment and the
/// role's file (`Settings`), and an error in either told with where it came from.
public enum Configured {
    /// The arguments `root` should parse (without the program's name). A broken file ends
    /// the program here (exit 64, EX_USAGE) with its path, line and what is wrong; a value
    /// ArgumentParser refuses is told with where it came from before ArgumentParser's own
    /// message.
    /// `table`: the role's options made beforehand (a root that is its role), so that no help
    /// dump is made at start.
    public static func arguments(root: any ParsableCommand.Type, role: String? = nil, table: OptionTable? = nil,
                                 _ commandLine: [String] = Array(CommandLine.arguments.dropFirst())) -> [String] {
        checked(settings(root: root, role: role, table: table, commandLine), root: root)
    }

    /// The settings `root` should parse: the command line completed from the environment and
    /// the role's file, which, when broken, ends the program here (exit 64, EX_USAGE) with
    /// its path, line and what is wrong.
    public static func settings(root: any ParsableCommand.Type, role: String? = nil, table: OptionTable? = nil,
                                _ commandLine: [String] = Array(CommandLine.arguments.dropFirst())) -> Settings {
        do {
            return try Settings.resolve(root: root, role: role, table: table, arguments: commandLine)
        } catch {
            OutputFile.standardError.write("Error: \(error)\n")
            System.exit(64)
        }
    }

    /// `settings`' arguments, once ArgumentParser has read them: a value it refuses is told
    /// with where it came from before its own message (and the program ends).
    public static func checked(_ settings: Settings, root: any ParsableCommand.Type) -> [String] {
        do {
            _ = try root.parseAsRoot(settings.arguments)
        } catch {
            if root.exitCode(for: error) != .success, let origin = settings.explain(root.message(for: error)) {
                OutputFile.standardError.write("Note: \(origin)\n")
                root.exit(withError: error)
            }
        }
        return settings.arguments
    }
}

/// `tutti config check`: every problem of a role's file, each with its line.
public enum ConfigCheck {
    public struct Result: Sendable {
        public var settings = 0
        public var errors: [ConfigError] = []
    }

    /// Checks the file at `path` (read through `read`) for `role`, a subcommand of `root`.
    public static func check(path: String, role: String, root: any ParsableCommand.Type,
                             read: (String) -> [UInt8]? = { Files.read($0) }) -> Result {
        var result = Result()
        guard let bytes = read(path) else {
            result.errors = [ConfigError(path: path, line: nil, "cannot be read")]
            return result
        }
        let file: ConfigFile
        do {
            file = try ConfigFile(text: String(decoding: bytes, as: UTF8.self), path: path)
        } catch {
            result.errors = error.all.isEmpty ? [error] : error.all
            return result
        }
        let table = OptionTable.of(root)
        guard let roleTable = table.descend([role]) else {
            result.errors = [ConfigError(path: path, line: nil, "tutti has no role '\(role)'")]
            return result
        }
        var accepted: [(ConfigFile.Entry, [String])] = []
        for entry in file.entries {
            guard let option = roleTable.everyOption.first(where: { $0.key == entry.key }) else {
                result.errors.append(ConfigError(path: path, line: entry.line, Settings.unknown(entry.key, in: roleTable, role: role)))
                continue
            }
            do {
                accepted.append((entry, try Settings.tokens(option, entry: entry, path: path)))
            } catch {
                result.errors.append(error)
            }
        }
        // Values and their limits, as the command checks them: a refused entry is told at
        // its line and left out, and the rest checked again. (A command with subcommands,
        // `ctl`, has its values checked by the subcommand that takes them.)
        if roleTable.subcommands.isEmpty {
            while !accepted.isEmpty {
                do {
                    _ = try root.parseAsRoot([role] + accepted.flatMap(\.1))
                    break
                } catch {
                    let message = root.message(for: error)
                    guard root.exitCode(for: error) != .success, !message.hasPrefix("Missing expected argument") else { break }
                    let keys = Settings.mentioned(in: message)
                    guard let index = accepted.firstIndex(where: { keys.contains($0.0.key) }) else {
                        result.errors.append(ConfigError(path: path, line: nil, message))
                        break
                    }
                    let entry = accepted.remove(at: index).0
                    result.errors.append(ConfigError(path: path, line: entry.line, "\(entry.key) = \(entry.value.toml): \(message)"))
                }
            }
        }
        result.errors.sort { ($0.line ?? 0) < ($1.line ?? 0) }
        result.settings = file.entries.count
        return result
    }

    /// A file for `role` with every option, each explained, set to its default and left
    /// commented out: a starting point to edit.
    public static func example(role: String, root: any ParsableCommand.Type) -> String? {
        guard let table = OptionTable.of(root).descend([role]) else { return nil }
        var text = """
            # tutti \(role): every option of `tutti \(role)`, here or on the command line
            # (the command line wins, then TUTTI_* variables, then this file).
            # Looked for in $XDG_CONFIG_HOME/tutti/\(role).toml (~/.config/tutti/\(role).toml),
            # then /etc/tutti/\(role).toml; or name it with --config or $TUTTI_CONFIG.
            # Check it with: tutti config check FILE

            """
        let options = table.everyOption
        for option in options.filter({ $0.kind == .positional }) + options.filter({ $0.kind != .positional }) {
            text += "\n" + wrap(option.abstract, prefix: "# ")
            text += "# \(option.key) = \(exampleValue(option))  # or $\(option.environmentName)\n"
        }
        return text
    }

    static func exampleValue(_ option: OptionTable.Option) -> String {
        switch option.kind {
        case .flag: return "false"
        case .positional, .option:
            let value = option.defaultValue.map { Double($0) != nil ? $0 : "\"\($0)\"" }
            if option.repeating { return "[\(value ?? "")]" }
            return value ?? "\"\""
        }
    }

    static func wrap(_ text: String, prefix: String, width: Int = 92) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + word.count + 1 > width - prefix.count {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.map { prefix + $0 + "\n" }.joined()
    }
}

/// `--config FILE`, in each role's options (read before the command line is parsed, by
/// `Settings`; here so that help shows it and the parser takes it).
public struct ConfigFileOption: ParsableArguments {
    @Option(help: "The configuration file (TOML; default: $TUTTI_CONFIG, else ~/.config/tutti/ROLE.toml, else /etc/tutti/ROLE.toml; 'none' reads none). The command line wins over TUTTI_* variables, which win over the file.")
    public var config: String?

    public init() {}
}
