import Foundation
import Glibc
import Synchronization
import Testing
import TuttiCore
import TuttiNet
@testable import TuttiNode

@Suite("The coordinator's player")
struct PlayerTests {
    /// Regression: once the queue had ended, the player's thread spun at 100 % of a core
    /// (`nextPacket` had nothing to encode, and the loop asked again at once). It must rest:
    /// its thread's CPU time over 1.5 s after the end stays far below that.
    @Test func restsOnceTheQueueHasEnded() throws {
        let dir = NSTemporaryDirectory() + "tutti-player-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for args in [["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", dir + "/short.wav", "synth", "0.3", "sine", "440"],
                     ["lame", "--quiet", "-b", "128", dir + "/short.wav", dir + "/short.mp3"]] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = args
            try p.run()
            p.waitUntilExit()
            try #require(p.terminationStatus == 0, "\(args[0]) failed")
        }
        let sent = Mutex(0)
        let stop = StopFlag()
        let player = try Player(configuration: .init(), ssrc: 7, stopFlag: stop, clock: SystemClock(),
                                send: { _ in sent.withLock { $0 += 1 } }, sendReport: { _ in })
        // The house's part, as it plays the last track of the queue: when it ends, the epoch
        // is cut there (`Transport.trackEnded` with nothing after it).
        let ended = Mutex(false)
        player.onNews = { [weak player] news in
            guard case let .ended(_, at) = news else { return }
            ended.withLock { $0 = true }
            player?.perform([.cut(epoch: 1, at: at)])
        }
        let cpu = Mutex<Double?>(nil)
        let thread = Thread {
            player.run()
            var used = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used)
            cpu.withLock { $0 = Double(used.tv_sec) + Double(used.tv_nsec) / 1e9 }
        }
        thread.start()
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = CoordinatorTime(nanoseconds: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) + 50_000_000)
        player.perform([.start(TimelineSegment(epoch: 1, itemID: 1, position: 0, at: start))], paths: [1: dir + "/short.mp3"])
        // 0.3 s of audio sent 150 ms ahead: over by 0.5 s; then 1.5 s of nothing to do.
        Thread.sleep(forTimeInterval: 2.0)
        stop.set()
        player.wake()
        for _ in 0..<100 where cpu.withLock({ $0 == nil }) { Thread.sleep(forTimeInterval: 0.02) }
        #expect(ended.withLock { $0 })
        #expect((14...18).contains(sent.withLock { $0 }), "0.3 s in 20 ms packets (and the encoder's delay): \(sent.withLock { $0 })")
        let used = try #require(cpu.withLock { $0 }, "the player's thread did not stop")
        #expect(used < 0.3, "the player's thread used \(used) s of CPU in 2 s")
    }

    /// A live input whose writer went away gives nothing at every read (each waits a little):
    /// the player reads it again and again, and must still stop when told (a coordinator
    /// stopping with a silent pipe hung).
    @Test func stopsWhileALiveInputGivesNothing() throws {
        final class SilentPipe: FrameSource {
            let name = "silent pipe"
            let isLive = true
            let framesRead: Int64 = 0
            let length: MediaFrames? = nil
            func read(into output: inout [Float]) throws -> Int? {
                Thread.sleep(forTimeInterval: 0.005)
                return nil
            }
            func seek(to position: MediaFrames) throws {}
        }
        let stop = StopFlag()
        let player = try Player(configuration: .init(), ssrc: 7, stopFlag: stop, clock: SystemClock(), opener: { _ in SilentPipe() },
                                send: { _ in }, sendReport: { _ in })
        let done = Mutex(false)
        let thread = Thread {
            player.run()
            done.withLock { $0 = true }
        }
        thread.start()
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = CoordinatorTime(nanoseconds: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) + 50_000_000)
        player.perform([.start(TimelineSegment(epoch: 1, itemID: 1, position: 0, at: start))], paths: [1: "pcm:/silent"])
        Thread.sleep(forTimeInterval: 0.3)
        stop.set()
        player.wake()
        for _ in 0..<100 where !done.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
        #expect(done.withLock { $0 }, "the player did not stop within a second")
    }
}
