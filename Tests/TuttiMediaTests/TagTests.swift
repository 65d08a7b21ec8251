import Foundation
import Testing
import TuttiCore
import TuttiTesting
@testable import TuttiMedia

@Suite("Media: tags, art and lyrics from every container")
struct TagTests {
    static let common = ["-metadata", "title=Song", "-metadata", "artist=Singer", "-metadata", "album=Record",
                         "-metadata", "album_artist=Band", "-metadata", "track=3/12", "-metadata", "disc=1/2",
                         "-metadata", "date=2021", "-metadata", "genre=Jazz"]

    /// A tiny PNG made by ffmpeg.
    static let cover: String = {
        let path = Scratch.folder + "/cover.png"
        _ = try? MediaFixtures.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=red:s=8x8",
                                "-frames:v", "1", path])
        return path
    }()

    /// A FLAC picture block (as Vorbis comments carry it in METADATA_BLOCK_PICTURE), base64.
    static func pictureBlock(_ png: [UInt8]) -> String {
        var b: [UInt8] = []
        func u32(_ v: Int) { b += [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        u32(3); u32(9); b += Array("image/png".utf8); u32(0); u32(8); u32(8); u32(24); u32(0); u32(png.count); b += png
        return Data(b).base64EncodedString()
    }

    /// Each container's tags as its writers write them: ID3 (MP3), iTunes atoms (M4A),
    /// Vorbis comments (FLAC, Ogg Vorbis, Ogg Opus).
    @Test(arguments: ["MP3", "AAC", "ALAC", "FLAC", "Vorbis", "Opus"])
    func readsTagsArtAndLyrics(name: String) throws {
        let format = MediaFixtures.format(name)
        let rate = format.rate ?? 44_100
        let signal = MediaFixtures.sine(hz: 440, frames: rate / 4, rate: rate)
        let png = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.cover)))
        var extra = Self.common
        var coverInput: [String] = []
        switch name {
        case "Vorbis", "Opus":
            extra += ["-metadata", "METADATA_BLOCK_PICTURE=\(Self.pictureBlock(png))", "-metadata", "LYRICS=La la la\nLa la",
                      "-metadata", "REPLAYGAIN_TRACK_GAIN=-6.50 dB", "-metadata", "REPLAYGAIN_TRACK_PEAK=0.900000",
                      "-metadata", "REPLAYGAIN_ALBUM_GAIN=-7.00 dB"]
        case "FLAC":
            coverInput = [Self.cover]
            extra += ["-metadata", "LYRICS=La la la\nLa la", "-metadata", "REPLAYGAIN_TRACK_GAIN=-6.50 dB",
                      "-metadata", "REPLAYGAIN_TRACK_PEAK=0.900000", "-metadata", "REPLAYGAIN_ALBUM_GAIN=-7.00 dB"]
        case "MP3":
            coverInput = [Self.cover]
            extra += ["-metadata", "lyrics=La la la\nLa la", "-metadata", "REPLAYGAIN_TRACK_GAIN=-6.50 dB",
                      "-metadata", "REPLAYGAIN_TRACK_PEAK=0.900000", "-metadata", "REPLAYGAIN_ALBUM_GAIN=-7.00 dB", "-id3v2_version", "3"]
        default:
            coverInput = [Self.cover]
            extra += ["-metadata", "lyrics=La la la\nLa la"]
        }
        let wav = "\(Scratch.folder)/tags-\(name).wav"
        try MediaFixtures.writeWAV(signal, channels: 2, rate: rate, to: wav)
        var path = "\(Scratch.folder)/tags-\(name).\(format.fileExtension)"
        var arguments = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", wav]
        if let cover = coverInput.first {
            arguments += ["-i", cover, "-map", "0:a", "-map", "1:v", "-c:v", name == "FLAC" || name == "MP3" ? "copy" : "png",
                          "-disposition:v", "attached_pic"]
        }
        try MediaFixtures.run(arguments + format.arguments + extra + [path])
        if format.fileExtension == "m4a" {
            // MP4 keeps ReplayGain in iTunes freeform atoms, which ffmpeg does not write.
            let tagged = path + ".rg.m4a"
            try MP4Edit.addFreeformTag(named: "replaygain_track_gain", value: "-6.50 dB", from: path, to: tagged)
            let peak = tagged + ".peak.m4a"
            try MP4Edit.addFreeformTag(named: "replaygain_track_peak", value: "0.900000", from: tagged, to: peak)
            let album = peak + ".album.m4a"
            try MP4Edit.addFreeformTag(named: "replaygain_album_gain", value: "-7.00 dB", from: peak, to: album)
            path = album
        }
        let (tags, length) = try MediaDecoder.probe(path: path)
        #expect(tags.title == "Song", "\(name)")
        #expect(tags.artist == "Singer", "\(name)")
        #expect(tags.album == "Record", "\(name)")
        #expect(tags.albumArtist == "Band", "\(name)")
        #expect(tags.trackNumber == 3, "\(name)")
        #expect(tags.trackCount == 12, "\(name)")
        #expect(tags.discNumber == 1, "\(name)")
        #expect(tags.year == "2021", "\(name)")
        #expect(tags.genre == "Jazz", "\(name)")
        #expect(tags.loudness == Loudness(trackGain: -6.5, trackPeak: 0.9, albumGain: -7), "\(name): \(tags.loudness)")
        #expect(tags.lyrics.first?.text == "La la la\nLa la", "\(name): \(tags.lyrics)")
        #expect(tags.artwork?.mimeType == "image/png", "\(name): \(tags.pictures.map(\.mimeType))")
        #expect(tags.artwork?.data == png, "\(name)")
        #expect(abs((length?.count ?? 0) - 12_000) < 1_200, "\(name): length \(length?.count ?? -1)")
    }

    /// Opus carries its loudness as R128 gains (Q7.8 dB towards -23 LUFS): read at
    /// ReplayGain's reference, 5 dB louder.
    @Test func opusR128Gains() throws {
        let format = MediaFixtures.format("Opus")
        let path = try Scratch.file("r128", MediaFixtures.sine(hz: 440, frames: 9_600, rate: 48_000), rate: 48_000, format: format,
                                    extra: ["-metadata", "R128_TRACK_GAIN=-2560", "-metadata", "R128_ALBUM_GAIN=-512"])
        let decoder = try MediaDecoder(path: path)
        #expect(decoder.tags.loudness.trackGain == -5)
        #expect(decoder.tags.loudness.albumGain == 3)
    }
}
