import ArgumentParser
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: "Play the bundled song in a demo house: a coordinator and two followers on this machine.")
    func run() throws {}
}
