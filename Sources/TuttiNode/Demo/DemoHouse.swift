import Foundation
import Synchronization
import TuttiNet
import TuttiWeb

/// The demo house: a PulseAudio server (reused, or started), a coordinator and two
/// followers as child processes of this one, playing the bundled song in a loop.
public final class DemoHouse: @unchecked Sendable {
    let song: String
    let clockPort: UInt16
    let controlPort: Int
    let log: Log
    private let stopFlag = StopFlag()
    private let children = Mutex<[ChildProcess]>([])
    private var cleanups: [() -> Void] = []
    /// The PulseAudio server the demo started, if it had to; stopped last.
    private var server: ChildProcess?
    /// Where the children's messages go while the lyric screen has the terminal.
    private var childLog: String?

    public init(song: String, clockPort: UInt16, controlPort: Int = 8485, log: Log) {
        self.song = song
        self.clockPort = clockPort
        self.controlPort = controlPort
        self.log = log
    }

    /// The demo house keeps its state apart from a real house's.
    public static var stateDirectory: String { StateStore.defaultDirectory() + "-demo" }

    /// Looks for assets/demo/tutti-demo.mp3 beside the executable, in its parents, in the
    /// working directory, then in /usr/local/share/tutti and /usr/share/tutti.
    public static func findBundledSong() -> String? {
        let relative = "assets/demo/tutti-demo.mp3"
        var candidates: [String] = []
        if let env = ProcessInfo.processInfo.environment["TUTTI_SHARE"] { candidates.append(env + "/demo/tutti-demo.mp3") }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(dir.appendingPathComponent(relative).path)
            dir = dir.deletingLastPathComponent()
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/" + relative)
        candidates += ["/usr/local/share/tutti/demo/tutti-demo.mp3", "/usr/share/tutti/demo/tutti-demo.mp3"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    public func stop() { stopFlag.set() }

    public func run(duration: Double?) throws {
        defer { shutdown() }
        // On a terminal the lyric screen takes the screen; the house's messages go to a file.
        let fullScreen = isatty(STDOUT_FILENO) == 1
        if fullScreen {
            let path = NSTemporaryDirectory() + "tutti-demo-\(getpid()).log"
            if FileManager.default.createFile(atPath: path, contents: nil) {
                childLog = path
                log.info("the demo house's messages go to \(path)")
            } else {
                log.warning("cannot create \(path): the house's messages stay on this terminal")
            }
        }
        let sinks = try preparePulse()
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let clock = "127.0.0.1:\(clockPort)"
        // The demo's rooms and screen are the house's members: they read its key from its folder.
        let store = try StateStore(directory: Self.stateDirectory)
        _ = try store.houseKey()
        let keyPath = store.houseKeyPath
        // The demo's own settings, whatever configuration files this machine has.
        try spawn(me, ["coordinator", "--config", "none", song, "--loop", "--library", (song as NSString).deletingLastPathComponent, "--multicast", "off", "--clock-listen", clock,
                       "--control-listen", "127.0.0.1:\(controlPort)", "--state-dir", Self.stateDirectory])
        Thread.sleep(forTimeInterval: 0.3)
        for (room, sink) in zip(["Living room", "Kitchen"], sinks) {
            var args = ["follower", "--config", "none", "--coordinator", clock, "--unicast", "--name", room, "--key", keyPath]
            if let sink { args += ["--sink", sink] }
            try spawn(me, args)
            log.info("\(room) plays to \(sink ?? "the default sink")")
        }
        log.info("playing \(song) in two rooms; press Ctrl-C to stop")
        log.info("control it from another terminal: tutti ctl status --state-dir \(Self.stateDirectory) (or pause, next, volume Kitchen 40 ...)")
        log.info("lyrics: here, or in a browser at http://127.0.0.1:\(controlPort)/lyrics; the remote at http://127.0.0.1:\(controlPort)/ (`tutti ctl remote --state-dir \(Self.stateDirectory) --server http://127.0.0.1:\(controlPort)` prints it with the token)")
        if fullScreen { Thread.sleep(forTimeInterval: 1.5) }  // time to read the lines above
        var screenConfig = LyricScreen.Configuration()
        screenConfig.coordinator = SocketAddress(address: 0x7F00_0001, port: clockPort)
        screenConfig.server = HTTPClient(host: "127.0.0.1", port: UInt16(controlPort))
        screenConfig.lineMode = !fullScreen
        screenConfig.houseKeyPath = keyPath
        let stopFlag = self.stopFlag
        screenConfig.onQuit = { stopFlag.set() }  // q on the lyric screen ends the demo
        let screen = try LyricScreen(configuration: screenConfig, clock: SystemClock())
        startThread("tutti-lyrics") { try? screen.run() }
        defer {
            screen.stop()
            screen.waitUntilFinished(timeout: 1)  // the screen puts the terminal back
        }
        let deadline = duration.map { SystemClock.hostNanoseconds() + Int64($0 * 1e9) }
        while !stopFlag.isSet {
            if let deadline, SystemClock.hostNanoseconds() >= deadline { break }
            if children.withLock({ $0.contains { !$0.isRunning } }) {
                throw DemoError.childExited
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        log.info("stopping the demo house")
    }

    /// Returns the sinks for the two rooms (nil: the default sink).
    private func preparePulse() throws -> [String?] {
        if !pactl(["info"]) {
            log.info("no PulseAudio server running; starting one with null sinks")
            let runtime = NSTemporaryDirectory() + "tutti-demo-pulse-\(getpid())"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            setenv("XDG_RUNTIME_DIR", runtime, 1)
            setenv("PULSE_SERVER", "unix:\(runtime)/pulse/native", 1)
            server = try ChildProcess(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1",
                                                   "--use-pid-file=no", "--disable-shm=no",
                                       "-L", "module-native-protocol-unix", "-L", "module-always-sink"])
            for _ in 0..<50 where !pactl(["info"]) { Thread.sleep(forTimeInterval: 0.1) }
            guard pactl(["info"]) else { throw DemoError.noPulse }
            cleanups.append { try? FileManager.default.removeItem(atPath: runtime) }
        }
        if hasRealSink() { return [nil, nil] }
        var sinks: [String?] = []
        for room in ["tutti_roomA", "tutti_roomB"] {
            guard let index = pactlOutput(["load-module", "module-null-sink", "sink_name=\(room)",
                                           "rate=48000", "sink_properties=device.description=tutti-\(room)"]) else {
                throw DemoError.noPulse
            }
            let module = index.trimmingWhitespace()
            cleanups.append { [self] in _ = pactl(["unload-module", module]) }
            sinks.append(room)
        }
        log.info("no sound card: the rooms play to null sinks tutti_roomA and tutti_roomB (record with parec -d tutti_roomA.monitor)")
        return sinks
    }

    private func hasRealSink() -> Bool {
        guard let list = pactlOutput(["list", "short", "sinks"]) else { return false }
        return list.split(separator: "\n").contains { !$0.contains("null") && !$0.contains("auto_null") }
    }

    @discardableResult
    private func spawn(_ path: String, _ args: [String]) throws -> ChildProcess {
        // The demo's rooms keep their credentials beside the demo coordinator's members:
        // the two come and go together.
        let child = try ChildProcess([path] + args, stdoutPath: childLog, stderrPath: childLog,
                                     environment: ["TUTTI_STATE_DIR": Self.stateDirectory], appending: true)
        children.withLock { $0.append(child) }
        return child
    }

    private func shutdown() {
        let procs = children.withLock { list in defer { list.removeAll() }; return list }
        for p in procs.reversed() { p.terminate() }
        for c in cleanups.reversed() { c() }
        server?.terminate()
    }

    private func pactl(_ args: [String]) -> Bool { pactlOutput(args) != nil }

    private func pactlOutput(_ args: [String]) -> String? {
        ChildProcess.output(["pactl"] + args)
    }
}

enum DemoError: Error, CustomStringConvertible {
    case noPulse
    case childExited
    var description: String {
        switch self {
        case .noPulse: "cannot reach or start a PulseAudio server (is the pulseaudio package installed?)"
        case .childExited: "a process of the demo house exited; see its messages above"
        }
    }
}
