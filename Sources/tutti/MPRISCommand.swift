import ArgumentParser
import Foundation
import TuttiAPI
import TuttiMPRIS
import TuttiNet

/// `tutti mpris`: the house as a media player on this desktop's session bus.
struct MPRISCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mpris",
        abstract: "Show and control the house from this desktop: its media keys, now-playing widget and playerctl (MPRIS on the session bus).",
        discussion: "Owns org.mpris.MediaPlayer2.tutti on the session bus for as long as it runs (start it with the desktop session: deploy/systemd/tutti-mpris.service). Play, pause, next, previous, seek, volume, loop and shuffle control every room; the metadata shows the track, its artwork and the lyric line being sung.")

    @OptionGroup var options: CtlOptions

    func run() throws {
        let client = try options.client()
        let bus: DBusConnection
        do { bus = try DBusConnection(owning: MPRISPlayer.busName) } catch { throw CtlFailure(description: "\(error)") }
        let log = Log("mpris")
        let clock = SystemClock()
        let stopFlag = StopFlag()
        TerminationSignals.onTermination { stopFlag.set() }
        log.info("\(MPRISPlayer.busName) on the session bus, for the house at \(client.url)")
        let bridge = MPRISBridge(remote: CtlRemote(client: client), clock: { clock.nanosecondsNow() }, log: { log.info($0) })
        bridge.run(bus: bus, stop: { stopFlag.isSet })
    }
}

/// The control API, as the bridge uses it.
struct CtlRemote: MPRISRemote, @unchecked Sendable {
    let client: CtlClient

    var baseURL: String { client.url }

    func perform(_ command: MPRISPlayer.Command) throws -> NowPlaying? {
        switch command {
        case let .transport(name):
            return try client.send("POST", "/transport/\(name)", as: NowPlaying.self)
        case let .skip(seconds):
            return try client.send("POST", "/transport/skip", body: ["seconds": seconds], as: NowPlaying.self)
        case let .seek(position):
            return try client.send("POST", "/transport/seek", body: ["position": position], as: NowPlaying.self)
        case let .volume(volume):
            try client.send("PUT", "/volume", body: ["volume": volume])
            return try nowPlaying()
        case let .loop(mode):
            try client.send("PUT", "/loop", body: ["mode": mode.rawValue])
            return try nowPlaying()
        case let .open(uri):
            try client.send("POST", "/queue", body: QueueAdd(paths: [uri], placement: "next"))
            return try client.send("POST", "/transport/next", as: NowPlaying.self)
        }
    }

    struct QueueAdd: Encodable {
        let paths: [String]
        let placement: String
    }

    func nowPlaying() throws -> NowPlaying { try client.get("/now-playing", as: NowPlaying.self) }

    func follow(_ handle: (Event) -> Void) throws {
        try client.follow { event, _ in handle(event) }
    }
}
