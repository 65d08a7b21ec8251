import ArgumentParser
import Foundation
import TuttiConfig

/// `tutti config`: the roles' configuration files.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Configuration files: check one, print an example, show where a role's settings come from.",
        subcommands: [Check.self, Example.self, Show.self, Table.self])

    static let roles = ["coordinator", "follower", "lyrics", "ctl", "mpris"]

    static func role(_ given: String?, file: String) throws -> String {
        if let given {
            guard OptionTable.of(Tutti.self).descend([given]) != nil, given != "config" else {
                throw ValidationError("no role '\(given)': use one of \(roles.joined(separator: ", "))")
            }
            return given
        }
        let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        guard roles.contains(name) else {
            throw ValidationError("cannot tell the role from the file's name '\(name)': add --role (\(roles.joined(separator: ", ")))")
        }
        return name
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a configuration file: every error, with its line. Exits 1 if there is one.")
        @Argument(help: "The file, e.g. /etc/tutti/coordinator.toml.")
        var file: String
        @Option(help: "The role it is for (default: from the file's name: coordinator, follower, lyrics, ctl, mpris).")
        var role: String?

        func run() throws {
            let role = try ConfigCommand.role(role, file: file)
            let result = ConfigCheck.check(path: file, role: role, root: Tutti.self)
            if result.errors.isEmpty {
                print("\(file): \(result.settings) setting\(result.settings == 1 ? "" : "s") for tutti \(role), all valid")
                return
            }
            for error in result.errors { print(error) }
            throw ExitCode(1)
        }
    }

    struct Example: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a configuration file for a role with every option, explained and commented out.")
        @Argument(help: "coordinator, follower, lyrics, ctl or mpris.")
        var role: String

        func run() throws {
            guard let text = ConfigCheck.example(role: try ConfigCommand.role(role, file: ""), root: Tutti.self) else {
                throw ValidationError("no role '\(role)'")
            }
            print(text, terminator: "")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the settings a command line would run with, and where each comes from.",
            discussion: "For example: tutti config show follower --name Kitchen")
        @Argument(parsing: .captureForPassthrough, help: "A role and its command line.")
        var commandLine: [String] = []

        func run() throws {
            let settings = try Settings.resolve(root: Tutti.self, arguments: commandLine)
            print("file: \(settings.file ?? "none (looked for \(Settings.searchPath(role: commandLine.first ?? "ROLE").joined(separator: ", ")))")")
            for key in settings.origins.keys.sorted() { print("\(key): from \(settings.origins[key]!)") }
            print("runs as: tutti " + settings.arguments.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " "))
        }
    }

    /// For the lean follower: its options' table as Swift, so that it reads its settings
    /// without making ArgumentParser's help dump (deploy/make-config-examples.sh).
    struct Table: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the follower's options as a Swift table (for building tutti-follower).", shouldDisplay: false)
        @Argument(help: "follower (the only role built alone).")
        var role: String

        func run() throws {
            guard role == "follower", let table = OptionTable.of(Tutti.self).descend([role]) else {
                throw ValidationError("only the follower is built alone: tutti config table follower")
            }
            print(table.swiftSource(extending: "FollowerCommand", generatedBy: "tutti config table follower"), terminator: "")
        }
    }
}
