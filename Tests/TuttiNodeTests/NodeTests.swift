import Foundation
import Testing
import TuttiCore
import TuttiNet
import TuttiSecurity
@testable import TuttiFollower
@testable import TuttiNode

@Suite("Track sources and files")
struct NodeTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "tutti-node-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir + "/b/inner", withIntermediateDirectories: true)
        return dir
    }

    /// What `inputs` expand to, as queue entries.
    static func expand(_ inputs: [String]) async throws -> [String] {
        try await TrackSource.expand(inputs).map(\.location)
    }

    @Test func foldersArePlayedSortedAndRecursively() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["b/inner/3.mp3", "b/2.MP3", "a10.mp3", "a2.mp3", "notes.txt", "cover.jpg"] {
            #expect(FileManager.default.createFile(atPath: dir + "/" + name, contents: Data([0])))
        }
        let tracks = try await Self.expand([dir]).map { String($0.dropFirst(dir.count + 1)) }
        #expect(tracks == ["a2.mp3", "a10.mp3", "b/2.MP3", "b/inner/3.mp3"])
    }

    @Test func playlistsResolveRelativeToThemselves() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "#EXTM3U\n#EXTINF:1,One\nb/one.mp3\n/abs/two.mp3\n".write(toFile: dir + "/list.m3u8", atomically: true, encoding: .utf8)
        #expect(try await TrackSource.expand([dir + "/list.m3u8"]) == [.init(location: dir + "/b/one.mp3", title: "One"),
                                                                       .init(location: "/abs/two.mp3")])
    }

    /// Playlists hold playlists (M3U and PLS), URLs stay as they are, and a playlist that
    /// includes itself, directly or through another, is refused with the chain.
    @Test func nestedPlaylistsExpandAndOneThatIncludesItselfIsRefused() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(FileManager.default.createFile(atPath: dir + "/song.mp3", contents: Data([0])))
        try "[playlist]\nFile1=song.mp3\nTitle1=Song\nFile2=http://radio.example/live\nTitle2=Radio\n"
            .write(toFile: dir + "/inner.pls", atomically: true, encoding: .utf8)
        try "inner.pls\nb/../song.mp3\n".write(toFile: dir + "/outer.m3u", atomically: true, encoding: .utf8)
        #expect(try await Self.expand([dir + "/outer.m3u"]) == [dir + "/song.mp3", "http://radio.example/live", dir + "/b/../song.mp3"])
        try "song.mp3\nloop.m3u\n".write(toFile: dir + "/loop.m3u", atomically: true, encoding: .utf8)
        let direct = await #expect(throws: SourceError.self) { try await Self.expand([dir + "/loop.m3u"]) }
        #expect(direct?.description == "playlist loop.m3u includes itself (loop.m3u → loop.m3u): refused")
        try "a.m3u8\n".write(toFile: dir + "/b.m3u8", atomically: true, encoding: .utf8)
        try "b.m3u8\n".write(toFile: dir + "/a.m3u8", atomically: true, encoding: .utf8)
        let through = await #expect(throws: SourceError.self) { try await Self.expand([dir + "/a.m3u8"]) }
        #expect(through?.description == "playlist a.m3u8 includes itself (a.m3u8 → b.m3u8 → a.m3u8): refused")
    }

    /// A URL is named without asking its server: by a playlist's title when one gave it
    /// (even after it was first known by its name), else by its last path component.
    @Test func urlsAreNamedByTheirPlaylistElseTheirName() {
        let library = TrackLibrary()
        #expect(library.info("http://host/music/Night%20Drive.mp3").tags.title == "Night Drive")
        library.suggest([.init(location: "http://host/music/Night%20Drive.mp3", title: "Night Drive (live)")])
        #expect(library.known("http://host/music/Night%20Drive.mp3").tags.title == "Night Drive (live)")
        library.suggest([.init(location: "http://radio/stream", title: "Tutti FM")])
        #expect(library.info("http://radio/stream").tags.title == "Tutti FM")
        #expect(library.artwork("http://radio/stream") == nil, "nothing is fetched for artwork")
    }

    @Test func missingInputIsAClearError() async {
        let error = await #expect(throws: SourceError.self) { try await Self.expand(["/no/such/folder"]) }
        #expect(error?.description.contains("/no/such/folder") == true)
    }

    /// Regression: `queue add` took any file (a named pipe blocked the API for over 10 s and
    /// then the player; `/dev/zero`, `/etc/shadow`). Only folders, playlists and regular
    /// audio files are taken; everything else is refused at once with what it is.
    @Test func onlyRegularAudioFilesAreTakenAndNothingElseIsOpened() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkfifo(dir + "/pipe.mp3", 0o600) == 0)
        #expect(FileManager.default.createFile(atPath: dir + "/song.mp3", contents: Data([0])))
        #expect(FileManager.default.createFile(atPath: dir + "/secrets", contents: Data([0])))
        for (input, message) in [(dir + "/pipe.mp3", "is a named pipe, not a file"), ("/dev/zero", "/dev/zero is a device"),
                                 (dir + "/secrets", "is not an audio file")] {
            // What it is, from its inode alone (opening a pipe would wait for a writer): timed
            // on this thread, since the expansion's hops to the disk thread wait for the test
            // pool, which other tests keep busy.
            let started = Date()
            _ = TrackSource.kind(input)
            #expect(Date().timeIntervalSince(started) < 1, "\(input) was opened")
            let error = await #expect(throws: SourceError.self) { try await Self.expand([input]) }
            #expect(error?.description.contains(message) == true, "\(input): \(error?.description ?? "accepted")")
        }
        // Folders and playlists leave out what is not a regular audio file.
        try "pipe.mp3\nsong.mp3\n/dev/zero\nsecrets\nlater.mp3\n".write(toFile: dir + "/list.m3u", atomically: false, encoding: .utf8)
        #expect(try await Self.expand([dir + "/list.m3u"]) == [dir + "/song.mp3", dir + "/later.mp3"])
        #expect(try await Self.expand([dir]) == [dir + "/song.mp3"])
    }

    /// Regression: the coordinator bound its clock port with SO_REUSEADDR, so a local user
    /// could bind it too and receive its datagrams. Now the port is the coordinator's alone.
    @Test func theClockPortIsTheCoordinatorsAlone() throws {
        var configuration = Coordinator.Configuration()
        configuration.clockListen = SocketAddress(address: 0x7F00_0001, port: 0)
        let coordinator = try Coordinator(configuration: configuration, ports: .system(configuration, clock: SystemClock()))
        let port = coordinator.clockPort
        #expect(port != 0)
        for reuse in [true, false] {
            let squatter = try UDPSocket()
            #expect(throws: SystemError.self) { try squatter.bind(SocketAddress(address: 0x7F00_0001, port: port), reuse: reuse) }
        }
    }

    @Test func childProcessesAreReapedAndReportTheirExit() throws {
        let ok = try ChildProcess(["true"])
        #expect(ok.wait(timeout: 5) == 0)
        let fail = try ChildProcess(["false"])
        #expect(fail.wait(timeout: 5) == 1)
        let sleeper = try ChildProcess(["sleep", "30"])
        sleeper.terminate(grace: 1)
        #expect(sleeper.exitCode == 128 + SIGTERM)
        #expect(ChildProcess.output(["echo", "hello"])?.contains("hello") == true)
    }
}

@Suite("Clock memory")
struct ClockMemoryTests {
    static let estimate = ClockEstimate(offset: 3_700_000_123, reference: LocalTime(nanoseconds: 50_000_000_000), drift: -41.5e-6,
                                        uncertainty: 23_000, minimumRoundTrip: 9_800_000, sampleCount: 40, driftUncertainty: 1.5e-6,
                                        lastExchange: LocalTime(nanoseconds: 50_100_000_000))

    @Test func keptAtomicallyAndReadBack() throws {
        let dir = NSTemporaryDirectory() + "tutti-clock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = ClockMemory.path(in: dir, room: "Living room/../Küche")
        #expect(path == dir + "/clock-Living_room____K_che.json")
        let memory = ClockMemory(Self.estimate, host: "boot-1", coordinator: "10.0.0.1:5005 ab12", device: "pulse:roomA", deviceRatePPM: -190)
        try memory.save(path: path)
        let read = try #require(ClockMemory.load(path: path))
        #expect(read == memory)
        #expect(read.estimate == ClockEstimate(offset: 3_700_000_123, reference: LocalTime(nanoseconds: 50_000_000_000), drift: -41.5e-6,
                                               uncertainty: 23_000, minimumRoundTrip: 9_800_000, sampleCount: 0,
                                               driftUncertainty: 1.5e-6, lastExchange: LocalTime(nanoseconds: 50_100_000_000)))
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // A damaged file is no memory (it is only a head start), never an error.
        try Data("{\"version\": 1, \"host\":".utf8).write(to: URL(fileURLWithPath: path))
        #expect(ClockMemory.load(path: path) == nil)
        #expect(ClockMemory.load(path: dir + "/none.json") == nil)
    }

    @Test func usedOnlyOnTheSameClocksAndWhileFresh() {
        let memory = ClockMemory(Self.estimate, host: "boot-1", coordinator: "10.0.0.1:5005 ab12")
        let soon = LocalTime(nanoseconds: 51_000_000_000)
        #expect(memory.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: soon) == nil)
        #expect(memory.unusable(host: "boot-2", coordinator: "10.0.0.1:5005 ab12", now: soon)?.contains("another clock") == true)
        #expect(memory.unusable(host: "boot-1", coordinator: "10.0.0.2:5005 ab12", now: soon)?.contains("another coordinator") == true)
        #expect(memory.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: LocalTime(nanoseconds: 50_000_000_000 + 3_700_000_000_000)) == "too old")
        #expect(memory.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: LocalTime(nanoseconds: 1_000)) == "too old")
        var damaged = memory
        damaged.drift = 5
        #expect(damaged.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: soon)?.contains("out of range") == true)
        damaged = memory
        damaged.deviceRatePPM = -1e9
        #expect(damaged.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: soon)?.contains("out of range") == true)
        var estimator = ClockEstimator()
        estimator.resume(from: ClockMemory(Self.estimate, host: "b", coordinator: "c").estimate)
        #expect(estimator.remembered != nil)
        var wild = Self.estimate
        wild.drift = 0.5
        estimator = ClockEstimator()
        estimator.resume(from: wild)
        #expect(estimator.remembered == nil, "a drift of 500 000 ppm is no lock's")
        var old = memory
        old.version = 0
        #expect(old.unusable(host: "boot-1", coordinator: "10.0.0.1:5005 ab12", now: soon) != nil)
        // This host's clock: its boot, unless a test clock scales this process's.
        #expect(!ClockMemory.hostClock().isEmpty && ClockMemory.hostClock() != "unknown")
    }
}

@Suite("The follower's sockets")
struct FollowerNetworkTests {
    /// Regression: the one-thread follower reads its sockets only when its device wakes it,
    /// up to 20 ms after a datagram came, and the stream socket was not asking the kernel for
    /// stamps: packets counted as arriving when they were read (the jitter buffer saw them
    /// late; the clock's stream readings were blurred by up to a device period).
    @Test func whatWasReadLateCarriesTheTimeItArrived() throws {
        let stream = try UDPSocket(), control = try UDPSocket(), sender = try UDPSocket()
        try stream.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        try control.bind(SocketAddress(address: 0x7F00_0001, port: 0))
        let clock = SystemClock()
        let network = FollowerNetwork(
            stream: stream, sealedStream: false, membership: .init(houseKey: HouseKey.generate(), name: "test"), controlSocket: control,
            coordinator: try sender.localAddress(), clock: clock, unicastPort: nil, roomName: "test", trace: nil)
        usleep(100_000)  // the kernel turns stamping on in deferred work
        var sent: [Int64] = []
        for k in 0..<3 {
            sent.append(clock.nanosecondsNow())
            try sender.send([0x80, 96, 0, UInt8(k)] + [UInt8](repeating: 0, count: 16), to: try stream.localAddress())
            usleep(10_000)
        }
        usleep(30_000)  // the device's period, and more
        let read = clock.nanosecondsNow()
        var arrivals: [Int64] = []
        network.collect { input in
            if case let .packet(_, arrived) = input { arrivals.append(arrived.nanoseconds) }
        }
        #expect(arrivals.count == 3)
        for (arrived, sent) in zip(arrivals, sent) {
            #expect(arrived >= sent && arrived < sent + 5_000_000, "arrived \((arrived - sent) / 1_000) µs after it was sent")
        }
        #expect(read - (arrivals.last ?? read) >= 25_000_000)
    }
}
