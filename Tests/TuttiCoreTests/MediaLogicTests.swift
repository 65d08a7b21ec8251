import Testing
@testable import TuttiCore

@Suite("Media logic: tags, loudness, MP4 timing")
struct MediaLogicTests {
    @Test(arguments: [("-6.54 dB", -6.54), ("+1.20dB", 1.2), ("3.1", 3.1), (" -0.5 DB ", -0.5)])
    func gainsAsTagsWriteThem(text: String, value: Double) {
        #expect(Loudness.gain(parsing: text) == value)
    }

    @Test(arguments: ["", "loud", "nan dB", "inf", "-1e300", "99 dB"])
    func garbageGainsAreNone(text: String) {
        #expect(Loudness.gain(parsing: text) == nil)
    }

    @Test func r128IsMovedToReplayGainsReference() {
        #expect(Loudness.r128(parsing: "-2560") == -5)  // -10 dB towards -23 LUFS is -5 towards -18
        #expect(Loudness.r128(parsing: "0") == 5)
        #expect(Loudness.r128(parsing: "40000") == nil)
        #expect(Loudness.r128(parsing: "x") == nil)
    }

    @Test func vorbisMP4AndFFmpegNamesAllLand() {
        var tags = TrackTags()
        for (key, value) in [("TITLE", "Song"), ("ALBUM ARTIST", "Band"), ("tracknumber", "3"), ("TRACKTOTAL", "12"),
                             ("disc", "2/3"), ("REPLAYGAIN_TRACK_GAIN", "-6.5 dB"), ("replaygain_album_gain", "-7 dB"),
                             ("REPLAYGAIN_TRACK_PEAK", "0.95"), ("date", "2021-03-04"), ("lyrics-eng", "la la"), ("title", "Other")] {
            ContainerTags.apply(key: key, value: value, to: &tags)
        }
        #expect(tags.title == "Song")  // the first value stays
        #expect(tags.albumArtist == "Band")
        #expect(tags.trackNumber == 3 && tags.trackCount == 12)
        #expect(tags.discNumber == 2 && tags.discCount == 3)
        #expect(tags.year == "2021")
        #expect(tags.loudness == Loudness(trackGain: -6.5, trackPeak: 0.95, albumGain: -7))
        #expect(tags.lyrics.first?.language == "eng" && tags.lyrics.first?.text == "la la")
    }

    @Test func replayGainModesFallBackAndGuardThePeak() {
        let both = Loudness(trackGain: -6, trackPeak: 0.5, albumGain: -3, albumPeak: 0.9)
        let close = { (a: Float, b: Double) in abs(Double(a) - b) < 1e-6 }
        #expect(ReplayGain(mode: .off).gain(for: both) == 1)
        #expect(close(ReplayGain(mode: .track).gain(for: both), 0.501187))
        #expect(close(ReplayGain(mode: .album).gain(for: both), 0.707946))
        // Each mode falls back on the other gain.
        #expect(close(ReplayGain(mode: .album).gain(for: Loudness(trackGain: -6)), 0.501187))
        #expect(close(ReplayGain(mode: .track).gain(for: Loudness(albumGain: -6)), 0.501187))
        // Untagged: the configured gain; a live input: nothing.
        #expect(close(ReplayGain(mode: .track, untaggedDB: -6).gain(for: Loudness()), 0.501187))
        #expect(ReplayGain(mode: .track, untaggedDB: -6).gain(for: nil) == 1)
        // The guard: +6 dB on a track peaking at 0.8 stops at 1.25.
        #expect(close(ReplayGain(mode: .track).gain(for: Loudness(trackGain: 6, trackPeak: 0.8)), 1.25))
        #expect(close(ReplayGain(mode: .track, preampDB: 3).gain(for: Loudness(trackGain: -9)), 0.501187))
        #expect(!ReplayGain.accepts(.nan) && !ReplayGain.accepts(25) && ReplayGain.accepts(-24))
    }

    @Test func audioFilesByName() {
        for name in ["a.flac", "B.M4A", "c.ogg", "d.opus", "e.wav", "f.aiff", "g.mp3", "/x.y/h.wv"] { #expect(AudioFiles.isAudio(name), "\(name)") }
        for name in ["a.txt", "flac", "/music.flac/cover", "list.m3u", ".flac/x"] { #expect(!AudioFiles.isAudio(name), "\(name)") }
    }

    /// A minimal MP4: ftyp, moov (mvhd at 1000, an audio trak with mdhd at 44100 and an
    /// edit list of an empty edit then one media edit).
    static func mp4(editDuration: UInt32, mediaTime: Int32, movieScale: UInt32 = 1_000, handler: String = "soun") -> [UInt8] {
        func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { u32(UInt32(8 + body.count)) + Array(type.utf8) + body }
        let mvhd = box("mvhd", [0, 0, 0, 0] + u32(0) + u32(0) + u32(movieScale) + u32(0) + [UInt8](repeating: 0, count: 80))
        let mdhd = box("mdhd", [0, 0, 0, 0] + u32(0) + u32(0) + u32(44_100) + u32(0) + [0, 0, 0, 0])
        let hdlr = box("hdlr", [0, 0, 0, 0] + u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13))
        let elst = box("elst", [0, 0, 0, 0] + u32(2) + u32(500) + u32(UInt32(bitPattern: -1)) + u32(0x0001_0000)
            + u32(editDuration) + u32(UInt32(bitPattern: mediaTime)) + u32(0x0001_0000))
        let trak = box("trak", box("edts", elst) + box("mdia", mdhd + hdlr))
        return box("ftyp", Array("M4A ".utf8) + u32(0)) + box("moov", mvhd + trak) + box("mdat", [1, 2, 3])
    }

    @Test func mp4EditListIsRead() throws {
        let bytes = Self.mp4(editDuration: 1_028, mediaTime: 1_024)
        let reader: MP4Timing.Reader = { offset, count in
            guard offset >= 0, offset < Int64(bytes.count) else { return nil }
            return Array(bytes[Int(offset)..<min(bytes.count, Int(offset) + count)])
        }
        let timing = try #require(MP4Timing.read(size: Int64(bytes.count), reader: reader))
        #expect(timing.priming == 1_024)
        #expect(timing.editLength == 45_334)  // 1028 ms at 44.1 kHz, rounded down
        #expect(timing.editRounding == 45)
        // The packets say 45,337 frames after the priming: within the edit's rounding, they win.
        #expect(timing.end(mediaLength: 1_024 + 45_337) == 45_337)
        // An edit that cuts a second off wins.
        #expect(timing.end(mediaLength: 1_024 + 45_337 + 44_100) == 45_334)
        // Not audio: none.
        let video = Self.mp4(editDuration: 1_028, mediaTime: 1_024, handler: "vide")
        #expect(MP4Timing.read(size: Int64(video.count)) { o, c in Array(video[Int(o)..<min(video.count, Int(o) + c)]) } == nil)
    }

    /// Truncated and garbled box trees never trap: every prefix and many random bytes.
    @Test func mp4ParsingSurvivesAnyBytes() {
        let bytes = Self.mp4(editDuration: 1_028, mediaTime: 1_024)
        for length in 0...bytes.count {
            let prefix = Array(bytes.prefix(length))
            _ = MP4Timing.read(size: Int64(length)) { o, c in
                guard o >= 0, o < Int64(prefix.count) else { return nil }
                return Array(prefix[Int(o)..<min(prefix.count, Int(o) + c)])
            }
        }
        // Sizes and durations at their largest.
        var huge = bytes
        huge.replaceSubrange(0..<4, with: [0, 0, 0, 1])
        huge.insert(contentsOf: [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], at: 8)
        _ = MP4Timing.read(size: Int64(huge.count)) { o, c in
            guard o >= 0, o < Int64(huge.count) else { return nil }
            return Array(huge[Int(o)..<min(huge.count, Int(o) + c)])
        }
        let long = Self.mp4(editDuration: .max, mediaTime: 1_024, movieScale: 1)
        let timing = MP4Timing.read(size: Int64(long.count)) { o, c in Array(long[Int(o)..<min(long.count, Int(o) + c)]) }
        #expect(timing?.editLength == UInt32.max.toInt64 * 44_100)
        var generator: UInt64 = 5
        for _ in 0..<300 {
            var garbled = bytes
            for _ in 0..<6 {
                generator = generator &* 6_364_136_223_846_793_005 &+ 1
                garbled[Int(generator >> 33) % garbled.count] = UInt8(truncatingIfNeeded: generator >> 20)
            }
            _ = MP4Timing.read(size: Int64(garbled.count)) { o, c in
                guard o >= 0, o < Int64(garbled.count) else { return nil }
                return Array(garbled[Int(o)..<min(garbled.count, Int(o) + c)])
            }
        }
    }
}

extension UInt32 {
    var toInt64: Int64 { Int64(self) }
}
