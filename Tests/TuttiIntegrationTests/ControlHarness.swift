import Foundation
import Testing
import TuttiAPI
import TuttiCodecs
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiWeb
import TuttiNode

/// The control API of a coordinator the harness started: JSON calls, with or without the token.
struct ControlAPI {
    let client: HTTPClient
    let token: String?

    init(_ harness: Harness, coordinator: String = "coordinator") throws {
        let url = try #require(harness.controlURL(coordinator), "the coordinator never said where its control API is")
        client = try HTTPClient(url: url, defaultPort: 8485)
        token = harness.token
    }

    /// A raw call: the status and the body as text.
    @discardableResult
    func call(_ method: String, _ path: String, json: String? = nil, token: String?? = nil) throws -> (status: Int, body: String) {
        var headers: [String: String] = [:]
        if let token = token ?? self.token { headers["Authorization"] = "Bearer \(token)" }
        let response = try client.request(method, "/api/v1" + path, headers: headers,
                                          body: json.map { Array($0.utf8) } ?? (method == "GET" ? nil : []))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    func get<T: Decodable>(_ path: String, as type: T.Type) throws -> T {
        let (status, body) = try call("GET", path)
        #expect(status == 200, "GET \(path): \(status) \(body)")
        return try JSONDecoder().decode(T.self, from: Data(body.utf8))
    }

    /// A change that must succeed; returns the now-playing card when the endpoint sends one.
    @discardableResult
    func change(_ method: String, _ path: String, _ json: String? = nil) throws -> NowPlaying? {
        let (status, body) = try call(method, path, json: json)
        #expect((200..<300).contains(status), "\(method) \(path): \(status) \(body)")
        return try? JSONDecoder().decode(NowPlaying.self, from: Data(body.utf8))
    }

    var nowPlaying: NowPlaying { get throws { try get("/now-playing", as: NowPlaying.self) } }
    var queue: QueueView { get throws { try get("/queue", as: QueueView.self) } }
    var rooms: [RoomView] { get throws { try get("/rooms", as: [RoomView].self) } }
}

extension Harness {
    /// Runs a command to completion: its exit code, standard output and standard error.
    func run(_ name: String, _ args: [String], timeout: Double = 15) throws -> (code: Int32, out: String, err: String) {
        let child = try ChildProcess(args, stdoutPath: path(name + ".out"), stderrPath: path(name + ".log"), environment: environment)
        guard let code = child.wait(timeout: timeout) else {
            child.terminate(grace: 0.5)
            Issue.record("\(args.joined(separator: " ")) did not finish in \(timeout) s")
            return (-1, "", "")
        }
        let out = (try? String(contentsOfFile: path(name + ".out"), encoding: .utf8)) ?? ""
        return (code, out, log(name))
    }

    /// Runs `tutti ctl ARGS` against this harness's coordinator.
    func ctl(_ args: [String], server: String) throws -> (code: Int32, out: String, err: String) {
        try run("ctl-\(UInt32.random(in: 0...UInt32.max))", [Harness.binary, "ctl"] + args + ["--server", server])
    }

    /// An MP3 of pink noise: nothing in it repeats, so a stretch of it says exactly where in
    /// the track it is (the demo song's backing track repeats bar after bar).
    func noiseSong(seconds: Int = 40, name: String = "noise") throws -> String {
        let wav = path(name + ".wav"), mp3 = path(name + ".mp3")
        _ = try run("sox-" + name, ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "\(seconds)", "pinknoise", "gain", "-10"])
        _ = try run("lame-" + name, ["lame", "--quiet", "-b", "192", "--tt", "Noise", wav, mp3])
        return mp3
    }

    /// A second MP3, different from the demo song: a tone sweep, tagged (with a cover when asked).
    func sweepSong(seconds: Int = 6, artwork: Bool = false) throws -> String {
        let wav = path("sweep.wav"), mp3 = path("sweep.mp3"), png = path("cover.png")
        _ = try run("sox", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "\(seconds)", "sine", "200-2000", "gain", "-8"])
        #expect(FileManager.default.createFile(atPath: png, contents: Data(Harness.tinyPNG)))
        _ = try run("lame", ["lame", "--quiet", "-b", "192", "--tt", "Sweep", "--ta", "The Testers"]
                    + (artwork ? ["--ti", png] : []) + [wav, mp3])
        return mp3
    }

    /// A 1×1 PNG, for cover art.
    static let tinyPNG: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
        0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
        0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
        0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ]
}

/// A track's audio, decoded (both channels averaged), for finding positions in recordings.
enum TrackAudio {
    static func mono(_ path: String) throws -> [Float] {
        let pcm = try TrackReader.decode([path])
        return stride(from: 0, to: pcm.count - 1, by: 2).map { (pcm[$0] + pcm[$0 + 1]) / 2 }
    }
}
