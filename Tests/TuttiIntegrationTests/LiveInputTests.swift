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
        /// Writes a tone into `fd` in real time, 20 ms at a time, for `seconds`.
        static func writeTone(_ fd: Int32, hertz: Double, seconds: Double, clock: SystemClock) {
            var phase = 0.0
            var due = clock.nanosecondsNow()
            for _ in 0..<Int(seconds * 50) {
                var chunk = [Int16]()
                chunk.reserveCapacity(1920)
                for _ in 0..<960 {
                    let v = Int16(sin(phase) * 0.4 * 32_767)
                    chunk += [v, v]
                    phase += 2 * .pi * hertz / 48_000
                }
                let written = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                #expect(written == 3840, "the pipe refused the tone: \(String(cString: strerror(errno)))")
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
            Thread.sleep(forTimeInterval: 0.3)
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
    }
}
