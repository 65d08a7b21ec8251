import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
/// `tutti mpris` on a real session bus (a dbus-daemon of the test's own), driven by
/// playerctl as a desktop's media keys and widgets drive it, and watched by dbus-monitor.
@Suite("MPRIS on the session bus", .serialized, .timeLimit(.minutes(2)))
struct MPRISTests {
    @Test func playerctlControlsEveryRoomAndCtlCommandsShowAsSignals() throws {
        for tool in ["dbus-daemon", "playerctl", "dbus-monitor"] where ChildProcess.output(["sh", "-c", "command -v \(tool)"]) == nil {
            print("MPRISTests skipped: \(tool) is not installed (deploy/test-setup.sh installs it)")
            return
        }
        let h = try Harness("mpris")
        let sweep = try h.sweepSong()
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, sweep, "--loop", "--multicast", "off", "--clock-listen", clock,
                                    "--control-listen", "127.0.0.1:0"])
        for room in ["Kitchen", "Study"] {
            try h.tutti(room, ["follower", "--coordinator", clock, "--unicast", "--output", "null", "--name", room])
        }
        let api = try ControlAPI(h)
        let url = try #require(h.controlURL())
        #expect(Harness.wait(timeout: 10) { (try? api.rooms.filter { $0.report?.state == .playing }.count) == 2 })

        let bus = "unix:path=" + h.path("session-bus")
        try h.start("dbus", ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=" + bus])
        #expect(Harness.wait(timeout: 3) { FileManager.default.fileExists(atPath: h.path("session-bus")) })
        let session = ["DBUS_SESSION_BUS_ADDRESS": bus]
        try h.start("mpris", [Harness.binary, "mpris", "--server", url], with: session)
        #expect(Harness.wait(timeout: 5) { h.log("mpris").contains("following the house at") }, "\(h.log("mpris"))")
        try h.start("monitor", ["dbus-monitor", "--address", bus,
                                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"], with: session)
        func playerctl(_ args: String...) -> String {
            let run = try? h.run("playerctl-\(UInt32.random(in: 0...UInt32.max))", ["env", "DBUS_SESSION_BUS_ADDRESS=" + bus, "playerctl", "-p", "tutti"] + args)
            return (run?.out ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func state() -> PlaybackState? { try? api.nowPlaying.state }

        // What the desktop shows.
        #expect(Harness.wait(timeout: 3) { playerctl("status") == "Playing" })
        #expect(playerctl("metadata", "xesam:title") == "Tutti")
        #expect(playerctl("metadata", "xesam:artist") == "The tutti band")
        #expect(playerctl("metadata", "mpris:trackid").contains("/org/tutti/track/"))
        #expect(Int(playerctl("metadata", "mpris:length")).map { abs($0 - 32_040_000) < 100_000 } == true)
        #expect(Harness.wait(timeout: 8) { !playerctl("metadata", "xesam:asText").isEmpty }, "no lyric line")

        // Media keys: the house, in every room.
        _ = playerctl("play-pause")
        #expect(Harness.wait(timeout: 3) { state() == .paused })
        #expect(Harness.wait(timeout: 5) { (try? api.rooms.allSatisfy { $0.report?.state != .playing }) == true }, "a room still plays")
        #expect(playerctl("status") == "Paused")
        _ = playerctl("play")
        #expect(Harness.wait(timeout: 3) { [.playing, .loading].contains(state()) })
        #expect(Harness.wait(timeout: 5) { (try? api.rooms.filter { $0.report?.state == .playing }.count) == 2 }, "the rooms did not play again")
        _ = playerctl("position", "20")
        #expect(Harness.wait(timeout: 3) { ((try? api.nowPlaying.elapsed) ?? 0) >= 19.5 }, "SetPosition")
        _ = playerctl("position", "5-")
        #expect(Harness.wait(timeout: 3) { ((try? api.nowPlaying.elapsed) ?? 99) < 18 }, "Seek back")
        _ = playerctl("volume", "0.4")
        #expect(Harness.wait(timeout: 3) { (try? api.nowPlaying.volume).map { abs($0 - 40) < 1 } == true })
        #expect(playerctl("volume").hasPrefix("0.4"))
        _ = playerctl("loop", "Track")
        #expect(Harness.wait(timeout: 3) { (try? api.queue.loopMode) == .one })
        _ = playerctl("shuffle", "On")
        #expect(Harness.wait(timeout: 3) { (try? api.queue.loopMode) == .shuffle })
        #expect(playerctl("shuffle") == "On")
        _ = playerctl("loop", "Playlist")
        _ = playerctl("shuffle", "Off")
        #expect(Harness.wait(timeout: 3) { (try? api.queue.loopMode) == .all })
        _ = playerctl("next")
        #expect(Harness.wait(timeout: 3) { (try? api.nowPlaying.title) == "Sweep" })
        #expect(Harness.wait(timeout: 3) { playerctl("metadata", "xesam:title") == "Sweep" })
        _ = playerctl("previous")
        #expect(Harness.wait(timeout: 3) { (try? api.nowPlaying.title) == "Tutti" })
        _ = playerctl("stop")
        #expect(Harness.wait(timeout: 3) { state() == .stopped })

        // A command from elsewhere (tutti ctl) reaches the desktop as a signal.
        _ = playerctl("play")
        #expect(Harness.wait(timeout: 3) { [.playing, .loading].contains(state()) })
        Thread.sleep(forTimeInterval: 0.5)
        let before = h.log("monitor").count + ((try? String(contentsOfFile: h.path("monitor.out"), encoding: .utf8))?.count ?? 0)
        let paused = try h.ctl(["pause"], server: url)
        #expect(paused.code == 0, "\(paused.err)")
        #expect(Harness.wait(timeout: 3) {
            let out = (try? String(contentsOfFile: h.path("monitor.out"), encoding: .utf8)) ?? ""
            return out.count > before && out.suffix(out.count - min(before, out.count)).contains("string \"Paused\"")
        }, "no PropertiesChanged for a pause from tutti ctl")
        #expect(playerctl("status") == "Paused")

        // A zone made meanwhile gets a player of its own (an instance of tutti's, as the
        // specification names instances), which plays that zone; removed, it leaves.
        try api.change("POST", "/zones", #"{"name": "Patio"}"#)
        try api.change("POST", "/zones/patio/queue", #"{"paths": ["\#(sweep)"]}"#)
        func patio(_ args: String...) -> String {
            let run = try? h.run("playerctl-\(UInt32.random(in: 0...UInt32.max))",
                                 ["env", "DBUS_SESSION_BUS_ADDRESS=" + bus, "playerctl", "-p", "tutti.patio"] + args)
            return (run?.out ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(Harness.wait(timeout: 8) { patio("status") == "Stopped" }, "no player for the patio: \(h.log("mpris"))")
        #expect(Harness.wait(timeout: 3) { patio("metadata", "xesam:title") == "Sweep" })
        _ = patio("play")
        #expect(Harness.wait(timeout: 3) { [.playing, .loading].contains((try? api.get("/zones/patio/now-playing", as: NowPlaying.self).state) ?? .stopped) },
                "play on the patio's player plays the patio")
        #expect(state() == .paused, "the default zone stays as it was")
        try api.change("DELETE", "/zones/patio")
        let listed = { (try? h.run("playerctl-list", ["env", "DBUS_SESSION_BUS_ADDRESS=" + bus, "playerctl", "-l"]).out) ?? "" }
        #expect(Harness.wait(timeout: 8) { !listed().contains("tutti.patio") && listed().contains("tutti") }, "\(listed())")
        #expect(!h.log("mpris").contains("error"), "\(h.log("mpris"))")
    }
}
}
