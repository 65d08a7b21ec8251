import Foundation
import TuttiCore
import TuttiNet

/// A receiver the coordinator runs for senders of another protocol, as a live source:
/// `librespot:NAME` (the house as a Spotify Connect speaker, with librespot) or
/// `airplay:NAME` (an AirPlay receiver, with shairport-sync). The receiver is a child process
/// that writes raw PCM (S16LE stereo, 44.1 kHz) into a named pipe of this source's own
/// folder, read as a `pcm:` input is (librespot writes as fast as the pipe takes, and is read
/// at the stream's rate; shairport-sync paces itself by its sender, whose clock is learnt:
/// `LiveTimeline`). What plays comes through a second pipe and shows in now playing:
/// librespot's event hook writes its events there (`ReceiverEvents`), shairport-sync its
/// metadata (`AirPlayMetadata`, cover art included). The process lives as long as the
/// source: a paused house keeps it, so that its senders stay connected; the next track, or
/// a stop, ends it, and it ends with the player's thread however the coordinator ends.
final class ReceiverSource: FrameSource {
    let receiver: ReceiverEntry
    private let folder: String
    private let pcm: PCMReader
    private let news: InputFile
    private let child: ChildProcess
    private var events = ReceiverEvents()
    private var metadata = AirPlayMetadata()
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    var name: String { receiver.title }
    var isLive: Bool { true }
    var framesRead: Int64 { pcm.framesRead }
    var sampleRate: Int { pcm.sampleRate }
    var length: MediaFrames? { nil }
    var loudness: Loudness? { nil }
    var seeksInPlace: Bool { false }
    var closesWhenIdle: Bool { false }

    /// What its sender plays, once it said.
    var track: TrackTags { receiver.kind == .airplay ? metadata.track : events.track }

    /// What now playing shows: the track its sender named, once it did; and where an
    /// AirPlay sender takes the house's pause and next back.
    var status: StreamStatus? {
        StreamStatus(phase: .ready, isLive: true, tags: track.title == nil ? nil : track,
                     remote: receiver.kind == .airplay ? metadata.remote : nil)
    }

    /// Both receivers write signed 16-bit stereo at 44.1 kHz.
    static let rate = 44_100

    /// Starts the receiver (`program`: its program, found in PATH). Throws, saying so, when
    /// the program is not installed.
    init(_ receiver: ReceiverEntry, program: String? = nil) throws {
        self.receiver = receiver
        let program = program ?? receiver.kind.program
        do {
            folder = try Files.makePrivateFolder(prefix: "tutti-\(receiver.kind.rawValue)-")
        } catch {
            throw SourceError.receiver("\(receiver.title): \(error)")
        }
        let audio = folder + "/audio", said = folder + "/said", hook = folder + "/onevent"
        do {
            try Files.makePipe(audio)
            try Files.makePipe(said)
            news = try InputFile(pipeOrFile: said, isPipe: true)
            if receiver.kind == .librespot {
                // Its event hook: the event's fields, each ended by a NUL, and one more NUL;
                // the pipe is opened for reading and writing, so that a hook never waits for
                // a reader.
                let fields = ["PLAYER_EVENT", "TRACK_ID", "NAME", "ARTISTS", "ALBUM", "DURATION_MS", "POSITION_MS"]
                let script = "#!/bin/sh\n# tutti: librespot's event hook, which hands each event to the coordinator\n"
                    + "printf '%s\\0' " + fields.map { "\"\($0)=$\($0)\"" }.joined(separator: " ") + " '' 1<>'\(said)'\n"
                try AtomicFile.write(Data(script.utf8), to: hook, permissions: 0o700)
            }
            pcm = try PCMReader(LiveInput(path: audio, format: .s16le, rate: Self.rate), allowingFile: false)
        } catch {
            Files.removeFolder(folder)
            throw SourceError.receiver("\(receiver.title): \(error)")
        }
        guard let found = ChildProcess.find(program) else {
            Files.removeFolder(folder)
            let how = receiver.kind == .librespot ? "Debian 12 does not package it (build it with cargo, or install it from your distribution)"
                : "install it (apt install shairport-sync), with an mDNS daemon (avahi-daemon) running"
            throw SourceError.receiver("\(receiver.title) needs \(program), which is not installed here: \(how), then play \(receiver.entry) again")
        }
        let arguments = switch receiver.kind {
        case .librespot:
            [found, "--name", receiver.name, "--backend", "pipe", "--device", audio, "--format", "S16", "--bitrate", "320", "--onevent", hook]
        case .airplay:
            // Its messages to standard error (our folder's log), metadata and cover art into
            // the second pipe. AirPlay's port (5000) unless another receiver (another zone's)
            // has it: senders find it by mDNS either way.
            [found, "--name=\(receiver.name)", "--port=\((5_000..<5_100).first { System.tcpPortIsFree($0) } ?? 5_000)", "--use-stderr",
             "--metadata-enable", "--get-coverart", "--metadata-pipename=\(said)", "--output=pipe", "--", audio]
        }
        // It ends when the thread that started it does (the player's), however that ends:
        // a coordinator that crashed leaves no receiver behind that still takes senders.
        let guarded = ChildProcess.find("setpriv").map { [$0, "--pdeathsig", "TERM", "--"] } ?? []
        do {
            child = try ChildProcess(guarded + arguments, stdoutPath: folder + "/receiver.log", stderrPath: folder + "/receiver.log",
                                     appending: true)
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
        while news.readable(within: 0) {
            let n = chunk.withUnsafeMutableBytes { news.readFully(into: $0) } ?? 0
            guard n > 0 else { break }
            if receiver.kind == .airplay { metadata.take(chunk[0..<n]) } else { events.take(chunk[0..<n]) }
        }
        if !child.isRunning {
            let log = String(decoding: (Files.read(folder + "/receiver.log", limit: 1 << 22) ?? []).suffix(400), as: UTF8.self)
            throw SourceError.receiver("\(receiver.title): its receiver ended (exit \(child.exitCode ?? -1)): \(log)")
        }
        return try pcm.read(into: &output)
    }

    func seek(to position: MediaFrames) throws {
        throw SourceError.cannotSeek(receiver.title)
    }
}
