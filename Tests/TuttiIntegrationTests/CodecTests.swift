import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
    /// The house's stream without loss (`--codec pcm|flac`, `--zone-codec`): a stock L24
    /// receiver gets the coordinator's samples to the bit, and a lossless zone's rooms play
    /// beside an Opus zone's, a room moved between them switching codec as it goes.
    @Suite("Lossless zones", .serialized, .timeLimit(.minutes(2)))
    struct CodecTests {
        typealias Room = ControlTests.Room

        /// GStreamer's srtpdec and rtpL24depay (RFC 3190) decode an L24 zone, sealed, with
        /// the SDP's key: every sample is the coordinator's decode of the song, rounded to
        /// 24 bits, in order, none missing.
        @Test func gstreamerDecodesAnL24ZoneToTheBit() throws {
            let h = try Harness("l24")
            let port = Harness.freePort()
            let clock = "127.0.0.1:\(Harness.freePort())"
            try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--codec", "pcm", "--replaygain", "off", "--lookahead-ms", "0", "--multicast", "off",
                                        "--clock-listen", clock, "--unicast", "127.0.0.1:\(port)", "--sdp", h.path("stream.sdp")])
            #expect(Harness.wait(timeout: 10) { FileManager.default.fileExists(atPath: h.path("stream.sdp")) }, "\(h.log("coordinator"))")
            let sdp = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)
            #expect(sdp.contains("m=audio \(port) RTP/SAVP 98\r\na=rtpmap:98 L24/48000/2\r\n") && sdp.contains("a=ptime:4\r\n"), "\(sdp)")
            let inline = try #require(sdp.firstMatch(of: #/a=crypto:1 AEAD_AES_128_GCM inline:([A-Za-z0-9+\/=]+)/#)?.1, "\(sdp)")
            let key = try #require(Data(base64Encoded: String(inline))).map { String(format: "%02x", $0) }.joined()
            let ssrc = try #require(sdp.firstMatch(of: #/a=ssrc:(\d+) cname:/#)?.1, "\(sdp)")
            try h.start("gst", [
                "gst-launch-1.0", "-e", "-q",
                "udpsrc", "port=\(port)", "address=127.0.0.1",
                "caps=application/x-srtp,media=audio,clock-rate=48000,encoding-name=L24,encoding-params=(string)2,channels=(int)2,payload=98,"
                    + "ssrc=(uint)\(ssrc),srtp-key=(buffer)\(key),"
                    + "srtp-cipher=aes-128-gcm,srtp-auth=null,srtcp-cipher=aes-128-gcm,srtcp-auth=null",
                "!", "srtpdec", "!", "rtpjitterbuffer", "latency=200", "!", "rtpL24depay", "!", "audioconvert", "!",
                "audio/x-raw,format=S32LE,rate=48000,channels=2", "!", "filesink", "location=\(h.path("gst.raw"))",
            ])
            Thread.sleep(forTimeInterval: 5)
            if let pid = Int32(ChildProcess.output(["pgrep", "-n", "-f", "location=\(h.path("gst.raw"))"])?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
                kill(pid, SIGINT)
            }
            Thread.sleep(forTimeInterval: 1)
            let raw = try #require(FileManager.default.contents(atPath: h.path("gst.raw")), "GStreamer wrote nothing: \(h.log("gst"))")
            let received: [Int32] = raw.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }.map { $0 >> 8 }
            #expect(received.count > 48_000 * 2 * 3, "GStreamer decoded \(received.count / 2) frames: \(h.log("gst"))")
            let source = try Harness.demoSong24Bits()
            // Where GStreamer's first sound is in the song: the first run of 32 samples alike.
            let first = try #require(received.firstIndex { $0 != 0 }.map { $0 - $0 % 2 })
            let probe = Array(received[first..<(first + 64)])
            let at = try #require(stride(from: 0, to: source.count - 64, by: 2).first { Array(source[$0..<($0 + 64)]) == probe },
                                  "GStreamer's first sound is not in the song, to the bit")
            let n = min(received.count - first, source.count - at)
            let differing = (0..<n).filter { received[first + $0] != source[at + $0] }.count
            #expect(n > 48_000 * 2 * 3 && differing == 0,
                    "\(differing) of \(n) samples differ from the coordinator's (first at \(String(describing: (0..<n).first { received[first + $0] != source[at + $0] })))")
        }

        /// An Opus zone and a FLAC zone (`--zone-codec`): the FLAC zone's rooms in step, and
        /// not playing the Opus zone's music; a room moved from the Opus zone into it plays with them
        /// within 300 ms, having changed decoder on the way; every zone says its codec.
        @Test func aFLACZoneBesideAnOpusOnePlaysInStepAndAMovedRoomSwitchesCodec() throws {
            let h = try Harness("codec-zones")
            let noise = try h.noiseSong(seconds: 30)  // the FLAC zone's
            let other = try h.noiseSong(seconds: 30, name: "other-noise")
            let control = ControlTests()
            let clock = try control.coordinator(h, [other], ["--loop", "--zone-codec", "Kids Room=flac"])
            let api = try ControlAPI(h)
            try api.change("POST", "/zones", #"{"name": "Kids Room"}"#)
            try api.change("POST", "/zones/kids-room/queue", #"{"paths": ["\#(noise)"]}"#)
            try api.change("POST", "/zones/kids-room/transport/play")
            for name in ["a", "b1", "b2"] { try control.follower(h, name, clock: clock, output: "wav:" + h.path(name + ".wav")) }
            #expect(Harness.wait(timeout: 10) { (try? api.rooms.filter { $0.report?.state == .playing }.count) == 3 })
            for name in ["b1", "b2"] { try api.change("PUT", "/rooms/\(name)", #"{"zone": "Kids Room"}"#) }
            let zones = try api.get("/zones", as: [ZoneView].self)
            #expect(zones.map(\.codec) == ["opus", "flac"])
            Thread.sleep(forTimeInterval: 4)
            let monotonic = SystemClock()
            let calm = monotonic.nanosecondsNow()
            Thread.sleep(forTimeInterval: 1)
            let movedAt = monotonic.nanosecondsNow()
            try api.change("PUT", "/rooms/a", #"{"zone": "kids-room"}"#)
            Thread.sleep(forTimeInterval: 2)
            for name in ["a", "b1", "b2"] { h.stop(name) }

            let a = try control.wav(h.path("a.wav")), b1 = try control.wav(h.path("b1.wav")), b2 = try control.wav(h.path("b2.wav"))
            let skews = ZoneTests.skews(b1, b2, from: calm - 2_000_000_000, to: movedAt)
            #expect(skews.count >= 15, "too few comparable windows (\(skews.count))")
            let typical = Analysis.median(skews.map(abs)), p90 = Analysis.percentile(skews.map(abs), 0.9)
            #expect(typical < 60 && p90 < 150, "the FLAC zone's rooms apart: median \(typical) µs, p90 \(p90) µs")
            // The two zones play their own music.
            #expect(ZoneTests.match(a, b1, at: calm).map { $0.correlation < 0.3 } == true, "the two zones play the same music")
            // Moved: a plays with the FLAC zone's rooms within 300 ms, in step.
            for t in stride(from: movedAt + 300_000_000, to: movedAt + 1_500_000_000, by: 100_000_000) {
                let m = ZoneTests.match(b1, a, at: t)
                #expect(m.map { $0.correlation > 0.6 && abs($0.lag) < 3 } == true,
                        "\((t - movedAt) / 1_000_000) ms after the move, a is not with the FLAC zone: \(String(describing: m))")
            }
            for name in ["a", "b1", "b2"] {
                let last = h.log(name).split(separator: "\n").last { $0.contains("received") }.map(String.init) ?? ""
                #expect(last.contains("concealed 0 frames") && last.contains("holes 0"), "\(name): \(last)")
            }
        }
    }
}
