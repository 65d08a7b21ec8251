import Foundation
import Glibc
import Testing
import TuttiCore
@testable import TuttiNode

@Suite("Live inputs and the house's saving")
struct LiveSourceTests {
    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "tutti-live-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func s16(_ values: [Int16]) -> [UInt8] { values.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } }

    /// A receiver whose program is not installed fails with what to do, and leaves no
    /// folder of its own behind; a bad name is refused before anything runs.
    @Test func aReceiverWithoutItsProgramSaysWhatIsMissing() throws {
        let before = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
        do {
            _ = try ReceiverSource(ReceiverEntry(kind: .librespot, name: "Stofa"), program: "tutti-no-such-librespot")
            Issue.record("a receiver started without its program")
        } catch {
            #expect("\(error)".contains("needs tutti-no-such-librespot, which is not installed here"), "\(error)")
        }
        let after = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
        #expect(after.subtracting(before).filter { $0.hasPrefix("tutti-librespot-") }.isEmpty)
        #expect(throws: LiveInputError.badReceiverName("a\nb")) { try ReceiverEntry(parsing: "librespot:a\nb") }
    }

    /// What a receiver's sender shows: its tags, and its cover, which is served, and whose
    /// change is counted (so that a page asks for the new one); a file's tags set from its
    /// stream never claim a cover.
    @Test func aReceiversCoverIsKeptAndItsChangesCounted() {
        let library = TrackLibrary()
        var tags = TrackTags()
        tags.title = "Hoppípolla"
        tags.pictures = [TrackTags.Picture(mimeType: "image/png", kind: 3, description: "", data: [0x89, 0x50, 0x4E, 0x47, 1])]
        library.setTags(tags, of: "airplay:Stofa")
        var info = library.info("airplay:Stofa")
        #expect(info.tags.title == "Hoppípolla" && info.tags.pictures.isEmpty && info.hasArtwork && info.artworkVersion == 1)
        #expect(library.artwork("airplay:Stofa")?.data == [0x89, 0x50, 0x4E, 0x47, 1])
        library.setTags(tags, of: "airplay:Stofa")
        #expect(library.info("airplay:Stofa").artworkVersion == 1, "the same cover again")
        tags.title = "Glósóli"
        tags.pictures[0].data = [0x89, 0x50, 0x4E, 0x47, 2]
        library.setTags(tags, of: "airplay:Stofa")
        info = library.info("airplay:Stofa")
        #expect(info.tags.title == "Glósóli" && info.artworkVersion == 2 && library.artwork("airplay:Stofa")?.data.last == 2)
        tags.pictures = []
        library.setTags(tags, of: "airplay:Stofa")
        #expect(!library.info("airplay:Stofa").hasArtwork && library.artwork("airplay:Stofa") == nil)
        library.setTags(tags, of: "https://example.com/a.mp3")
        #expect(!library.info("https://example.com/a.mp3").hasArtwork)
    }

    @Test func aNamedPipeIsLiveAndOutlivesItsWriter() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = dir + "/in.fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opening does not wait for a writer.
        let reader = try PCMReader(LiveInput(path: fifo))
        #expect(reader.isLive && reader.length == nil)
        var out: [Float] = []
        #expect(try reader.read(into: &out) == nil, "nothing written yet: a short wait, not the end")
        let writer = open(fifo, O_WRONLY)
        try #require(writer >= 0)
        // One and a half frames: the half waits for its other half.
        let bytes = Self.s16([16_384, -16_384, 32_767])
        _ = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        #expect(try reader.read(into: &out) == 1)
        #expect(out == [0.5, -0.5])
        _ = Self.s16([-32_768]).withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        close(writer)
        #expect(try reader.read(into: &out) == 1)
        #expect(out == [0.5, -0.5, Float(32_767) / 32_768, -1])
        // The writer left: the input goes on (quiet), it does not end.
        #expect(try reader.read(into: &out) == nil)
        #expect(throws: SourceError.self) { try reader.seek(to: 0) }
    }

    /// A 44.1 kHz input comes out of the player's chain at 48 kHz: 48/44.1 as many frames,
    /// the same pitch.
    @Test func aFortyFourPointOneInputIsConvertedToFortyEight() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/in.s16"
        var pcm: [Int16] = []
        for i in 0..<44_100 {  // one second of 1 kHz
            let v = Int16(sin(2 * Double.pi * 1000 * Double(i) / 44_100) * 16_000)
            pcm += [v, v]
        }
        #expect(FileManager.default.createFile(atPath: file, contents: pcm.withUnsafeBytes { Data($0) }))
        let reader = try PCMReader(LiveInput(path: file, rate: 44_100))
        #expect(reader.length == 48_000)
        #expect(reader.sampleRate == 44_100)
        let chain = SourceChain()
        var out: [Float] = []
        var media = 0
        while let n = try chain.read(reader, into: &out), n > 0 { media += n }
        try chain.finish(into: &out)
        let frames = out.count / 2
        #expect(abs(frames - 48_000) <= 1, "\(frames) frames")
        #expect(media == 48_000)
        // The pitch: zero crossings over the middle half second, at 48 kHz.
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        let middle = left[12_000..<36_000]
        let crossings = zip(middle, middle.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        #expect(abs(Double(crossings) / 2 / 0.5 - 1000) < 3, "\(crossings) crossings in 0.5 s")
        #expect(abs((middle.map { abs($0) }.max() ?? 0) - 16_000 / 32_768) < 0.02)
        try reader.seek(to: 24_000)
        out = []
        #expect(try reader.read(into: &out) ?? 0 > 0 && reader.framesRead > 22_050)
    }

    @Test func aRegularFileIsPacedLikeATrackAndSeeks() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/in.f32"
        let samples: [Float] = [0.25, -0.25, 0.5, -0.5, 2, .nan]
        #expect(FileManager.default.createFile(atPath: file, contents: Data(samples.flatMap { v in
            withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) }
        })))
        let reader = try PCMReader(LiveInput(path: file, format: .f32le))
        #expect(!reader.isLive && reader.length == 3)
        var out: [Float] = []
        #expect(try reader.read(into: &out) == 3)
        #expect(out == [0.25, -0.25, 0.5, -0.5, 1, 0], "clipped, and a NaN is silence")
        #expect(try reader.read(into: &out) == 0, "a file ends")
        try reader.seek(to: 1)
        out = []
        #expect(try reader.read(into: &out) == 2 && out.first == 0.5)
    }

    @Test func inputsThatCannotBeReadSaySo() async throws {
        #expect(throws: SourceError.self) { try PCMReader(LiveInput(path: "/no/such/fifo")) }
        #expect(throws: SourceError.self) { try PCMReader(LiveInput(path: "/dev/null")) }
        // In the queue: a live input is taken as it is, a bad one refused with the reason.
        #expect(try await NodeTests.expand(["pcm:/run/mpd.fifo?format=s16le"]) == ["pcm:/run/mpd.fifo"])
        let error = await #expect(throws: SourceError.self) { try await NodeTests.expand(["pcm:/x?format=u8"]) }
        #expect(error?.description.contains("u8") == true)
        // The house names it by what it is, without opening it.
        let info = TrackLibrary().info("pcm:/no/such/fifo")
        #expect(info.tags.title == "PCM input /no/such/fifo" && info.length == nil && !info.hasArtwork)
    }

    /// What the API queues plays a named pipe or standard input, never a regular file's
    /// bytes as raw PCM (a token holder would hear any file the coordinator can read), not
    /// even through a playlist or a pipe swapped for a file before it plays; the coordinator's
    /// own command line may name a file.
    @Test func rawPCMFromAFileOnlyWhereTheCoordinatorWasStartedWithIt() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secret = dir + "/secret", fifo = dir + "/in.fifo"
        try Data("hunter2hunter2hunter2".utf8).write(to: URL(fileURLWithPath: secret))
        #expect(mkfifo(fifo, 0o600) == 0)
        let refused = await #expect(throws: SourceError.self) { try await TrackSource.expand(["pcm:" + secret], pcmFiles: false) }
        #expect(refused?.description.contains("named pipe") == true)
        try "pcm:\(secret)\n".write(toFile: dir + "/list.m3u", atomically: true, encoding: .utf8)
        #expect(try await TrackSource.expand([dir + "/list.m3u"], pcmFiles: false).isEmpty)
        #expect(try await TrackSource.expand(["pcm:" + fifo, "pcm:-"], pcmFiles: false).map(\.location) == ["pcm:" + fifo, "pcm:-"])
        #expect(try await TrackSource.expand(["pcm:" + secret]).map(\.location) == ["pcm:" + secret])
        // When it plays: a file only if it was given at the start.
        #expect(throws: SourceError.self) { try openFrameSource("pcm:" + secret) }
        #expect(try openFrameSource("pcm:" + secret, pcmFiles: ["pcm:" + secret]).isLive == false)
        #expect(try openFrameSource("pcm:" + fifo).isLive)
    }

    /// Saving happens on its own thread while the house goes on, so two changes may reach
    /// the disk out of order: the older state must never overwrite the newer.
    @Test func anOlderStateNeverOverwritesANewerOne() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try StateStore(directory: dir)
        let saver = StateSaver(store: store)
        var newer = HouseState(position: 2)
        newer.epoch = 2
        try await saver.save(newer, version: 2)
        try await saver.save(HouseState(position: 1, epoch: 1), version: 1)
        #expect(store.load() == newer)
        try await saver.save(HouseState(position: 3, epoch: 3), version: 3)
        #expect(store.load()?.epoch == 3)
    }
}
