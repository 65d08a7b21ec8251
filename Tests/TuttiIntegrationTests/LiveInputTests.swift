import Foundation
import Glibc
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
    /// Another player's audio through a named pipe (`pcm:PATH`), with the transport: its
    /// writer pauses and resumes, tutti pauses and stops reading it.
    @Suite("A live PCM input")
    struct LiveInputTests {
        /// Writes a tone into `fd` in real time, 20 ms at a time, for `seconds`, at `rate`, by
        /// a clock `ppm` fast (negative: slow).
        static func writeTone(_ fd: Int32, hertz: Double, seconds: Double, clock: SystemClock, rate: Int = 48_000, ppm: Double = 0) {
            var phase = 0.0
            var due = clock.nanosecondsNow()
            let frames = rate / 50
            for _ in 0..<Int(seconds * 50) {
                var chunk = [Int16]()
                chunk.reserveCapacity(frames * 2)
                for _ in 0..<frames {
                    let v = Int16(sin(phase) * 0.4 * 32_767)
                    chunk += [v, v]
                    phase += 2 * .pi * hertz / Double(rate)
                }
                let written = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                #expect(written == frames * 4, "the pipe refused the tone: \(String(cString: strerror(errno)))")
                due += Int64((20_000_000 / (1 + ppm * 1e-6)).rounded())
                var at = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
                _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nil)
            }
        }

        /// The tone's frequency in the room at local time `time`, from zero crossings over 200 ms.
        static func frequency(_ room: ControlTests.Room, at time: Int64) -> Double {
            let from = room.frame(at: time), count = 9_600
            guard from >= 0, from + count < room.samples.count else { return 0 }
            var crossings = 0
            for i in (from + 1)..<(from + count) where (room.samples[i - 1] < 0) != (room.samples[i] < 0) { crossings += 1 }
            return Double(crossings) / 2 / 0.2
        }

        /// A house that plays a named pipe (`pcm:`, made here) into room `a`, which writes WAV.
        static func pipeHouse(_ name: String) throws -> (Harness, String, ControlTests, ControlAPI) {
            let h = try Harness(name)
            let fifo = h.path("player.fifo")
            try #require(mkfifo(fifo, 0o600) == 0)
            let control = ControlTests()
            let clock = try control.coordinator(h, ["pcm:" + fifo])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            return (h, fifo, control, try ControlAPI(h))
        }

        /// Where the room has no tone between local times `from` and `to`: 10 ms windows
        /// quieter than a tone of amplitude 0.4 ever is, and the largest step between two
        /// samples (a tone's own is 0.4 × 2π × f / 48 kHz; a cut or a skipped frame steps
        /// further).
        static func gaps(_ room: ControlTests.Room, from: Int64, to: Int64) -> (quiet: [Double], step: Float) {
            let first = max(1, room.frame(at: from)), last = min(room.samples.count, room.frame(at: to))
            guard last > first + 480 else { return ([Double(from) / 1e9], 1) }
            var quiet: [Double] = []
            for w in stride(from: first, to: last - 480, by: 480) {
                let power = room.samples[w..<(w + 480)].reduce(0) { $0 + $1 * $1 } / 480
                if power < 0.2 * 0.2 { quiet.append(Double(w - room.frame(at: from)) / 48_000) }
            }
            let window = room.samples[first..<last]
            let step = zip(window, window.dropFirst()).map { abs($1 - $0) }.max() ?? 1
            return (quiet, step)
        }

        /// Every writer as people feed a pipe, one after another into one named pipe: `cat`
        /// of a raw file and `ffmpeg` without `-re` (both write as fast as the pipe takes),
        /// a writer in real time, and writers whose clocks run 300 ppm fast and slow. Each
        /// plays continuously at its own pitch, with nothing of it dropped but what came
        /// before the room could play, and with no new epoch but where a writer ends and the
        /// next begins.
        @Test func everyWriterPlaysContinuouslyWhetherItPacesItselfOrNot() throws {
            let (h, fifo, control, api) = try Self.pipeHouse("writers")
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.first?.report?.state) != nil })
            let monotonic = SystemClock()

            // 3 s of a 440 Hz tone as a raw file, for cat.
            var tone = [Int16]()
            for i in 0..<(48_000 * 3) {
                let v = Int16(sin(2 * .pi * 440 * Double(i) / 48_000) * 0.4 * 32_767)
                tone += [v, v]
            }
            let raw = h.path("tone.raw")
            try tone.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: raw))
            /// Runs a writer whose output is the pipe; returns when it started and ended, once
            /// the room has played what it wrote and a second more.
            func unpaced(_ name: String, _ args: [String], seconds: Double) throws -> (Int64, Int64) {
                let began = monotonic.nanosecondsNow()
                let writer = try ChildProcess(args, stdoutPath: fifo, stderrPath: h.path(name + ".log"))
                defer { writer.terminate(grace: 1) }
                #expect(writer.wait(timeout: 15) == 0, "\(name) did not finish: \(h.log(name))")
                let ended = monotonic.nanosecondsNow()
                Thread.sleep(forTimeInterval: max(0, Double(began - ended) / 1e9 + seconds + 1))
                return (began, ended)
            }
            var phases: [(name: String, hertz: Double, began: Int64, ended: Int64, seconds: Double)] = []
            let (catBegan, catEnded) = try unpaced("cat", ["cat", raw], seconds: 3)
            phases.append(("cat", 440, catBegan, catEnded, 3))
            let (ffBegan, ffEnded) = try unpaced("ffmpeg", ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                                                            "sine=frequency=550:sample_rate=48000:duration=3", "-af", "volume=3.2",
                                                            "-ac", "2", "-f", "s16le", "-"], seconds: 3)
            phases.append(("ffmpeg", 550, ffBegan, ffEnded, 3))
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            for (name, hertz, ppm) in [("real time", 660.0, 0.0), ("300 ppm fast", 770, 300), ("300 ppm slow", 880, -300)] {
                let began = monotonic.nanosecondsNow()
                Self.writeTone(fd, hertz: hertz, seconds: 2, clock: monotonic, ppm: ppm)
                phases.append((name, hertz, began, monotonic.nanosecondsNow(), 2))
                Thread.sleep(forTimeInterval: 0.7)
            }
            h.stop("a")

            let room = try control.wav(h.path("a.wav"))
            for (index, phase) in phases.enumerated() {
                // Heard from about the latency after it began (a writer that runs ahead loses
                // the little of its start that was already too late; a program takes a moment
                // to start), for as long as it is.
                let heardFirst = room.firstSound(after: phase.began)
                let first = try #require(heardFirst, "\(phase.name) was never heard")
                let next = index + 1 < phases.count ? phases[index + 1].began + 100_000_000 : first + Int64((phase.seconds + 1) * 1e9)
                let heardLast = room.lastSound(before: next)
                let last = try #require(heardLast)
                let unpaced = phase.name == "cat" || phase.name == "ffmpeg"
                #expect(first - phase.began < (unpaced ? 700_000_000 : 400_000_000),
                        "\(phase.name) was heard \((first - phase.began) / 1_000_000) ms after it began")
                let heard = Double(last - first) / 1e9
                #expect(heard > phase.seconds - 0.25 && heard < phase.seconds + 0.02, "\(phase.name): \(heard) s heard of \(phase.seconds)")
                // Continuous, and at its pitch (read no faster than it plays); the rooms fade
                // in and out over a few tens of milliseconds where a writer begins and ends.
                let (quiet, step) = Self.gaps(room, from: first + 100_000_000, to: last - 100_000_000)
                #expect(quiet.isEmpty, "\(phase.name): quiet at \(quiet.prefix(8)) s of it")
                #expect(step < 0.1, "\(phase.name): a step of \(step)")
                #expect(abs(Self.frequency(room, at: first + 1_000_000_000) - phase.hertz) < 10, "\(phase.name)")
                if unpaced {
                    // The writer waited for the room: its last write went about when the
                    // room was half a second from its end (what the pipe and a read hold),
                    // not at once.
                    let wrote = Double(phase.ended - phase.began) / 1e9
                    #expect(wrote > phase.seconds - 1.2, "\(phase.name) wrote its \(phase.seconds) s in \(wrote) s: \(h.log("coordinator"))")
                }
            }
            let log = h.log("coordinator")
            // A new epoch where each writer began (after the first), and nowhere else.
            let realigned = log.components(separatedBy: "realigning").count - 1
            #expect(realigned <= phases.count - 1, "\(realigned) realignments: \(log)")
        }

        /// The README's recipe for MPD, with MPD itself: its fifo output (48000:16:2) into the
        /// coordinator's `--pcm`. MPD paces itself (by its own timer, not the pipe): it is
        /// followed as a writer in real time, and its track plays whole, at its pitch.
        @Test func mpdsFifoOutputPlaysThroughTheHouse() throws {
            let h = try Harness("mpd")
            for tool in ["mpd", "mpc", "sox"] where ChildProcess.find(tool) == nil {
                print("mpdsFifoOutputPlaysThroughTheHouse skipped: \(tool) is not installed (deploy/test-setup.sh installs it)")
                return
            }
            let music = h.path("music")
            try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: h.path("playlists"), withIntermediateDirectories: true)
            #expect(try h.run("sox", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", music + "/tone.wav", "synth", "3", "sine", "660",
                                      "vol", "0.4"]).code == 0)
            let fifo = h.path("mpd.fifo")
            try #require(mkfifo(fifo, 0o600) == 0)
            let port = Harness.freePort()
            try """
                music_directory "\(music)"
                playlist_directory "\(h.path("playlists"))"
                db_file "\(h.path("mpd.db"))"
                state_file "\(h.path("mpd.state"))"
                pid_file "\(h.path("mpd.pid"))"
                bind_to_address "127.0.0.1"
                port "\(port)"
                audio_output {
                    type "fifo"
                    name "tutti"
                    path "\(fifo)"
                    format "48000:16:2"
                }
                """.write(toFile: h.path("mpd.conf"), atomically: true, encoding: .utf8)
            let control = ControlTests()
            let clock = try control.coordinator(h, [], ["--pcm", fifo])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.first?.report?.state) != nil })
            try h.start("mpd", ["mpd", "--no-daemon", "--stderr", h.path("mpd.conf")])
            let mpc = ["mpc", "-h", "127.0.0.1", "-p", "\(port)"]
            #expect(Harness.wait(timeout: 10) { (try? h.run("mpc-status", mpc + ["status"]))?.code == 0 }, "\(h.log("mpd"))")
            #expect(try h.run("mpc-update", mpc + ["update", "--wait"]).code == 0)
            #expect(try h.run("mpc-add", mpc + ["add", "tone.wav"]).code == 0, "\(h.log("mpd"))")
            let monotonic = SystemClock()
            let began = monotonic.nanosecondsNow()
            #expect(try h.run("mpc-play", mpc + ["play"]).code == 0)
            Thread.sleep(forTimeInterval: 4.5)
            h.stop("a")
            h.stop("mpd")

            let room = try control.wav(h.path("a.wav"))
            let heardFirst = room.firstSound(after: began)
            let first = try #require(heardFirst, "MPD was never heard: \(h.log("coordinator")) \(h.log("mpd"))")
            let heardLast = room.lastSound(before: first + 5_000_000_000)
            let last = try #require(heardLast)
            #expect(first - began < 600_000_000, "heard \((first - began) / 1_000_000) ms after play")
            let heard = Double(last - first) / 1e9
            #expect(heard > 2.8 && heard < 3.05, "\(heard) s of the 3 s track heard")
            let (quiet, step) = Self.gaps(room, from: first + 100_000_000, to: last - 100_000_000)
            #expect(quiet.isEmpty && step < 0.1, "quiet at \(quiet.prefix(8)) s, a step of \(step)")
            #expect(abs(Self.frequency(room, at: first + 1_500_000_000) - 660) < 10)
            #expect(!h.log("coordinator").contains("runs ahead"), "MPD paces itself: \(h.log("coordinator"))")
        }

        /// The house as a Spotify Connect speaker (`--source librespot:NAME`), with a stand-in
        /// for librespot that behaves as it does (bench/lib/librespot_standin.py): it writes a
        /// 44.1 kHz tone as fast as the pipe takes and names the track through its event
        /// hook. Now playing shows what the sender named; the room hears the tone whole, at
        /// its pitch; the receiver ends with the coordinator.
        @Test func aSpotifyConnectReceiverPlaysWhatItsSenderNames() throws {
            let h = try Harness("librespot")
            h.environment["PATH"] = try h.standIn("librespot", script: "librespot_standin.py")
            h.environment["STANDIN_PIDFILE"] = h.path("librespot.pid")
            h.environment["STANDIN_SECONDS"] = "3"
            let control = ControlTests()
            let clock = try control.coordinator(h, [], ["--source", "librespot:Stofa"])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            let api = try ControlAPI(h)
            let monotonic = SystemClock()
            let began = monotonic.nanosecondsNow()
            #expect(Harness.wait(timeout: 8) { (try? api.nowPlaying.title) == "Hljómalind" }, "\((try? api.nowPlaying).map { "\($0)" } ?? "")")
            let card = try api.nowPlaying
            #expect(card.artist == "Sigur Rós, Jónsi" && card.album == "Með suð í eyrum við spilum endalaust" && card.duration == nil, "\(card)")
            #expect(card.path == "librespot:Stofa")
            // A receiver cannot seek.
            let seek = try api.call("POST", "/transport/seek", json: #"{"position": 2}"#)
            #expect(seek.status == 409, "\(seek)")
            Thread.sleep(forTimeInterval: max(0, 5 - Double(monotonic.nanosecondsNow() - began) / 1e9))
            h.stop("a")

            let room = try control.wav(h.path("a.wav"))
            let heardFirst = room.firstSound(after: began)
            let first = try #require(heardFirst, "the tone was never heard")
            let heardLast = room.lastSound(before: first + 5_000_000_000)
            let last = try #require(heardLast)
            let heard = Double(last - first) / 1e9
            #expect(heard > 2.75 && heard < 3.02, "\(heard) s of the 3 s tone heard")
            let (quiet, step) = Self.gaps(room, from: first + 100_000_000, to: last - 100_000_000)
            #expect(quiet.isEmpty && step < 0.1, "quiet at \(quiet.prefix(8)) s, a step of \(step)")
            #expect(abs(Self.frequency(room, at: first + 1_500_000_000) - 660) < 10)

            // The receiver ends with the coordinator.
            let pid = try #require(Int32(String(decoding: Files.read(h.path("librespot.pid")) ?? [], as: UTF8.self)))
            h.stop("coordinator")
            #expect(Harness.wait(timeout: 5) { kill(pid, 0) != 0 }, "librespot (pid \(pid)) outlived the coordinator")
        }

        @Test func aPipedInputFallsQuietWithItsWriterAndComesBackAndIsNotReadWhilePaused() throws {
            let (h, fifo, control, api) = try Self.pipeHouse("live")
            #expect(Harness.wait(timeout: 5) { h.log("coordinator").contains("playing PCM input \(fifo)") })
            let card = try api.nowPlaying
            #expect(card.title == "PCM input \(fifo)" && card.duration == nil && card.path == "pcm:" + fifo, "\(card)")
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.first?.report?.state) != nil })

            // The writer: a 440 Hz tone for 2 s, nothing for 1.5 s, 660 Hz for 2 s.
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let monotonic = SystemClock()
            let firstAt = monotonic.nanosecondsNow()
            Self.writeTone(fd, hertz: 440, seconds: 2, clock: monotonic)
            let quietAt = monotonic.nanosecondsNow()
            Thread.sleep(forTimeInterval: 1.5)
            let resumedAt = monotonic.nanosecondsNow()
            Self.writeTone(fd, hertz: 660, seconds: 2, clock: monotonic)

            // Paused, tutti stops reading: the pipe fills and refuses more.
            let paused = try #require(try api.change("POST", "/transport/pause"))
            #expect(paused.state == .paused)
            // (The player reads until the pause's cut, a few hundred milliseconds at most on
            // a loaded machine; then never again.)
            Thread.sleep(forTimeInterval: 0.8)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var accepted = 0
            let block = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<100 {
                let n = block.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                accepted += n
            }
            #expect(accepted <= 70_000, "the paused input was still read: \(accepted) bytes went in")
            // A live input cannot seek.
            let seek = try api.call("POST", "/transport/seek", json: #"{"position": 5}"#)
            #expect(seek.status == 409 && seek.body.contains("cannot seek"), "\(seek)")
            Thread.sleep(forTimeInterval: 0.3)
            h.stop("a")

            let room = try control.wav(h.path("a.wav"))
            // The first tone, heard about the latency (150 ms) after it was written.
            let heard = try #require(room.firstSound(after: firstAt))
            #expect(heard - firstAt > 100_000_000 && heard - firstAt < 400_000_000,
                    "the tone was heard \((heard - firstAt) / 1_000_000) ms after it was written")
            #expect(abs(Self.frequency(room, at: firstAt + 1_000_000_000) - 440) < 15)
            // Quiet while the writer was, and back with the second tone.
            let fellQuiet = try #require(room.lastSound(before: resumedAt + 100_000_000))
            #expect(abs(fellQuiet - quietAt - 150_000_000) < 120_000_000,
                    "the room fell quiet \((fellQuiet - quietAt) / 1_000_000) ms after the writer paused")
            let back = try #require(room.firstSound(after: fellQuiet + 10_000_000))
            #expect(back - resumedAt > 100_000_000 && back - resumedAt < 400_000_000,
                    "the room came back \((back - resumedAt) / 1_000_000) ms after the writer resumed")
            #expect(abs(Self.frequency(room, at: resumedAt + 1_000_000_000) - 660) < 15)
            #expect(h.log("coordinator").contains("realigning"), "the writer's pause did not realign the timeline")
        }

        /// Another player's 44.1 kHz audio in two rooms: converted to 48 kHz (the same pitch),
        /// quiet without a click while its writer pauses, and back in both rooms together.
        @Test func aFortyFourKilohertzPipeGoesQuietWithoutAClickAndComesBackInSyncInTwoRooms() throws {
            let h = try Harness("live44")
            let fifo = h.path("mpd.fifo")
            try #require(mkfifo(fifo, 0o600) == 0)
            let control = ControlTests()
            let clock = try control.coordinator(h, [], ["--pcm", fifo, "--pcm-rate", "44100"])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            try control.follower(h, "b", clock: clock, output: "wav:" + h.path("b.wav"))
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.filter { $0.report?.state != nil }.count) == 2 })
            #expect(try api.nowPlaying.path == "pcm:" + fifo + "?rate=44100")

            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let monotonic = SystemClock()
            let firstAt = monotonic.nanosecondsNow()
            Self.writeTone(fd, hertz: 440, seconds: 2, clock: monotonic, rate: 44_100)
            let quietAt = monotonic.nanosecondsNow()
            Thread.sleep(forTimeInterval: 1.5)
            let resumedAt = monotonic.nanosecondsNow()
            Self.writeTone(fd, hertz: 660, seconds: 2, clock: monotonic, rate: 44_100)
            Thread.sleep(forTimeInterval: 0.4)
            for name in ["a", "b"] { h.stop(name) }

            let a = try control.wav(h.path("a.wav")), b = try control.wav(h.path("b.wav"))
            for room in [a, b] {
                #expect(abs(Self.frequency(room, at: firstAt + 1_000_000_000) - 440) < 10)
                #expect(abs(Self.frequency(room, at: resumedAt + 1_000_000_000) - 660) < 10)
                // Quiet while the writer was: faded, no step between two samples larger than
                // the tone's own (0.4 × 2π × 660 / 48,000 = 0.035).
                let fellQuiet = try #require(room.lastSound(before: resumedAt + 100_000_000))
                #expect(abs(fellQuiet - quietAt - 150_000_000) < 120_000_000)
                let around = room.frame(at: fellQuiet)
                let window = room.samples[max(1, around - 2_400)..<min(room.samples.count, around + 2_400)]
                let step = zip(window, window.dropFirst()).map { abs($1 - $0) }.max() ?? 1
                #expect(step < 0.05, "a step of \(step) where the room fell quiet")
            }
            let backA = try #require(a.firstSound(after: resumedAt)), backB = try #require(b.firstSound(after: resumedAt))
            // Where a fading-in tone first passes 0.002 moves by its half periods (0.76 ms at
            // 660 Hz) between two rooms a few samples apart: the lag below is the measure.
            #expect(abs(backA - backB) < 2_000_000, "the rooms came back \(abs(backA - backB) / 1000) µs apart")
            let probe = backA + 1_000_000_000
            // A tone repeats every 73 samples: look within a third of that (the sound's return
            // above already places the rooms within a millisecond).
            let lag = try #require(a.lag(against: b.samples, at: probe, sourceFrame: b.frame(at: probe), search: 24))
            #expect(abs(lag) < 3, "the rooms are \(lag) samples apart after the writer came back")
        }
    }
}
