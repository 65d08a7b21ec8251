import ArgumentParser
import Foundation
import TuttiNet
import TuttiNode

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play the bundled song in a demo house: a coordinator and two followers on this machine.",
        discussion: """
        Plays through PulseAudio: the default sink when there is a sound card (both rooms on one \
        speaker: in sync, they sound as one), or two null sinks when there is none. Starts a \
        PulseAudio server of its own when none is running. Runs until Ctrl-C.
        """)

    @Option(help: "The song to play (default: the bundled demo song).")
    var song: String?

    @Option(help: "Stop after this many seconds (default: run until Ctrl-C).")
    var duration: Double?

    @Option(help: "Clock port for the demo coordinator.")
    var clockPort: UInt16 = 15005

    @Option(help: "Control API port for the demo coordinator (on 127.0.0.1).")
    var controlPort: Int = 8485

    func run() throws {
        let log = Log("demo")
        guard let song = song ?? DemoHouse.findBundledSong() else {
            throw ValidationError("cannot find the bundled song assets/demo/tutti-demo.mp3; pass --song PATH")
        }
        let house = DemoHouse(song: song, clockPort: clockPort, controlPort: controlPort, log: log)
        TerminationSignals.onTermination { house.stop() }
        try house.run(duration: duration)
    }
}
