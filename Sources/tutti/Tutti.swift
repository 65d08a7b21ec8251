import ArgumentParser
import Foundation

@main
struct Tutti: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tutti",
        abstract: "Synchronized multi-room music for a whole house of Linux machines.",
        subcommands: [CoordinatorCommand.self, FollowerCommand.self, CtlCommand.self, LyricsCommand.self, PairCommand.self, DemoCommand.self,
                      DecodeCommand.self,
                      ClockReplayCommand.self])
}

/// Stops `body`'s node on SIGINT and SIGTERM.
func onTerminationSignal(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { sig in
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
        return source
    }
}
