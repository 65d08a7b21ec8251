import Foundation
import Glibc
import Testing
import TuttiSecurity
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiNode

/// Every integration test runs one at a time: they start real processes that play in real
/// time, and on a two-core machine they would otherwise compete for the CPU.
@Suite(.serialized) enum IntegrationTests {}

/// Runs the real `tutti` binary and real peers (PulseAudio, GStreamer) for integration
/// tests, in a scratch folder, and stops everything it started.
final class Harness {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static var binary: String {
        let path = packageRoot + "/.build/debug/tutti"
        precondition(FileManager.default.fileExists(atPath: path), "build the binary first: swift build --product tutti")
        return path
    }
    /// The lean follower binary (`tutti-follower`).
    static var followerBinary: String {
        let path = packageRoot + "/.build/debug/tutti-follower"
        precondition(FileManager.default.fileExists(atPath: path), "build the binary first: swift build --product tutti-follower")
        return path
    }
    static let demoSong = packageRoot + "/assets/demo/tutti-demo.mp3"

    /// The demo song as the coordinator decodes it (its first 10 s, interleaved), rounded to
    /// 24 bits as L24 carries it.
    static func demoSong24Bits() throws -> [Int32] {
        try TrackReader.decode([demoSong], maximumFrames: 48_000 * 10).map { Int32(max(-8_388_608, min(8_388_607, ($0 * 8_388_608).rounded()))) }
    }

    /// The demo song's left channel as the coordinator plays it (its first six seconds).
    static func demoSongLeft() throws -> [Float] {
        let pcm = try TrackReader.decode([demoSong], maximumFrames: 48_000 * 6)
        return stride(from: 0, to: pcm.count, by: 2).map { pcm[$0] }
    }

    let directory: String
    private var children: [ChildProcess] = []
    private var named: [String: ChildProcess] = [:]
    var environment: [String: String] = [:]

    init(_ name: String) throws {
        directory = NSTemporaryDirectory() + "tutti-it-\(name)-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Each test's coordinators keep their state and token here, not in the user's folder.
        environment["TUTTI_STATE_DIR"] = path("state")
        // No configuration file of this machine's: each test says what it runs with.
        environment["TUTTI_CONFIG"] = "none"
        // A paired house: its coordinator, followers and screens share this folder's key
        // (made here, so that a follower started beside its coordinator never finds none).
        try StateStore.writeHouseKey(HouseKey.generate(), to: StateStore(directory: path("state")).houseKeyPath)
    }

    deinit {
        for c in children.reversed() { c.terminate(grace: 2) }
        if ProcessInfo.processInfo.environment["KEEP_TEST_FILES"] == nil {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    func path(_ name: String) -> String { directory + "/" + name }

    /// Starts a process; its standard error goes to `name.log`.
    @discardableResult
    func start(_ name: String, _ args: [String], with extra: [String: String] = [:]) throws -> ChildProcess {
        let child = try ChildProcess(args, stdoutPath: path(name + ".out"), stderrPath: path(name + ".log"),
                                     environment: environment.merging(extra) { _, given in given })
        children.append(child)
        named[name] = child
        return child
    }

    /// Stops a process this harness started, gracefully (SIGTERM, then SIGKILL).
    func stop(_ name: String) { named[name]?.terminate(grace: 3) }

    /// Kills a process this harness started at once (SIGKILL), as a crash would.
    func kill(_ name: String) {
        guard let child = named[name], child.isRunning else { return }
        Glibc.kill(child.pid, SIGKILL)
        child.wait(timeout: 3)
    }

    /// Runs `tutti ARGS`. A coordinator gets a free control port unless the test names one
    /// (its log says which: `control API on http://...`).
    @discardableResult
    func tutti(_ name: String, _ args: [String]) throws -> ChildProcess {
        var args = args
        if args.first == "coordinator", !args.contains("--control-listen") { args += ["--control-listen", "127.0.0.1:0"] }
        return try start(name, [Harness.binary] + args)
    }

    /// Starts the lean `tutti-follower` with `args` (those of `tutti follower`).
    @discardableResult
    func leanFollower(_ name: String, _ args: [String]) throws -> ChildProcess {
        try start(name, [Harness.followerBinary] + args)
    }

    /// The control API's base URL from a coordinator's log, once it is listening.
    func controlURL(_ name: String = "coordinator") -> String? {
        var url: String?
        _ = Harness.wait(timeout: 10) {
            guard let range = log(name).range(of: #"control API on (https?://[0-9.:a-z]+)/api/v1"#, options: .regularExpression) else { return false }
            let line = String(log(name)[range])
            url = line.replacingOccurrences(of: "control API on ", with: "").replacingOccurrences(of: "/api/v1", with: "")
            return true
        }
        return url
    }

    /// The control token of this harness's coordinators.
    var token: String? {
        (try? String(contentsOfFile: path("state/token"), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func log(_ name: String) -> String {
        (try? String(contentsOfFile: path(name + ".log"), encoding: .utf8)) ?? ""
    }

    /// A port of 127.0.0.1 that was free a moment ago for both UDP and a TCP listener (the
    /// tests give it to either), and odd: an outgoing TCP connection takes an even port for
    /// its own end while there is one, so the test's own connections (a player, the control
    /// API) do not take it before the process it is meant for listens on it. Any free UDP
    /// port would not do: a coordinator could not listen for Sendspin on one a connection held.
    static func freePort() -> UInt16 {
        for _ in 0..<64 {
            let socket = try! UDPSocket()
            try! socket.bind(SocketAddress(address: 0x7F00_0001, port: 0))
            let port = try! socket.localAddress().port
            if port % 2 == 1, System.tcpPortIsFree(port, host: "127.0.0.1") { return port }
        }
        preconditionFailure("no odd port of 127.0.0.1 is free for both UDP and TCP")
    }

    /// Sends raw datagrams, for bad-input tests.
    static func sendGarbage(to port: UInt16, count: Int, seed: UInt64) {
        guard let socket = try? UDPSocket() else { return }
        let target = SocketAddress(address: 0x7F00_0001, port: port)
        var state = seed
        for i in 0..<count {
            var bytes: [UInt8] = (0..<(1 + i % 300)).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
            if i % 3 == 0 { bytes[0] = 0x90 }  // looks like RTP with an extension
            if i % 5 == 0 { bytes = Array("TUTC".utf8) + bytes }  // looks like a control message
            try? socket.send(bytes, to: target)
        }
    }

    /// A stand-in for `program` (bench/lib/SCRIPT, run by python3) in a folder of its own;
    /// returns the PATH that finds it first, for the processes that look for `program`.
    func standIn(_ program: String, script: String) throws -> String {
        let bin = path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let wrapper = "#!/bin/sh\nexec python3 \(Harness.packageRoot)/bench/lib/\(script) \"$@\"\n"
        FileManager.default.createFile(atPath: bin + "/" + program, contents: Data(wrapper.utf8), attributes: [.posixPermissions: 0o755])
        return bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
    }

    /// Waits until `condition` holds, up to `timeout` seconds.
    static func wait(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition()
    }
}

/// A private PulseAudio server with the measuring rig of docs/timing.md: a stereo null
/// sink `capture` and two remap sinks, `roomA` feeding its left channel and `roomB` its right.
final class PulseRig {
    let harness: Harness
    let server: ChildProcess

    init(_ harness: Harness) throws {
        self.harness = harness
        let runtime = harness.path("pulse")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        harness.environment["XDG_RUNTIME_DIR"] = runtime
        harness.environment["PULSE_SERVER"] = "unix:\(runtime)/native"
        harness.environment["HOME"] = runtime
        server = try harness.start("pulseaudio", [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
            "-L", "module-native-protocol-unix socket=\(runtime)/native auth-anonymous=1",
            "-L", "module-null-sink sink_name=capture rate=48000 channels=2 channel_map=front-left,front-right",
            "-L", "module-remap-sink sink_name=roomA master=capture channels=1 master_channel_map=front-left channel_map=mono remix=no",
            "-L", "module-remap-sink sink_name=roomB master=capture channels=1 master_channel_map=front-right channel_map=mono remix=no",
        ])
        let up = Harness.wait(timeout: 10) { FileManager.default.fileExists(atPath: "\(runtime)/native") }
        guard up else { throw RigError.pulseDidNotStart(harness.log("pulseaudio")) }
        Thread.sleep(forTimeInterval: 0.3)
    }

    /// Records `capture.monitor` (left: roomA, right: roomB) to a WAV file until stopped.
    func record(_ name: String) throws -> ChildProcess {
        try harness.start(name, ["parecord", "-d", "capture.monitor", "--rate=48000", "--channels=2",
                                 "--format=s16le", "--file-format=wav", "--latency-msec=20", harness.path(name + ".wav")])
    }
}

enum RigError: Error, CustomStringConvertible {
    case pulseDidNotStart(String)
    var description: String {
        switch self {
        case let .pulseDidNotStart(log): "PulseAudio did not start: \(log)"
        }
    }
}
