import ArgumentParser
import Foundation
import TuttiConfig
import TuttiNet
import TuttiNode

struct LyricsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lyrics",
        abstract: "A full-screen lyric screen in this terminal, in step with the rooms.",
        discussion: "The current line in the middle, its words filling in as they are sung; the lines around it dimmed; a progress bar. Follows pauses, seeks, track changes and resizes; q, Esc or Ctrl-C quits. Piped, it prints each line as it starts.")

    @Option(help: "The coordinator's clock service, HOST[:PORT] (the screen locks its clock to it; default: the coordinator announced on the network, else 127.0.0.1).")
    var coordinator: String?

    @Option(help: "The coordinator's control API, http:// or https:// (default: http://HOST:8485 on the coordinator's host).")
    var server: String?

    @OptionGroup var tls: TLSOptions

    @Option(help: "The room this screen is in: its name and state show on top.")
    var room: String?

    @Option(help: "How late this screen shows what it draws (a TV's picture processing), in ms: lines are drawn that much sooner.")
    var displayDelayMs: Double = 0

    @Option(help: "Record each line change (coordinator time, line) to this file.")
    var log: String?

    @Flag(help: "Print each line as it starts instead of drawing the full screen.")
    var lines = false

    @OptionGroup var configFile: ConfigFileOption

    @Option(help: "This machine's copy of the house key (default: house.key in the state folder: $TUTTI_STATE_DIR, else ~/.local/state/tutti, or /var/lib/tutti for root). A copy of the coordinator's house.key.")
    var key: String?

    func validate() throws {
        if !(0...2000).contains(displayDelayMs) { throw ValidationError("--display-delay-ms must be between 0 and 2000") }
    }

    func run() throws {
        var config = LyricScreen.Configuration()
        let folder = key.map { ($0 as NSString).deletingLastPathComponent } ?? StateStore.defaultDirectory()
        let monotonic = SystemClock()
        var clock = coordinator ?? "127.0.0.1", found: String?
        if coordinator == nil, let announced = try Discovered.coordinator(houseKeyPath: key, stateDirectory: folder, option: "--coordinator HOST[:PORT]",
                                                                          clock: monotonic) {
            clock = announced.clockAddress
            found = announced.controlURL
            Log("lyrics").info("found the coordinator on the network: \(announced)")
        }
        config.coordinator = try SocketAddress(parsing: clock, defaultPort: 5005)
        let host = String(clock.split(separator: ":").first ?? "127.0.0.1")
        config.server = try tls.client(url: server ?? found ?? "http://\(host):8485", stateDirectory: folder)
        config.room = room
        config.displayDelay = Int64(displayDelayMs * 1e6)
        config.logPath = log
        config.lineMode = lines
        if let key { config.houseKeyPath = key }
        let screen = try LyricScreen(configuration: config, clock: monotonic)
        TerminationSignals.onTermination { screen.stop() }
        try screen.run()
    }
}
