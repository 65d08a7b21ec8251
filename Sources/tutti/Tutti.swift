import ArgumentParser
import Foundation
import TuttiFollower

@main
struct Tutti: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tutti",
        abstract: "Synchronized multi-room music for a whole house of Linux machines.",
        subcommands: [CoordinatorCommand.self, FollowerCommand.self, CtlCommand.self, LyricsCommand.self, PairCommand.self, DemoCommand.self,
                      DecodeCommand.self,
                      ClockReplayCommand.self])
}
