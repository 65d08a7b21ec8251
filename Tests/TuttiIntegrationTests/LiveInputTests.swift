import Foundation
import Glibc
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet

extension IntegrationTests {
    /// Another player's audio through a named pipe (`pcm:PATH`), with the transport: its
    /// writer pauses and resumes, tutti pauses and stops reading it.
    @Suite("A live PCM input")
    struct LiveInputTests {
        /// Writes a tone into `fd` in real time, 20 ms at a time, for `seconds`, at `rate`.
        static func writeTone(_ fd: Int32, hertz: Double, seconds: Double, clock: SystemClock, rate: Int = 48_000) {
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
                due += 20_000_000
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

        @Test func aPipedInputFallsQuietWithItsWriterAndComesBackAndIsNotReadWhilePaused() throws {
            let h = try Harness("live")
            let fifo = h.path("player.fifo")
            try #require(mkfifo(fifo, 0o600) == 0)
            let control = ControlTests()
            let clock = try control.coordinator(h, ["pcm:" + fifo])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            let api = try ControlAPI(h)
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
            #expect(abs(backA - backB) < 1_000_000, "the rooms came back \(abs(backA - backB) / 1000) µs apart")
            let probe = backA + 1_000_000_000
            // A tone repeats every 73 samples: look within a third of that (the sound's return
            // above already places the rooms within a millisecond).
            let lag = try #require(a.lag(against: b.samples, at: probe, sourceFrame: b.frame(at: probe), search: 24))
            #expect(abs(lag) < 3, "the rooms are \(lag) samples apart after the writer came back")
        }
    }
}
