import Testing
@testable import TuttiCore

@Suite("HLS playlists")
struct HLSPlaylistTests {
    static let base = "https://radio.example/live/index.m3u8?token=1"

    @Test func aListOfTracksIsNotHLS() {
        #expect(!HLSPlaylist.isHLS("#EXTM3U\n#EXTINF:123,Artist - Title\nsong.mp3\n"))
        #expect(HLSPlaylist.isHLS("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n"))
        #expect(HLSPlaylist.parse("#EXTM3U\nsong.mp3\n", base: Self.base) == nil)
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
        guard case let .multivariant(variants)? = HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not multivariant"); return }
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
        guard case let .media(media)? = HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not media"); return }
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
        guard case let .media(media)? = HLSPlaylist.parse(text, base: Self.base) else { Issue.record("not media"); return }
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
}
