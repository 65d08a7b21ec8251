import Foundation
import Glibc
import Synchronization
import Testing
import TuttiCore
@testable import TuttiNet

@Suite("UDP sockets and addresses")
struct NetTests {
    @Test func parsesAddresses() throws {
        let a = try SocketAddress(parsing: "127.0.0.1:5005", defaultPort: 1)
        #expect(a.address == 0x7F00_0001 && a.port == 5005)
        #expect(try SocketAddress(parsing: "localhost", defaultPort: 77).port == 77)
        #expect(try SocketAddress(parsing: "239.255.77.77:5004", defaultPort: 1).isMulticast)
        #expect(throws: AddressError.self) { try SocketAddress(parsing: "host:notaport", defaultPort: 1) }
        #expect(throws: AddressError.self) { try SocketAddress(parsing: ":5", defaultPort: 1) }
        #expect(throws: AddressError.self) { try SocketAddress(parsing: "no-such-host.invalid", defaultPort: 1) }
    }

    @Test func sendsAndReceivesOnLoopback() throws {
        let a = try UDPSocket()
        try a.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        let b = try UDPSocket()
        try b.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        let to = try a.localAddress()
        try b.send([1, 2, 3], to: to)
        let got = try #require(try a.receive(timeoutMilliseconds: 1000))
        #expect(got.bytes == [1, 2, 3])
        #expect(got.from == (try b.localAddress()))
        #expect(try a.receive(timeoutMilliseconds: 10) == nil)
    }

    /// Datagrams received into recycled storage: a datagram still held keeps its bytes, and
    /// the storage of one let go is received into again, the same memory.
    @Test func datagramsAreReceivedIntoTheStorageOfThoseLetGo() throws {
        let a = try UDPSocket()
        try a.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        let b = try UDPSocket()
        let to = try a.localAddress()
        var storage = RecycledStorage(count: 2)
        func next() throws -> Datagram? {
            var spare = storage.take()
            guard let got = try a.receiveWaiting(reusing: &spare) else {
                storage.keep(spare)
                return nil
            }
            storage.keep(got.bytes)
            return got
        }
        func address(_ bytes: [UInt8]) -> UInt { bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(try next() == nil)
        for k: UInt8 in 0..<4 { try b.send([k, k, k], to: to) }
        usleep(20_000)
        let held = try #require(try next())  // slot 0, held on to
        var first = try #require(try next())  // slot 1
        let firstAddress = address(first.bytes)
        first = Datagram(bytes: [], from: first.from, receivedAt: 0)  // let go
        let third = try #require(try next())  // slot 0 again: still held, so new storage
        let fourth = try #require(try next())  // slot 1 again: let go, so the same storage
        #expect(held.bytes == [0, 0, 0] && third.bytes == [2, 2, 2] && fourth.bytes == [3, 3, 3])
        #expect(address(fourth.bytes) == firstAddress)
        #expect(address(third.bytes) != address(held.bytes))
        // Longer than the storage had room for: it grows.
        try b.send([UInt8](repeating: 7, count: 3_000), to: to)
        usleep(20_000)
        #expect(try next()?.bytes == [UInt8](repeating: 7, count: 3_000))
    }

    /// Kernel receive stamps: the datagram's arrival, not the moment this thread read it.
    @Test func kernelStampsTheArrivalTime() throws {
        let a = try UDPSocket()
        try a.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        #expect(a.enableReceiveTimestamps())
        let b = try UDPSocket()
        // The kernel turns stamping on lazily (deferred work) the first time any socket asks;
        // until then it stamps at reading time. Wait for it the way a long-running process does.
        usleep(100_000)
        let clock = SystemClock()
        let sent = clock.nanosecondsNow()
        try b.send([9], to: try a.localAddress())
        usleep(50_000)  // the datagram waits 50 ms before anyone reads it
        let got = try #require(try a.receive(timeoutMilliseconds: 1000))
        let read = clock.nanosecondsNow()
        #expect(got.bytes == [9])
        #expect(got.receivedAt >= sent - 1_000_000 && got.receivedAt < sent + 20_000_000, "stamped \((got.receivedAt - sent) / 1000) µs after sending")
        #expect(read - got.receivedAt >= 40_000_000)
    }

    @Test func bindingATakenPortIsATypedError() throws {
        let a = try UDPSocket()
        try a.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        let b = try UDPSocket()
        let error = #expect(throws: SystemError.self) { try b.bind(try a.localAddress()) }
        #expect(error?.description.contains("bind") == true)
    }

    /// A clock whose readings are scripted: a thread preempted between two of them is one
    /// whose readings lie apart.
    final class ScriptedClock: MonotonicClock {
        private let readings: Mutex<[Int64]>
        init(_ readings: [Int64]) { self.readings = Mutex(readings) }
        func nanosecondsNow() -> Int64 { readings.withLock { $0.removeFirst() } }
    }

    /// A kernel stamp (wall clock) converts with the pair of readings taken at one moment: a
    /// pair read across a preemption is tried again, and of three, the closest is taken.
    @Test func theWallClockIsReadTogetherWithThisProcesssClock() {
        let wall = SystemClock.wallNanoseconds()
        let preempted = SystemClock.readWithWallClock(ScriptedClock([1_000, 5_001_000, 6_000_000, 6_000_010]))
        #expect(preempted.local == 6_000_005 && preempted.wall >= wall && preempted.wall - wall < 1_000_000_000)
        let always = SystemClock.readWithWallClock(ScriptedClock([0, 900_000, 1_000_000, 1_300_000, 2_000_000, 2_500_000]))
        #expect(always.local == 1_150_000)
        let calm = SystemClock.readWithWallClock(ScriptedClock([10, 20]))
        #expect(calm.local == 15)
        // A stamp taken now converts to about now.
        let clock = SystemClock()
        let before = clock.nanosecondsNow()
        let local = clock.local(ofWallClock: SystemClock.wallNanoseconds())
        #expect(local >= before - 1_000_000 && local <= clock.nanosecondsNow())
    }

    @Test func monotonicClockMoves() {
        let c = SystemClock()
        let t0 = c.nanosecondsNow()
        var t1 = t0
        while t1 == t0 { t1 = c.nanosecondsNow() }
        #expect(t1 > t0)
    }
}

@Suite("Atomic files")
struct AtomicFileTests {
    @Test func writesReplaceWholeFilesAndFailuresNameTheFile() throws {
        let dir = NSTemporaryDirectory() + "tutti-atomic-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.sdp"
        try AtomicFile.write(Data("first".utf8), to: path)
        try AtomicFile.write(Data("second".utf8), to: path, permissions: 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second")
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
        do {
            try AtomicFile.write(Data(), to: dir + "/missing/x")
            Issue.record("a file in a missing folder was written")
        } catch {
            #expect(error.errno == ENOENT && error.description.contains(dir + "/missing/x"), "\(error)")
        }
    }

    /// Another local user who made the old temporary names first (`PATH.tmp-PID`, a file
    /// they can read, or a link to one) learns nothing: the temporary file has a name of its
    /// own and is always new, with the saved file's permissions.
    @Test func aPlantedTemporaryFileIsNeitherUsedNorFollowed() throws {
        let dir = NSTemporaryDirectory() + "tutti-atomic-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/stream.sdp"
        let planted = path + ".tmp-\(getpid())"
        try Data().write(to: URL(fileURLWithPath: planted))
        chmod(planted, 0o666)
        let elsewhere = dir + "/theirs"
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: elsewhere))
        try FileManager.default.createSymbolicLink(atPath: path + ".tmp-link", withDestinationPath: elsewhere)
        try AtomicFile.write(Data("a=crypto:secret".utf8), to: path, permissions: 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: planted)).isEmpty, "the planted file got the secret")
        #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == "theirs")
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a=crypto:secret")
    }
}
