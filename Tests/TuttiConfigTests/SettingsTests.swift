import ArgumentParser
import Testing
import TuttiFollower
@testable import TuttiConfig

/// A command line like tutti's: a role with options, switches, a list and positionals,
/// and a role with subcommands (as `ctl`).
struct House: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "house", subcommands: [Play.self, Remote.self, FollowerCommand.self])

    struct Play: ParsableCommand {
        @Argument var inputs: [String] = []
        @Option var latencyMs: Int = 150
        @Option(name: .customLong("unicast")) var unicast: [String] = []
        @Flag var loop = false
        @Option var name: String?
        @OptionGroup var configFile: ConfigFileOption

        func validate() throws {
            if !(20...5000).contains(latencyMs) { throw ValidationError("--latency-ms must be between 20 and 5000") }
        }
    }

    struct Remote: ParsableCommand {
        static let configuration = CommandConfiguration(subcommands: [Status.self, Seek.self])
        struct Common: ParsableArguments {
            @Option var server: String?
            @Option var token: String?
        }
        struct Status: ParsableCommand {
            @OptionGroup var common: Common
            @Flag var follow = false
        }
        struct Seek: ParsableCommand {
            @OptionGroup var common: Common
            @Argument var position: String
        }
    }
}

@Suite struct SettingsTests {
    /// In-memory files and variables.
    struct World {
        var files: [String: String] = [:]
        var environment: [String: String] = ["HOME": "/home/ann"]

        func resolve(_ arguments: [String]) throws(ConfigError) -> Settings {
            try Settings.resolve(root: House.self, arguments: arguments, environment: { environment[$0] },
                                 read: { files[$0].map { Array($0.utf8) } })
        }
    }

    @Test func theCommandLineWinsOverTheEnvironmentWhichWinsOverTheFile() throws {
        var world = World()
        world.files["/home/ann/.config/tutti/play.toml"] = """
            # the house
            inputs = ["/srv/music", "/srv/more"]
            latency-ms = 300
            loop = true
            name = "Kitchen"
            """
        world.environment["TUTTI_LATENCY_MS"] = "250"
        world.environment["TUTTI_NAME"] = "Hall"
        let settings = try world.resolve(["play", "--name", "Study"])
        #expect(settings.file == "/home/ann/.config/tutti/play.toml")
        #expect(settings.origins["latency-ms"] == .environment("TUTTI_LATENCY_MS"))
        #expect(settings.origins["name"] == .commandLine)
        #expect(settings.origins["loop"] == .file("/home/ann/.config/tutti/play.toml", line: 4))
        let play = try House.parseAsRoot(settings.arguments) as! House.Play
        #expect(play.inputs == ["/srv/music", "/srv/more"])
        #expect(play.latencyMs == 250)
        #expect(play.loop)
        #expect(play.name == "Study")
    }

    @Test func aListOnTheCommandLineReplacesTheFilesList() throws {
        var world = World()
        world.files["/etc/tutti/play.toml"] = "inputs = [\"/srv/music\"]\nunicast = [\"a:1\", \"b:2\"]\n"
        let settings = try world.resolve(["play", "/tmp/one.mp3", "--unicast", "c:3"])
        let play = try House.parseAsRoot(settings.arguments) as! House.Play
        #expect(play.inputs == ["/tmp/one.mp3"])
        #expect(play.unicast == ["c:3"])
        // From the environment: values separated by commas.
        world.environment["TUTTI_UNICAST"] = "d:4, e:5"
        let fromEnvironment = try House.parseAsRoot(try world.resolve(["play"]).arguments) as! House.Play
        #expect(fromEnvironment.unicast == ["d:4", "e:5"])
        #expect(fromEnvironment.inputs == ["/srv/music"])
    }

    @Test func theFileIsTheOneNamedOrTheUsersOrTheSystems() throws {
        var world = World()
        world.files["/etc/tutti/play.toml"] = "latency-ms = 400\n"
        #expect(try world.resolve(["play"]).file == "/etc/tutti/play.toml")
        world.files["/home/ann/.config/tutti/play.toml"] = "latency-ms = 500\n"
        #expect(try world.resolve(["play"]).file == "/home/ann/.config/tutti/play.toml")
        world.environment["XDG_CONFIG_HOME"] = "/cfg"
        #expect(try world.resolve(["play"]).file == "/etc/tutti/play.toml")
        world.files["/x.toml"] = "latency-ms = 600\n"
        #expect(try world.resolve(["play", "--config", "/x.toml"]).file == "/x.toml")
        #expect(try world.resolve(["play", "--config=none"]).file == nil)
        world.environment["TUTTI_CONFIG"] = "/x.toml"
        #expect(try world.resolve(["play"]).file == "/x.toml")
        #expect(throws: ConfigError(path: "/missing.toml", line: nil, "no such file (named by --config or $TUTTI_CONFIG)")) {
            try world.resolve(["play", "--config", "/missing.toml"])
        }
        // Only a role's command line is completed: help and `config` are left alone.
        #expect(try world.resolve(["--help"]).arguments == ["--help"])
    }

    @Test func eachMistakeInAFileIsToldWithItsLine() {
        var world = World()
        func error(_ text: String) -> String {
            world.files["/etc/tutti/play.toml"] = text
            do {
                _ = try world.resolve(["play"])
                return "no error"
            } catch {
                return error.description
            }
        }
        #expect(error("latency-ms = 100\nloop = \"yes\"\n") == "/etc/tutti/play.toml line 2: loop = \"yes\": a switch: write loop = true or false")
        #expect(error("\n\nname = [\"a\"]\n") == "/etc/tutti/play.toml line 3: name = [\"a\"]: takes one value, not a list")
        #expect(error("latency = 100\n") == "/etc/tutti/play.toml line 1: latency: not an option of tutti play (did you mean latency-ms?); `tutti config example play` lists them")
        #expect(error("latency-ms = \n").hasPrefix("/etc/tutti/play.toml line 1: not TOML: "))
        #expect(error("name = 1979-05-27\n") == "/etc/tutti/play.toml line 1: name: a date or time is not an option's value (quote it to pass it as text)")
        #expect(error("loop = true\n[play]\nname = \"x\"\n") == "/etc/tutti/play.toml line 2: [play]: tables are not used: every option is a top-level key (write them before any [table])")
        #expect(error("latency-ms = 1\nlatency-ms = 2\n").contains("line 2"))
        world.files["/etc/tutti/play.toml"] = nil
        world.environment["TUTTI_LOOP"] = "perhaps"
        #expect(throws: ConfigError.self) { try world.resolve(["play"]) }
    }

    @Test func aRefusedValueSaysWhereItCameFrom() throws {
        var world = World()
        world.files["/etc/tutti/play.toml"] = "\nlatency-ms = 9000\n"
        let settings = try world.resolve(["play"])
        do {
            _ = try House.parseAsRoot(settings.arguments)
            Issue.record("parsed")
        } catch {
            #expect(settings.explain(House.message(for: error)) == "latency-ms comes from /etc/tutti/play.toml line 2")
        }
        #expect(settings.explain("The value 'x' is invalid for '--name <name>'") == nil)
    }

    @Test func aFileForARoleWithSubcommandsGivesEachItsOwnOptions() throws {
        var world = World()
        world.files["/etc/tutti/remote.toml"] = "server = \"http://hall:8485\"\nfollow = true\n"
        let seek = try world.resolve(["remote", "seek", "1:30"])
        #expect(seek.arguments == ["remote", "seek", "--server", "http://hall:8485", "1:30"])
        let status = try world.resolve(["remote", "status"])
        #expect(status.arguments == ["remote", "status", "--server", "http://hall:8485", "--follow"])
        world.files["/etc/tutti/remote.toml"] = "servers = \"x\"\n"
        #expect(throws: ConfigError.self) { try world.resolve(["remote", "status"]) }
    }

    @Test func checkFindsEveryErrorOfAFollowerFile() {
        let text = """
            coordinator = "hall.local"
            latency-ms = 9000
            buffer-ms = "x"
            colour = 3
            unicast = "yes"
            name = "Kitchen"
            """
        let result = ConfigCheck.check(path: "follower.toml", role: "follower", root: House.self, read: { _ in Array(text.utf8) })
        #expect(result.settings == 6)
        #expect(result.errors.map(\.line) == [2, 3, 4, 5])
        #expect(result.errors.first?.description == "follower.toml line 2: latency-ms = 9000: --latency-ms must be between 20 and 5000")
        let good = ConfigCheck.check(path: "f.toml", role: "follower", root: House.self, read: { _ in Array("name = \"Study\"\nunicast = true\n".utf8) })
        #expect(good.errors.isEmpty && good.settings == 2)
    }

    @Test func theExampleHoldsEveryOptionAndChecksClean() throws {
        let example = try #require(ConfigCheck.example(role: "follower", root: House.self))
        for option in OptionTable.of(House.self).descend(["follower"])!.options {
            #expect(example.contains("# \(option.key) = "), "\(option.key)")
        }
        // Uncommented, every default is valid (what is not set stays unset).
        let uncommented = example.split(separator: "\n").map { line in
            line.hasPrefix("# ") && line.contains(" = ") && !line.contains("= \"\"") ? String(line.dropFirst(2)) : String(line)
        }.joined(separator: "\n")
        let result = ConfigCheck.check(path: "f.toml", role: "follower", root: House.self, read: { _ in Array(uncommented.utf8) })
        #expect(result.errors.isEmpty, "\(result.errors)")
    }

    /// tutti-follower reads its settings with a table made beforehand, not the help dump.
    @Test func theFollowersOwnTableIsItsHelpDumps() throws {
        #expect(FollowerCommand.optionTable == OptionTable.of(FollowerCommand.self),
                "Sources/TuttiFollower/FollowerCommand+OptionTable.swift is stale: run deploy/make-config-examples.sh")
        // The same settings from either table.
        let environment = ["TUTTI_LATENCY_MS": "120", "TUTTI_VERBOSE": "yes"]
        let file = Array("name = \"Study\"\nunicast = true\noutput = \"null\"\n".utf8)
        let arguments = ["--output", "wav:/tmp/a.wav", "--port", "6000"]
        let fromDump = try Settings.resolve(root: FollowerCommand.self, role: "follower", arguments: arguments,
                                            environment: { environment[$0] }, read: { $0 == "/etc/tutti/follower.toml" ? file : nil })
        let fromTable = try Settings.resolve(root: FollowerCommand.self, role: "follower", table: FollowerCommand.optionTable, arguments: arguments,
                                             environment: { environment[$0] }, read: { $0 == "/etc/tutti/follower.toml" ? file : nil })
        #expect(fromTable.arguments == fromDump.arguments && fromTable.origins == fromDump.origins)
        #expect(fromTable.arguments == ["--name", "Study", "--unicast", "--latency-ms", "120", "--verbose", "--output", "wav:/tmp/a.wav", "--port", "6000"])
        // Its Swift source says what it holds.
        let source = FollowerCommand.optionTable.swiftSource(extending: "FollowerCommand", generatedBy: "tutti config table follower")
        #expect(source.contains(#".init(key: "unicast", kind: .flag, abstract: "#) && source.contains(#"defaultValue: "239.255.77.77:5004""#))
    }

    /// tutti-follower reads a plain command line itself (FollowerOptions), as ArgumentParser
    /// reads it for `tutti follower`; anything else it leaves to ArgumentParser.
    @Test func theLeanFollowerReadsItsCommandLineAsArgumentParserDoes() throws {
        let table = FollowerCommand.optionTable
        func both(_ arguments: [String]) throws -> (lean: FollowerOptions?, parsed: FollowerOptions) {
            (FollowerOptions(arguments: arguments, table: table), try FollowerCommand.parse(arguments).options)
        }
        // Every option of the table, each given a value of its type: none is left to ArgumentParser.
        let samples = ["coordinator": "10.0.0.2:5005", "name": "Kitchen", "port": "6001", "multicast": "239.1.2.3:5004",
                       "sink": "roomA", "output": "alsa:hw:1", "latency-ms": "400", "output-delay-ms": "12.5", "buffer-ms": "60",
                       "status-interval": "2.5", "key": "/etc/tutti/house.key", "metrics-listen": "0.0.0.0:9485",
                       "sendspin": "ws://10.0.0.3:8927/sendspin", "sendspin-codec": "opus"]
        var every: [String] = []
        for option in table.options {
            if option.kind == .flag {
                every.append("--\(option.key)")
            } else {
                let value = try #require(samples[option.key], "no sample value for --\(option.key): add one here, and read it in FollowerOptions")
                every += ["--\(option.key)", value]
            }
        }
        for arguments in [every, [], ["--coordinator=127.0.0.1:17015", "--unicast", "--output", "null", "--config", "none"],
                          ["--latency-ms", "200", "--latency-ms", "300", "--config=/tmp/f.toml"], ["--name", "Living room", "--verbose"]] {
            let (lean, parsed) = try both(arguments)
            #expect(lean == parsed, "\(arguments)")
        }
        #expect(FollowerOptions(arguments: every, table: table)?.plainRtp == true)
        // What it leaves to ArgumentParser: help, unknown names, short names, wrong types, a
        // flag given a value, a missing value, a value that looks like an option.
        for arguments in [["--help"], ["-h"], ["--bogus", "1"], ["--port", "70000"], ["--latency-ms", "soon"], ["--unicast=yes"],
                          ["--name"], ["--name", "--unicast"], ["Kitchen"], ["--output-delay-ms", "nan"], ["--"], ["--config", "--unicast"]] {
            #expect(FollowerOptions(arguments: arguments, table: table) == nil, "\(arguments)")
        }
        // Values the table reads but validation refuses are refused alike.
        let refused = try #require(FollowerOptions(arguments: ["--buffer-ms", "150"], table: table))
        #expect(throws: FollowerOptions.Invalid("--buffer-ms must be smaller than --latency-ms")) { try refused.validate() }
        #expect(throws: (any Error).self) { try FollowerCommand.parse(["--buffer-ms", "150"]) }
    }

    @Test func theMisspeltKeysNearestOptionIsHinted() {
        #expect(Settings.distance("latency", "latency-ms") == 3)
        #expect(Settings.distance("", "abc") == 3)
        #expect(Settings.distance("kitten", "sitting") == 3)
        #expect(Settings.mentioned(in: "The value 'x' is invalid for '--buffer-ms <buffer-ms>'") == ["buffer-ms", "buffer-ms"])
    }
}
