import Foundation
import Testing
@testable import TuttiCore

@Suite("HLS playlists")
struct HLSPlaylistTests {
    static let base = "https://radio.example/live/index.m3u8?token=1"

    @Test func aListOfTracksIsNotHLS() throws {
        #expect(!HLSPlaylist.isHLS("#EXTM3U\n#EXTINF:123,Artist - Title\nsong.mp3\n"))
        #expect(HLSPlaylist.isHLS("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n"))
        #expect(try HLSPlaylist.parse("#EXTM3U\nsong.mp3\n", base: Self.base) == nil)
    }

    /// The audio-only variant of the highest bandwidth; without one, a video variant's audio
    /// rendition; else the cheapest variant.
    @Test func theBestAudioVariantIsChosen() throws {
        let text = """
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main",DEFAULT=YES,URI="audio/en.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=2500000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud"
        video/hd.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
        /radio/64.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
        128.m3u8
        """
        guard case let .multivariant(variants)? = try HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not multivariant"); return }
        #expect(variants.count == 3)
        #expect(variants[0].audioRendition == "https://radio.example/live/audio/en.m3u8")
        #expect(!variants[0].isAudioOnly && variants[1].isAudioOnly)
        #expect(HLSPlaylist.choose(variants) == "https://radio.example/live/128.m3u8")
        #expect(HLSPlaylist.choose([variants[0]]) == "https://radio.example/live/audio/en.m3u8")
        var plain = variants[0]
        plain.audioRendition = nil
        var cheaper = plain
        cheaper.bandwidth = 800_000
        cheaper.url = "cheap.m3u8"
        #expect(HLSPlaylist.choose([plain, cheaper]) == "cheap.m3u8")
    }

    @Test func aLiveMediaPlaylistStartsThreeTargetDurationsFromItsEnd() throws {
        var text = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:1200\n#EXT-X-MAP:URI=\"init.mp4\"\n"
        for i in 0..<8 {
            if i == 5 { text += "#EXT-X-DISCONTINUITY\n" }
            text += "#EXTINF:6.000,\(i == 7 ? "Artist - Title" : "")\nseg\(1200 + i).m4s\n"
        }
        guard case let .media(media)? = try HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not media"); return }
        #expect(media.targetDuration == 6 && !media.ended && media.encryption == nil)
        #expect(media.segments.map(\.sequence) == Array(1200..<1208))
        #expect(media.segments[0].url == "https://radio.example/live/seg1200.m4s")
        #expect(media.segments[0].map == "https://radio.example/live/init.mp4")
        #expect(media.segments.map(\.discontinuity) == [false, false, false, false, false, true, false, false])
        #expect(media.segments[7].title == "Artist - Title" && media.segments[6].title == nil)
        #expect(media.startIndex == 5)  // 18 s from the end
    }

    @Test func aRecordingStartsAtItsStartAndEncryptionIsNamed() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:10,\na.ts\n#EXTINF:10,\nb.ts\n#EXT-X-ENDLIST\n"
        guard case let .media(media)? = try HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not media"); return }
        #expect(media.ended && media.startIndex == 0)
        #expect(media.encryption == "AES-128")
        #expect(HLSPlaylist.attributes(#"A=1,B="x, y",C=z"#) == ["A": "1", "B": "x, y", "C": "z"])
    }

    @Test func remoteContentTypes() {
        #expect(RemoteFormats.demuxer(forContentType: "audio/aacp") == "aac")
        #expect(RemoteFormats.demuxer(forContentType: "application/ogg; charset=x") == "ogg")
        #expect(RemoteFormats.demuxer(forContentType: "video/MP2T") == "mpegts")
        #expect(RemoteFormats.mayBeAudio(contentType: "audio/x-something-new"))
        #expect(RemoteFormats.mayBeAudio(contentType: "application/octet-stream"))
        #expect(RemoteFormats.mayBeAudio(contentType: nil))
        #expect(!RemoteFormats.mayBeAudio(contentType: "text/html; charset=utf-8"))
        #expect(!RemoteFormats.mayBeAudio(contentType: "image/png"))
    }

    /// What a hostile station's playlist says never traps: a target duration and segments of
    /// no length start at the last segment; numbers out of their range refuse the playlist,
    /// naming the number; the reload waits within half a second and half a minute.
    @Test func numbersFromAStationAreBounded() throws {
        let zero = "#EXTM3U\n#EXT-X-TARGETDURATION:0\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:0,\na.ts\n#EXTINF:0,\nb.ts\n"
        guard case let .media(media)? = try HLSPlaylist.parse(zero, base: Self.base) else { Issue.record("not media"); return }
        #expect(media.startIndex == 1 && media.segments[media.startIndex].sequence == 8)
        #expect(media.reloadWait(fresh: true) == 0.5)
        let empty = HLSPlaylist.Media(targetDuration: 0, segments: [], ended: false, encryption: nil)
        #expect(empty.startIndex == 0)
        let long = HLSPlaylist.Media(targetDuration: 86_400, segments: [], ended: false, encryption: nil)
        #expect(long.reloadWait(fresh: true) == 30 && long.reloadWait(fresh: false) == 30)

        let edges = ["inf", "-inf", "nan", "1e308", "1e21", "-1", "86401", "9223372036854775807", "0x10", "", "6 s"]
        for value in edges {
            #expect(throws: HLSPlaylist.Invalid.self, "target duration \(value)") {
                try HLSPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:\(value)\n#EXTINF:6,\na.ts\n", base: Self.base)
            }
            if value == "-1" || value.isEmpty { continue }  // unknown, as M3U writes it
            #expect(throws: HLSPlaylist.Invalid.self, "segment duration \(value)") {
                try HLSPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:\(value),\na.ts\n", base: Self.base)
            }
        }
        for value in ["9223372036854775807", "18446744073709551615", "-1", "4611686018427387905", "1e3", "nan"] {
            #expect(throws: HLSPlaylist.Invalid.self, "media sequence \(value)") {
                try HLSPlaylist.parse("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:\(value)\n#EXTINF:6,\na.ts\n", base: Self.base)
            }
        }
        // The highest sequence taken, and segments counted on from it without overflow.
        let high = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:4611686018427387904\n#EXTINF:6,\na.ts\n#EXTINF:6,\nb.ts\n"
        guard case let .media(last)? = try HLSPlaylist.parse(high, base: Self.base) else { Issue.record("not media"); return }
        #expect(last.segments.map(\.sequence) == [1 << 62, (1 << 62) + 1])
        do {
            _ = try HLSPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:inf\n", base: Self.base)
        } catch {
            #expect(error.reason.contains("target duration (inf)"), "\(error.reason)")
        }
    }

    /// Random playlists made of the tags and the boundary numbers: parsing and the start
    /// never trap.
    @Test func randomPlaylistsNeverTrap() throws {
        var random = SeededRandom(seed: 53)
        let tags = ["#EXT-X-TARGETDURATION:", "#EXT-X-MEDIA-SEQUENCE:", "#EXTINF:", "#EXT-X-DISCONTINUITY", "#EXT-X-ENDLIST",
                    "#EXT-X-STREAM-INF:BANDWIDTH=", "#EXT-X-MAP:URI=", "#EXT-X-KEY:METHOD=", "seg.ts", ""]
        let numbers = ["0", "-1", "1", "6", "0.5", "inf", "nan", "1e308", "-0", "9223372036854775807", "-9223372036854775808",
                       "18446744073709551616", "4611686018427387904", "\"x\"", ",", ""]
        for _ in 0..<3_000 {
            var text = "#EXTM3U\n"
            for _ in 0..<Int(random.next() % 12) {
                text += tags[Int(random.next() % UInt64(tags.count))] + numbers[Int(random.next() % UInt64(numbers.count))] + "\n"
            }
            if case let .media(media)? = try? HLSPlaylist.parse(text, base: Self.base), !media.segments.isEmpty {
                #expect(media.segments.indices.contains(media.startIndex))
                _ = media.reloadWait(fresh: random.next() % 2 == 0)
            }
        }
    }
}

/// The fuzz campaign's committed corpora (bench/fuzz/corpus) of the parsers a station feeds,
/// replayed in every test run with the campaign's own checks: what it once found, and what
/// grew its coverage, stays covered in CI.
@Suite("Fuzz corpora, replayed")
struct FuzzCorpusReplayTests {
    static func corpus(_ target: String) -> [[UInt8]] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("bench/fuzz/corpus/" + target).path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.sorted().compactMap { FileManager.default.contents(atPath: folder + "/" + $0).map { [UInt8]($0) } }
    }

    @Test func hlsPlaylists() {
        let inputs = Self.corpus("hls")
        #expect(inputs.count > 100, "the corpus is in the repository")
        for bytes in inputs {
            guard case let .media(media)? = try? HLSPlaylist.parse(String(decoding: bytes, as: UTF8.self), base: HLSPlaylistTests.base)
            else { continue }
            #expect(media.segments.isEmpty ? media.startIndex == 0 : media.segments.indices.contains(media.startIndex))
            let wait = media.reloadWait(fresh: true)
            #expect(wait >= 0.5 && wait <= 30)
        }
    }

    @Test func icyStreamsAndPlaylists() {
        for bytes in Self.corpus("icy") {
            guard bytes.count >= 3, var demuxer = IcyDemuxer(interval: Int(bytes[0]) << 8 | Int(bytes[1]) + 1) else { continue }
            var audio: [UInt8] = []
            var index = 3
            while index < bytes.count {
                let end = min(bytes.count, index + Int(bytes[2]) + 1)
                for block in demuxer.push(bytes[index..<end], audio: &audio) { _ = block.artistAndTitle }
                index = end
            }
            #expect(audio.count <= bytes.count - 3)
        }
        for bytes in Self.corpus("playlist") {
            let text = String(decoding: bytes, as: UTF8.self)
            for entry in PlaylistParser.parse(text, format: .m3u, base: "http://host:8000/lists/a/today.m3u?x=1") {
                #expect(entry.location.contains("://") || entry.location.hasPrefix("pcm:"))
            }
            _ = PlaylistParser.parse(text, format: .pls, base: "/music")
        }
    }
}
