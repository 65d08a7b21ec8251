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
        discussion: "One player per zone on the session bus, for as long as it runs (start it with the desktop session: deploy/systemd/tutti-mpris.service): org.mpris.MediaPlayer2.tutti for the default zone, org.mpris.MediaPlayer2.tutti.ID for another (its id, dashes as underscores); --zone NAME shows that zone's alone. Play, pause, next, previous, seek, volume, loop and shuffle control the zone's rooms; the metadata shows the track, its artwork and the lyric line being sung.")

    @OptionGroup var options: CtlOptions

    func run() throws {
        let client = try options.client()
        let log = Log("mpris")
        let stopFlag = StopFlag()
        TerminationSignals.onTermination { stopFlag.set() }
        // One player per zone (or the one `--zone` names), as zones come and go.
        var running: [String: StopFlag] = [:]
        var told = false
        while !stopFlag.isSet {
            let zones: [ZoneView]
            if let zone = options.zone {
                zones = (try? [client.get("/zones/\(percentEncoded(zone))", as: ZoneView.self)]) ?? []
            } else if let all = try? client.get("/zones", as: [ZoneView].self) {
                zones = all
            } else {
                // A coordinator without zones (or not there yet): its one player.
                zones = running.isEmpty ? [ZoneView(id: "default", name: "tutti", rooms: [], nowPlaying: .init(
                    state: .stopped, elapsed: 0, rate: 0, queueCount: 0, loopMode: .once, volume: 100, muted: false, at: 0, epoch: 0))] : []
            }
            if zones.isEmpty, !told { log.warning("no zone to show yet at \(client.url); trying again"); told = true }
            for zone in zones where running[zone.id] == nil {
                let stop = StopFlag()
                running[zone.id] = stop
                serve(zone, client: client, log: log) { stopFlag.isSet || stop.isSet }
            }
            for (id, stop) in running where !zones.isEmpty && !zones.contains(where: { $0.id == id }) {
                log.info("zone \(id) is gone: its player leaves the bus")
                stop.set()
                running[id] = nil
            }
            for _ in 0..<50 where !stopFlag.isSet { System.sleep(nanoseconds: 100_000_000) }
        }
        for stop in running.values { stop.set() }
        System.sleep(nanoseconds: 300_000_000)
    }

    /// A zone's player on a thread of its own: its own connection to the bus, owning its name.
    private func serve(_ zone: ZoneView, client: CtlClient, log: Log, stop: @escaping @Sendable () -> Bool) {
        var zoned = client
        zoned.zone = zone.id == "default" ? nil : zone.id
        let name = MPRISPlayer.busName(zone: zone.id)
        let identity = zone.id == "default" ? "tutti" : "tutti · \(zone.name)"
        let remote = CtlRemote(client: zoned)
        startThread("tutti-mpris") {
            let bus: DBusConnection
            do {
                bus = try DBusConnection(owning: name)
            } catch {
                log.error("\(name): \(error)")
                return
            }
            let clock = SystemClock()
            log.info("\(name) on the session bus, for zone \(zone.name) of the house at \(client.url)")
            MPRISBridge(remote: remote, identity: identity, clock: { clock.nanosecondsNow() }, log: { log.info($0) }).run(bus: bus, stop: stop)
        }
    }
}

/// The control API, as the bridge uses it.
struct CtlRemote: MPRISRemote, Sendable {
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
