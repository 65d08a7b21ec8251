import Foundation
import Testing
import TuttiCore
import TuttiTesting
@testable import TuttiMedia

@Suite("Media: bad files never crash, and say what they are")
struct BadMediaTests {
    static func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = "\(Scratch.folder)/bad-\(name)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func error(opening path: String) -> MediaError? {
        do {
            let decoder = try MediaDecoder(path: path)
            var pcm: [Float] = []
            while try decoder.read(into: &pcm) > 0 {}
            return nil
        } catch {
            return error
        }
    }

    @Test func emptyTextAndGarbageAreNotAudio() throws {
        let empty = try Self.write("empty.flac", [])
        #expect(Self.error(opening: empty) == .notAudio(name: empty, reason: "it is empty"))
        let cut = try Self.write("cut.ogg", Array("OggS".utf8) + [0, 2] + [UInt8](repeating: 0, count: 30))
        guard case .notAudio = Self.error(opening: cut) else { Issue.record("cut: \(String(describing: Self.error(opening: cut)))"); return }
        let text = try Self.write("text.flac", Array("this is a shopping list, not a song\n".utf8))
        guard case .notAudio = Self.error(opening: text) else { Issue.record("text: \(String(describing: Self.error(opening: text)))"); return }
        var generator: UInt64 = 3
        let garbage = try Self.write("garbage.mp3", (0..<50_000).map { _ in
            generator = generator &* 6_364_136_223_846_793_005 &+ 1
            return UInt8(truncatingIfNeeded: generator >> 33)
        })
        // Random bytes may look like a few MPEG frames; either way nothing crashes and an
        // error, if any, says the file is not audio or would not decode.
        switch Self.error(opening: garbage) {
        case nil, .notAudio?, .decodeFailed?: break
        case let other?: Issue.record("garbage: \(other)")
        }
    }

    @Test func aPipeOrAFolderIsNeverRead() throws {
        let fifo = "\(Scratch.folder)/bad-fifo.flac"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(Self.error(opening: fifo) == .cannotOpen(name: fifo, reason: "not a regular file"))
        #expect(Self.error(opening: Scratch.folder) == .cannotOpen(name: Scratch.folder, reason: "not a regular file"))
        guard case .cannotOpen? = Self.error(opening: "/nonexistent/song.flac") else { Issue.record("missing"); return }
    }

    @Test func videoOnlyIsNotAudio() throws {
        let path = "\(Scratch.folder)/bad-video.m4a"
        try MediaFixtures.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=32x32:d=1",
                               "-c:v", "mpeg4", "-f", "mp4", path])
        #expect(Self.error(opening: path) == .notAudio(name: path, reason: "it holds video only, no audio"))
    }

    /// An iTunes Store purchase of old (FairPlay, 'drms') is named as such, never decoded into noise.
    @Test func protectedAACIsRefused() throws {
        let plain = try Scratch.file("drm", MediaFixtures.sine(hz: 440, frames: 22_050, rate: 44_100), rate: 44_100,
                                     format: MediaFixtures.format("AAC"))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plain)))
        let mp4a = Array("mp4a".utf8)
        let at = try #require((0..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == mp4a })
        bytes.replaceSubrange(at..<at + 4, with: Array("drms".utf8))
        let path = try Self.write("drm.m4a", bytes)
        guard case let .unsupported(_, reason)? = Self.error(opening: path) else {
            Issue.record("\(String(describing: Self.error(opening: path)))")
            return
        }
        #expect(reason.contains("DRM"))
    }

    /// A file cut short plays what it has; one damaged in the middle plays around the damage.
    @Test(arguments: ["MP3", "FLAC", "Vorbis", "Opus", "WAV", "AAC"])
    func truncatedAndDamagedFilesPlayWhatTheyHave(name: String) throws {
        let format = MediaFixtures.format(name)
        let rate = format.rate ?? 44_100
        // Long enough that half of it holds whole pages of audio.
        let seconds = 8
        let path = try Scratch.file("damaged-\(name)", MediaFixtures.chirp(frames: rate * seconds, rate: rate), rate: rate, format: format,
                                    extra: name == "AAC" ? ["-movflags", "+faststart"] : [])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let cut = try Self.write("cut-\(name).\(format.fileExtension)", Array(bytes.prefix(bytes.count / 2)))
        let decoder = try MediaDecoder(path: cut)
        var pcm: [Float] = []
        while try decoder.read(into: &pcm) > 0 {}
        #expect(pcm.count / 2 > rate * seconds / 4, "\(name): \(pcm.count / 2) frames of the half that is there")
        #expect(pcm.allSatisfy { $0.isFinite && abs($0) <= 4 })
        var damaged = bytes
        var generator: UInt64 = 11
        for i in bytes.count / 3..<bytes.count / 3 + 2_000 {
            generator = generator &* 6_364_136_223_846_793_005 &+ 1
            damaged[i] = UInt8(truncatingIfNeeded: generator >> 33)
        }
        let broken = try Self.write("broken-\(name).\(format.fileExtension)", damaged)
        do {
            let decoder = try MediaDecoder(path: broken)
            var out: [Float] = []
            while try decoder.read(into: &out) > 0 {}
            #expect(out.count / 2 > rate * seconds / 3, "\(name): \(out.count / 2) frames around the damage")
            #expect(out.allSatisfy { $0.isFinite })
        } catch {
            // Acceptable only as a clear decoding error, never a crash.
            guard case .decodeFailed = error else { Issue.record("\(name): \(error)"); return }
        }
    }
}

extension BadMediaTests {
    /// An M4A whose audio packets are all garbage decodes nothing: that is an error naming
    /// it, not a silent end.
    @Test func anMP4ThatDecodesNothingSaysSo() throws {
        let path = try Scratch.file("nothing", MediaFixtures.sine(hz: 440, frames: 44_100, rate: 44_100), rate: 44_100,
                                    format: MediaFixtures.format("AAC"), extra: ["-movflags", "+faststart"])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let mdat = Array("mdat".utf8)
        let at = try #require((0..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == mdat })
        for i in (at + 4)..<bytes.count { bytes[i] = 0xFF }
        let broken = try Self.write("nothing.m4a", bytes)
        switch Self.error(opening: broken) {
        case .notAudio?, .decodeFailed?: break
        case let other: Issue.record("\(String(describing: other))")
        }
    }
}
