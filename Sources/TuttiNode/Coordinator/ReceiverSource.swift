import Foundation
import TuttiCore
import TuttiNet

/// A receiver the coordinator runs for senders of another protocol (`librespot:NAME`: the
/// house as a Spotify Connect speaker), as a live source. The receiver is a child process
/// that writes raw PCM into a named pipe of this source's own folder, read as a `pcm:`
/// input is (librespot writes as fast as the pipe takes: it is read at the stream's rate,
/// `LiveTimeline`); its event hook writes what plays into a second pipe, which now playing
/// shows (`ReceiverEvents`). The process lives as long as the source: a paused house keeps
/// it, so that its senders stay connected; the next track, or a stop, ends it.
final class ReceiverSource: FrameSource {
    let receiver: ReceiverEntry
    private let folder: String
    private let pcm: PCMReader
    private let events: InputFile
    private let child: ChildProcess
    private var parser = ReceiverEvents()
    private var chunk = [UInt8](repeating: 0, count: 4_096)

    var name: String { receiver.title }
    var isLive: Bool { true }
    var framesRead: Int64 { pcm.framesRead }
    var sampleRate: Int { pcm.sampleRate }
    var length: Int64? { nil }
    var loudness: Loudness? { nil }
    var seeksInPlace: Bool { false }
    var closesWhenIdle: Bool { false }

    /// What now playing shows: the track its sender named, once it did.
    var status: StreamStatus? {
        StreamStatus(phase: .ready, isLive: true, tags: parser.track.title == nil ? nil : parser.track)
    }

    /// librespot's pipe backend writes signed 16-bit stereo at 44.1 kHz.
    static let rate = 44_100

    /// Starts the receiver. Throws, saying so, when its program is not installed.
    init(_ receiver: ReceiverEntry, program: String = "librespot") throws {
        self.receiver = receiver
        do {
            folder = try Files.makePrivateFolder(prefix: "tutti-\(receiver.kind.rawValue)-")
        } catch {
            throw SourceError.receiver("\(receiver.title): \(error)")
        }
        let audio = folder + "/audio", news = folder + "/events", hook = folder + "/onevent"
        do {
            try Files.makePipe(audio)
            try Files.makePipe(news)
            events = try InputFile(pipeOrFile: news, isPipe: true)
            // The hook: the event's fields, each ended by a NUL, and one more NUL; the pipe
            // is opened for reading and writing, so that a hook never waits for a reader.
            let fields = ["PLAYER_EVENT", "TRACK_ID", "NAME", "ARTISTS", "ALBUM", "DURATION_MS", "POSITION_MS"]
            let script = "#!/bin/sh\n# tutti: librespot's event hook, which hands each event to the coordinator\n"
                + "printf '%s\\0' " + fields.map { "\"\($0)=$\($0)\"" }.joined(separator: " ") + " '' 1<>'\(news)'\n"
            try AtomicFile.write(Data(script.utf8), to: hook, permissions: 0o700)
            pcm = try PCMReader(LiveInput(path: audio, format: .s16le, rate: Self.rate), allowingFile: false)
        } catch {
            Files.removeFolder(folder)
            throw SourceError.receiver("\(receiver.title): \(error)")
        }
        guard let found = ChildProcess.find(program) else {
            Files.removeFolder(folder)
            throw SourceError.receiver("\(receiver.title) needs \(program), which is not installed here: Debian 12 does not package it "
                + "(build it with cargo, or install it from your distribution), then play \(receiver.entry) again")
        }
        // It ends when the thread that started it does (the player's), however that ends:
        // a coordinator that crashed leaves no speaker behind that still takes senders.
        let guarded = ChildProcess.find("setpriv").map { [$0, "--pdeathsig", "TERM", "--"] } ?? []
        do {
            child = try ChildProcess(guarded + [found, "--name", receiver.name, "--backend", "pipe", "--device", audio, "--format", "S16",
                                                "--bitrate", "320", "--onevent", hook],
                                     stdoutPath: folder + "/receiver.log", stderrPath: folder + "/receiver.log", appending: true)
        } catch {
            Files.removeFolder(folder)
            throw SourceError.receiver("\(receiver.title): cannot start \(found): \(error)")
        }
    }

    deinit {
        child.terminate(grace: 2)
        Files.removeFolder(folder)
    }

    func read(into output: inout [Float]) throws -> Int? {
        while events.readable(within: 0) {
            let n = chunk.withUnsafeMutableBytes { events.readFully(into: $0) } ?? 0
            guard n > 0 else { break }
            parser.take(chunk[0..<n])
        }
        if !child.isRunning {
            let log = String(decoding: (Files.read(folder + "/receiver.log", limit: 1 << 22) ?? []).suffix(400), as: UTF8.self)
            throw SourceError.receiver("\(receiver.title): its receiver ended (exit \(child.exitCode ?? -1)): \(log)")
        }
        return try pcm.read(into: &output)
    }

    func seek(toFrame frame: Int64) throws {
        throw SourceError.cannotSeek(receiver.title)
    }
}
