import Foundation
import Testing
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
/// The house as an AirPlay receiver (`--source airplay:NAME`: shairport-sync, run by the
/// coordinator), played to by a real AirPlay sender: PulseAudio's RAOP sink on a second host
/// of a network of two (network namespaces, each with its system bus and avahi-daemon, as
/// the discovery tests make them; shairport-sync announces itself through avahi).
@Suite("AirPlay as a source", .serialized, .timeLimit(.minutes(2)))
struct AirPlayTests {
    @Test func anAirPlaySenderPlaysThroughTheHouse() throws {
        let h = try Harness("airplay")
        for tool in ["shairport-sync", "pulseaudio", "pacat"] where ChildProcess.find(tool) == nil {
            print("AirPlayTests skipped: \(tool) is not installed (deploy/test-setup.sh installs it)")
            return
        }
        guard let net = try DiscoveryTests.Network(h) else { return }
        defer { withExtendedLifetime(net) {} }
        let clock = "127.0.0.1:\(Harness.freePort())"
        try net.start("coordinator", on: net.house, [Harness.binary, "coordinator", "--source", "airplay:Stofa", "--multicast", "off",
                                                     "--clock-listen", clock, "--control-listen", "127.0.0.1:0"])
        try net.start("a", on: net.house, [Harness.binary, "follower", "--coordinator", clock, "--unicast", "--output",
                                           "wav:" + h.path("a.wav"), "--name", "a", "--status-interval", "1"])
        #expect(Harness.wait(timeout: 10) { h.log("coordinator").contains("room 'a' joined") }, "\(h.log("coordinator"))")
        #expect(Harness.wait(timeout: 10) { h.log("coordinator").contains("airplay:Stofa: ready") }, "\(h.log("coordinator"))")

        // The sender: a PulseAudio server on the other host whose RAOP sink streams to the
        // house (the receiver's RTSP port, 5000); 6 s of a tone into it.
        let runtime = h.path("pulse")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let pulse = ["XDG_RUNTIME_DIR": runtime, "HOME": runtime, "PULSE_SERVER": "unix:\(runtime)/native"]
        try net.start("pulseaudio", on: net.room, [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
            "-L", "module-native-protocol-unix socket=\(runtime)/native auth-anonymous=1",
            "-L", "module-raop-sink server=[10.79.0.1]:5000 sink_name=airplay protocol=UDP encryption=RSA codec=ALAC",
        ], environment: pulse)
        #expect(Harness.wait(timeout: 10) { FileManager.default.fileExists(atPath: "\(runtime)/native") }, "\(h.log("pulseaudio"))")
        // The RAOP sink appears once it has connected to the receiver.
        #expect(Harness.wait(timeout: 10) {
            ((try? net.run("sinks", on: net.room, ["pactl", "list", "short", "sinks"], environment: pulse))?.out ?? "").contains("airplay")
        }, "\(h.log("pulseaudio"))")
        // 550 Hz for 2 s, then 660 Hz for 4 s (phase continuous).
        var tone = [Int16]()
        var phase = 0.0
        for i in 0..<(44_100 * 6) {
            phase += 2 * .pi * (i < 44_100 * 2 ? 550 : 660) / 44_100
            let v = Int16(sin(phase) * 0.4 * 32_767)
            tone += [v, v]
        }
        try tone.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: h.path("tone.raw")))
        let monotonic = SystemClock()
        let began = monotonic.nanosecondsNow()
        let sent = try net.run("pacat", on: net.room, ["pacat", "--playback", "-d", "airplay", "--rate=44100", "--channels=2",
                                                        "--format=s16le", h.path("tone.raw")], environment: pulse)
        #expect(sent.code == 0, "\(sent)")
        // AirPlay's own latency (2 s) and the house's: heard until about 9 s from the start.
        Thread.sleep(forTimeInterval: max(0, 10 - Double(monotonic.nanosecondsNow() - began) / 1e9))
        h.stop("a")

        let control = ControlTests()
        let room = try control.wav(h.path("a.wav"))
        let heardFirst = room.firstSound(after: began)
        let first = try #require(heardFirst, "the sender was never heard: \(h.log("coordinator")) \(h.log("pulseaudio"))")
        let heardLast = room.lastSound(before: first + 8_000_000_000)
        let last = try #require(heardLast)
        let heard = Double(last - first) / 1e9
        // The sender's session takes a moment to start (PulseAudio's RAOP sink and
        // shairport-sync drop about the first second); from there on, all of it, to its end.
        #expect(heard > 4 && heard < 6.05, "\(heard) s of the 6 s heard")
        // What the house and the room said (realignments, concealment), should a gap be heard.
        let said = { "\(h.log("coordinator"))\n\(h.log("a").split(separator: "\n").suffix(3).joined(separator: "\n"))" }
        #expect(abs(IntegrationTests.LiveInputTests.frequency(room, at: last - 500_000_000) - 660) < 10, "\(said())")
        let (quiet, step) = IntegrationTests.LiveInputTests.gaps(room, from: first + 200_000_000, to: last - 200_000_000)
        #expect(quiet.isEmpty && step < 0.1, "quiet at \(quiet.prefix(8)) s, a step of \(step): \(said())")
        h.stop("pulseaudio")
        h.stop("coordinator")
        #expect(ChildProcess.output(["pgrep", "-f", "shairport-sync --name=Stofa"]) == nil, "shairport-sync outlived the coordinator")
    }

    /// The house's pause, play, next and previous go back to an AirPlay sender that takes
    /// them (DACP): no sender here does (PulseAudio's RAOP sink gives its receiver no remote
    /// control), so a stand-in for shairport-sync played to by an iPhone
    /// (bench/lib/shairport_standin.py) says what shairport-sync says of a phone's remote and
    /// is the phone: its remote pauses, plays and changes the track, which the house shows
    /// and plays. The house's queue stays on the receiver.
    @Test func theHousesPauseAndNextGoBackToTheSender() throws {
        let h = try Harness("airplay-remote")
        h.environment["PATH"] = try h.standIn("shairport-sync", script: "shairport_standin.py")
        h.environment["STANDIN_DACP_LOG"] = h.path("dacp.log")
        let control = ControlTests()
        let clock = try control.coordinator(h, [], ["--source", "airplay:Stofa"])
        try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
        let api = try ControlAPI(h)
        let said = { String(decoding: Files.read(h.path("dacp.log")) ?? [], as: UTF8.self) }
        #expect(Harness.wait(timeout: 10) { (try? api.nowPlaying.title) == "Track 1" }, "\(h.log("coordinator"))")
        #expect(Harness.wait(timeout: 10) { (try? api.rooms.first?.report?.state) == .playing }, "\(h.log("coordinator"))")
        Thread.sleep(forTimeInterval: 1.5)

        // Next: the phone moves to its next track; the house shows it and plays it.
        _ = try api.change("POST", "/transport/next")
        #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying.title) == "Track 2" }, "\(said()) \(h.log("coordinator"))")
        #expect(said().contains("nextitem 2876319871"), "\(said())")
        let card = try api.nowPlaying
        #expect(card.path == "airplay:Stofa" && card.artist == "The Phone" && card.state == .playing, "\(card)")
        #expect(try api.queue.items.count == 1)
        #expect(h.log("coordinator").contains("its AirPlay sender took 'nextitem'"), "\(h.log("coordinator"))")
        Thread.sleep(forTimeInterval: 1.5)
        let monotonic = SystemClock()
        let nextHeard = monotonic.nanosecondsNow()

        // Pause: the phone pauses too; play: both play again.
        _ = try api.change("POST", "/transport/pause")
        #expect(Harness.wait(timeout: 5) { said().contains("pause 2876319871") }, "\(said())")
        #expect(try api.nowPlaying.state == .paused)
        Thread.sleep(forTimeInterval: 1)
        _ = try api.change("POST", "/transport/play")
        #expect(Harness.wait(timeout: 5) { said().contains("play 2876319871") }, "\(said())")
        #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying.state) == .playing })
        // Previous: back to the first track.
        _ = try api.change("POST", "/transport/previous")
        #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying.title) == "Track 1" }, "\(said())")
        #expect(said().contains("previtem 2876319871"))
        Thread.sleep(forTimeInterval: 1)
        h.stop("a")

        // The room heard track 1 (550 Hz), then track 2 (660 Hz).
        let room = try control.wav(h.path("a.wav"))
        #expect(abs(IntegrationTests.LiveInputTests.frequency(room, at: nextHeard - 300_000_000) - 660) < 10)
        let heardFirst = room.firstSound(after: 0)
        let first = try #require(heardFirst)
        #expect(abs(IntegrationTests.LiveInputTests.frequency(room, at: first + 700_000_000) - 550) < 10)
        h.stop("coordinator")
    }

    /// A sender whose remote's port shairport-sync has not said (it says it once it has
    /// resolved the phone's mDNS service) is found by mDNS by the house itself: on a host of
    /// its own with avahi-daemon, where the stand-in phone announces `iTunes_Ctrl_<DACP-ID>`
    /// (`_dacp._tcp`) with avahi-publish.
    @Test func aSendersRemoteIsFoundByMDNSWhenItsPortWasNotSaid() throws {
        let h = try Harness("airplay-mdns")
        guard ChildProcess.find("avahi-publish") != nil else {
            print("AirPlayTests skipped: avahi-publish is not installed (deploy/test-setup.sh installs avahi-utils)")
            return
        }
        guard let net = try DiscoveryTests.Network(h) else { return }
        defer { withExtendedLifetime(net) {} }
        let environment = ["PATH": try h.standIn("shairport-sync", script: "shairport_standin.py"),
                           "STANDIN_DACP_LOG": h.path("dacp.log"), "STANDIN_ANNOUNCE_PORT": "0"]
        try net.start("coordinator", on: net.house, [Harness.binary, "coordinator", "--source", "airplay:Stofa", "--multicast", "off",
                                                     "--control-listen", "127.0.0.1:8485"], environment: environment)
        #expect(Harness.wait(timeout: 10) { h.log("coordinator").contains("airplay:Stofa: ready") }, "\(h.log("coordinator"))")
        Thread.sleep(forTimeInterval: 1)
        let paused = try net.run("ctl", on: net.house, [Harness.binary, "ctl", "pause"])
        #expect(paused.code == 0, "\(paused)")
        let said = { String(decoding: Files.read(h.path("dacp.log")) ?? [], as: UTF8.self) }
        #expect(Harness.wait(timeout: 8) { said().contains("pause 2876319871") }, "\(said()) \(h.log("coordinator"))")
        #expect(Harness.wait(timeout: 3) { h.log("coordinator").contains("its AirPlay sender took 'pause'") }, "\(h.log("coordinator"))")
        h.stop("coordinator")
    }
}
}
