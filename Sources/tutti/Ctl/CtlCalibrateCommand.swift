import ArgumentParser
import Foundation
import TuttiAPI
import TuttiCore
import TuttiNet

/// `tutti ctl calibrate`: every room heard at the same instant where the microphone is. The
/// rooms play probes in turn while this machine records them (PulseAudio's `parec` or
/// ALSA's `arecord`); the coordinator finds them in the recording and sets the rooms'
/// output delays; a second pass measures what is left.
struct CalibrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Align the rooms where people listen: each plays a probe in turn while a microphone records, and their output delays are set from it.",
        discussion: """
            Stand where you listen, with the microphone pointing at the room: the probes are a second of noise per room, \
            about 2.5 s apart. Pause the music first for the clearest result. --mic pulse:NAME records a PulseAudio source \
            (a sink's monitor too: pulse:SINK.monitor), alsa:DEVICE an ALSA device; the default is PulseAudio's default source.
            """)
    @OptionGroup var options: CtlOptions
    @Option(help: "The microphone: pulse:SOURCE, pulse: (the default source), or alsa:DEVICE.")
    var mic = "pulse:"
    @Option(help: "The rooms to calibrate, by name, separated by commas (default: every connected room).")
    var rooms: String?
    @Option(help: "The probes' level, 1 to 100 % of full scale, through each room's volume.")
    var level = 20.0
    @Flag(help: "Measure and show, but change no output delay.")
    var dryRun = false

    func validate() throws {
        guard level > 0, level <= 100 else { throw ValidationError("--level must be above 0 and at most 100, not \(level)") }
        _ = try Microphone(mic)
    }

    func run() throws {
        let client = try options.client()
        let microphone = try Microphone(mic)
        let named = rooms?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let first = try Self.pass(client, microphone, CalibrationRequest(rooms: named, level: level / 100), apply: !dryRun, quiet: options.json)
        var verify: CalibrationReport?
        if !dryRun, first.outcome.rooms.contains(where: \.heard) {
            if !options.json { print("checking: the probes again, with the new delays") }
            verify = try Self.pass(client, microphone, CalibrationRequest(rooms: first.outcome.rooms.map(\.room), level: level / 100),
                                   apply: false, quiet: options.json)
        }
        if options.json { return try printJSON(["calibration": first, "check": verify].compactMapValues { $0 }) }
        print(Self.table(first))
        if let verify {
            let residual = verify.outcome.spreadMs.map { String(format: "%.3f ms (%.0f µs, %.1f cm)", $0, $0 * 1_000, $0 * 34.3) } ?? "-"
            print("after: the rooms within \(residual) of each other")
        } else if dryRun {
            print("(a dry run: no output delay changed)")
        }
        let unheard = first.outcome.rooms.filter { !$0.heard }.map { first.names[$0.room] ?? $0.room }
        if !unheard.isEmpty {
            throw CtlFailure(description: "not heard: \(unheard.joined(separator: ", ")) (muted, too quiet, or too far from the microphone: raise --level, or move closer)")
        }
    }

    /// One pass: the microphone on, the probes, the recording sent back; a recording the
    /// coordinator found unsteady (it lost or gained sound) is made again, twice at most.
    static func pass(_ client: CtlClient, _ microphone: Microphone, _ request: CalibrationRequest, apply: Bool, quiet: Bool) throws -> CalibrationReport {
        for _ in 0..<2 {
            do {
                return try record(client, microphone, request, apply: apply, quiet: quiet)
            } catch let failure as CtlFailure where failure.status == 409 && failure.description.contains("record again") {
                if !quiet { print("the recording was not steady (\(failure.description)); again…") }
            }
        }
        return try record(client, microphone, request, apply: apply, quiet: quiet)
    }

    static func record(_ client: CtlClient, _ microphone: Microphone, _ request: CalibrationRequest, apply: Bool, quiet: Bool) throws -> CalibrationReport {
        let folder = try Files.makePrivateFolder(prefix: "tutti-calibrate-")
        defer { Files.removeFolder(folder) }
        let path = folder + "/recording.f32"
        let recorder = try microphone.record(to: path)
        defer { recorder.terminate(grace: 1) }
        // The microphone must be running before the first probe is due.
        let began = SystemClock.hostNanoseconds()
        while ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) < 9_600 * 4 {
            guard recorder.isRunning else {
                let log = String(decoding: Files.read(path + ".log", limit: 2_000) ?? [], as: UTF8.self)
                throw CtlFailure(description: "the microphone \(microphone) did not record: \(log.isEmpty ? "it ended" : log)")
            }
            guard SystemClock.hostNanoseconds() - began < 5_000_000_000 else { throw CtlFailure(description: "the microphone \(microphone) gave no sound in 5 s") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let started = try client.send("POST", "/calibration", body: request, as: CalibrationStarted.self)
        if !quiet { print("calibrating \(started.rooms.joined(separator: ", ")): \(String(format: "%.0f", started.recordSeconds)) s, keep quiet…") }
        Thread.sleep(forTimeInterval: started.recordSeconds + 0.3)
        recorder.terminate(grace: 1)
        guard let bytes = Files.read(path, limit: 64 << 20) else { throw CtlFailure(description: "the recording could not be read") }
        let whole = Array(bytes.prefix(bytes.count / 4 * 4))
        let answer = try client.call("POST", "/calibration/\(started.id)/recording?apply=\(apply)&by=ctl", raw: whole, timeout: 120)
        return try client.decode(CalibrationReport.self, from: answer)
    }

    static func table(_ report: CalibrationReport) -> String {
        let width = max(4, report.names.values.map(\.count).max() ?? 0)
        var lines = ["room".padding(toLength: width, withPad: " ", startingAt: 0) + "  heard   offset            delay"]
        for room in report.outcome.rooms {
            let name = (report.names[room.room] ?? room.room).padding(toLength: width, withPad: " ", startingAt: 0)
            guard room.heard, let offset = room.offsetMs, let proposed = room.proposedDelayMs else {
                lines.append("\(name)  no      -                 \(String(format: "%.1f ms", room.delayMs)) (unchanged)")
                continue
            }
            let change = report.applied ? "→" : "would be"
            lines.append("\(name)  yes     " + String(format: "%+8.2f ms %5.0f cm", offset, offset * 34.3)
                         + String(format: "  %.2f ms %@ %.2f ms", room.delayMs, change, proposed))
        }
        if let spread = report.outcome.spreadMs { lines.append(String(format: "spread before: %.2f ms", spread)) }
        return lines.joined(separator: "\n")
    }
}

/// Where a calibration records: a PulseAudio source or an ALSA device, named as `--output`
/// names devices.
struct Microphone: CustomStringConvertible {
    enum Kind { case pulse, alsa }
    let kind: Kind
    let device: String

    init(_ text: String) throws {
        if text.hasPrefix("pulse:") {
            kind = .pulse
            device = String(text.dropFirst(6))
        } else if text.hasPrefix("alsa:"), text.count > 5 {
            kind = .alsa
            device = String(text.dropFirst(5))
        } else {
            throw ValidationError("--mic takes pulse:SOURCE, pulse: or alsa:DEVICE, not '\(text)'")
        }
    }

    var description: String { (kind == .pulse ? "pulse:" : "alsa:") + device }

    /// Starts recording mono 32-bit floats at 48 kHz into `path` (its messages beside it).
    func record(to path: String) throws -> ChildProcess {
        let program = kind == .pulse ? "parec" : "arecord"
        guard let found = ChildProcess.find(program) else {
            throw CtlFailure(description: "\(program) is not installed: apt install \(kind == .pulse ? "pulseaudio-utils" : "alsa-utils")")
        }
        let arguments = kind == .pulse
            ? [found, "--raw", "--format=float32le", "--rate=48000", "--channels=1", "--latency-msec=20"] + (device.isEmpty ? [] : ["--device=\(device)"])
            : [found, "-q", "-D", device, "-f", "FLOAT_LE", "-r", "48000", "-c", "1", "-t", "raw"]
        return try ChildProcess(arguments, stdoutPath: path, stderrPath: path + ".log")
    }
}
