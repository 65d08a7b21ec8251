import ArgumentParser
import Foundation
import TuttiConfig
import TuttiFollower

@main
struct Tutti: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tutti",
        abstract: "Synchronized multi-room music for a whole house of Linux machines.",
        discussion: "Every option of a role can also live in its configuration file (~/.config/tutti/ROLE.toml or /etc/tutti/ROLE.toml; see `tutti config`) or a TUTTI_* variable (--latency-ms: TUTTI_LATENCY_MS); the command line wins, then the environment, then the file.",
        subcommands: [CoordinatorCommand.self, FollowerCommand.self, CtlCommand.self, LyricsCommand.self, PairCommand.self, DemoCommand.self,
                      MPRISCommand.self, ConfigCommand.self, DecodeCommand.self,
                      ClockReplayCommand.self])

    /// The command line completed from the role's file and the environment, then run.
    static func main() async {
        let (arguments, complaint) = CtlCommand.arrange(Array(CommandLine.arguments.dropFirst()))
        if let complaint {
            FileHandle.standardError.write(Data("Error: \(complaint)\n".utf8))
            Foundation.exit(64)  // as the parser's usage errors
        }
        await main(Configured.arguments(root: Tutti.self, arguments))
    }
}
