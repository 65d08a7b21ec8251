import Testing
import TuttiTesting
@testable import TuttiCore

/// Builds ID3v2 tags byte by byte, as writers do.
struct ID3Builder {
    var version: UInt8 = 3
    var frames: [(String, [UInt8], UInt8)] = []  // id, content, flags byte 2

    mutating func text(_ id: String, _ value: String, encoding: UInt8 = 3) {
        frames.append((id, [encoding] + Self.encode(value, encoding) , 0))
    }

    static func encode(_ s: String, _ encoding: UInt8) -> [UInt8] {
        switch encoding {
        case 1: [0xFF, 0xFE] + s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        case 2: s.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        case 3: Array(s.utf8)
        default: s.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        }
    }

    static func terminator(_ encoding: UInt8) -> [UInt8] { encoding == 1 || encoding == 2 ? [0, 0] : [0] }

    static func syncsafe(_ n: Int) -> [UInt8] { [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)] }

    func bytes(padding: Int = 16) -> [UInt8] {
        var body: [UInt8] = []
        for (id, content, flags) in frames {
            if version == 2 {
                body += Array(id.utf8) + [UInt8(content.count >> 16 & 0xFF), UInt8(content.count >> 8 & 0xFF), UInt8(content.count & 0xFF)]
            } else {
                let size = version == 4 ? Self.syncsafe(content.count)
                    : [UInt8(content.count >> 24 & 0xFF), UInt8(content.count >> 16 & 0xFF), UInt8(content.count >> 8 & 0xFF), UInt8(content.count & 0xFF)]
                body += Array(id.utf8) + size + [0, flags]
            }
            body += content
        }
        body += [UInt8](repeating: 0, count: padding)
        return Array("ID3".utf8) + [version, 0, 0] + Self.syncsafe(body.count) + body
    }
}

@Suite("ID3 tags")
struct ID3ReaderTests {
    static func sample(version: UInt8) -> [UInt8] {
        var b = ID3Builder(version: version)
        let v2 = version == 2
        b.text(v2 ? "TT2" : "TIT2", "Tutti", encoding: 3)
        b.text(v2 ? "TP1" : "TPE1", "Les Éléphants", encoding: 1)
        b.text(v2 ? "TAL" : "TALB", "Maison", encoding: 0)
        b.text(v2 ? "TRK" : "TRCK", "3/12")
        b.text(v2 ? "TPA" : "TPOS", "1/2")
        b.text(v2 ? "TCO" : "TCON", "(17)")
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]
        if v2 {
            b.frames.append(("PIC", [0] + Array("JPG".utf8) + [3] + Array("cover".utf8) + [0] + jpeg, 0))
        } else {
            b.frames.append(("APIC", [0] + Array("image/jpeg".utf8) + [0, 3] + Array("cover".utf8) + [0] + jpeg, 0))
        }
        b.frames.append((v2 ? "ULT" : "USLT", [1] + Array("eng".utf8) + ID3Builder.encode("", 1) + [0, 0]
                         + ID3Builder.encode("Every room\nsings", 1), 0))
        var sylt: [UInt8] = [3] + Array("eng".utf8) + [2, 1] + [0]
        for (ms, line) in [(1_000, "Every room"), (2_500, "sings")] {
            sylt += Array(line.utf8) + [0] + [UInt8(ms >> 24), UInt8(ms >> 16 & 0xFF), UInt8(ms >> 8 & 0xFF), UInt8(ms & 0xFF)]
        }
        b.frames.append((v2 ? "SLT" : "SYLT", sylt, 0))
        return b.bytes()
    }

    @Test(arguments: [UInt8(2), 3, 4])
    func readsEveryFieldInEveryVersion(version: UInt8) {
        let tags = ID3Reader.read(Self.sample(version: version))
        #expect(tags.title == "Tutti")
        #expect(tags.artist == "Les Éléphants")
        #expect(tags.album == "Maison")
        #expect(tags.trackNumber == 3 && tags.trackCount == 12)
        #expect(tags.discNumber == 1 && tags.discCount == 2)
        #expect(tags.genre == "Rock")
        #expect(tags.artwork?.mimeType == "image/jpeg")
        #expect(tags.artwork?.data == [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3])
        #expect(tags.lyrics.first?.text == "Every room\nsings")
        #expect(tags.syncedLyrics.first?.lines.map(\.milliseconds) == [1_000, 2_500])
        #expect(tags.syncedLyrics.first?.lines.map(\.text) == ["Every room", "sings"])
    }

    @Test func tagLengthComesFromTheHeader() {
        let bytes = Self.sample(version: 4)
        #expect(ID3Reader.tagLength(header: Array(bytes.prefix(10))) == bytes.count)
        #expect(ID3Reader.tagLength(header: Array("RIFF....WAVE".utf8)) == 0)
    }

    @Test func undoesUnsynchronisation() {
        var b = ID3Builder(version: 3)
        b.frames.append(("APIC", [0] + Array("image/png".utf8) + [0, 3, 0] + [0xFF, 0xE0, 0xFF, 0xFF], 0))
        var bytes = b.bytes()
        // Unsynchronise the body: 0xFF followed by 0xE0 or 0xFF gets a 0x00 between.
        var body: [UInt8] = []
        for (i, x) in bytes[10...].enumerated() {
            body.append(x)
            if x == 0xFF, 10 + i + 1 < bytes.count, bytes[10 + i + 1] >= 0xE0 || bytes[10 + i + 1] == 0 { body.append(0) }
        }
        bytes = Array(bytes[0..<5]) + [0x80] + ID3Builder.syncsafe(body.count) + body
        #expect(ID3Reader.read(bytes).artwork?.data == [0xFF, 0xE0, 0xFF, 0xFF])
    }

    @Test func genreForms() {
        #expect(Genres.resolve("(13)") == "Pop")
        #expect(Genres.resolve("13") == "Pop")
        #expect(Genres.resolve("(13)Synth-pop") == "Synth-pop")
        #expect(Genres.resolve("Chanson") == "Chanson")
        #expect(Genres.resolve("(999)") == "(999)")
    }

    @Test func readsID3v1() {
        var tail = [UInt8](repeating: 0, count: 128)
        tail.replaceSubrange(0..<3, with: Array("TAG".utf8))
        tail.replaceSubrange(3..<8, with: Array("Hello".utf8))
        tail.replaceSubrange(33..<36, with: Array("Bob".utf8))
        tail[126] = 7
        tail[127] = 8
        let tags = ID3Reader.readV1(tail)
        #expect(tags.title == "Hello" && tags.artist == "Bob" && tags.trackNumber == 7 && tags.genre == "Jazz")
        #expect(ID3Reader.readV1(Array(tail.prefix(100))) == TrackTags())
    }

    /// Every truncation and random damage: never a trap, and what survives is kept.
    @Test func truncatedAndFuzzedTagsNeverCrash() {
        let good = Self.sample(version: 4)
        for n in 0...good.count { _ = ID3Reader.read(Array(good.prefix(n))) }
        var random = SeededRandom(seed: 77)
        for _ in 0..<3_000 {
            var bad = good
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                bad[Int.random(in: 0..<bad.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            _ = ID3Reader.read(bad)
            let noise = (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = ID3Reader.read(Array("ID3".utf8) + [4, 0, 0, 0, 0, 2, 0] + noise)
        }
    }
}
