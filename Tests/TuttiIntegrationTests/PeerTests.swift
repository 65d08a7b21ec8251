import Foundation
import Testing
import TuttiCodecs
import TuttiCore
import TuttiNet
import TuttiNode

/// Real peers: a private PulseAudio server with null sinks, and GStreamer as a stock
/// RTP/Opus receiver.
extension IntegrationTests {
@Suite("Real peers: PulseAudio and GStreamer", .serialized, .timeLimit(.minutes(2)))
struct PeerTests {
    /// Room A runs `tutti follower`, room B the lean `tutti-follower`: the same follower.
    @Test func twoFollowersOnPulseAudioNullSinksPlayInSync() throws {
        let h = try Harness("pulse")
        let rig = try PulseRig(h)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock])
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--sink", "roomA", "--status-interval", "1"])
        try h.leanFollower("b", ["--coordinator", clock, "--unicast", "--sink", "roomB", "--status-interval", "1"])
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") && h.log("b").contains("state: playing") })
        Thread.sleep(forTimeInterval: 1.5)
        let recorder = try rig.record("capture")
        Thread.sleep(forTimeInterval: 6)
        recorder.terminate()
        #expect(!h.log("a").contains("error"), "\(h.log("a"))")
        let wav = try #require(Analysis.readWAV(h.path("capture.wav")), "no recording: \(h.log("capture"))")
        let left = wav.channels[0], right = wav.channels[1]
        #expect(left.count > 48_000 * 4)
        #expect(Analysis.rms(left[...]) > 0.01 && Analysis.rms(right[...]) > 0.01, "a room is silent")
        let skews = Analysis.skews(left, right, from: 4_800, to: left.count)
        #expect(skews.count > 10, "too few comparable windows")
        // Together: within a few milliseconds at every moment (no echo). How close they
        // are is the benchmark's business (bench/sync); PulseAudio's own latency reports
        // limit it, see BENCHMARKS.md.
        let worst = skews.map(abs).max() ?? .infinity
        #expect(worst < 3_000, "rooms apart by up to \(worst) µs: \(skews)")
    }

    @Test func followersTellThePulseServerTheirRole() throws {
        let h = try Harness("role")
        _ = try PulseRig(h)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock])
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--sink", "roomA"])
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") })
        try h.start("pactl", ["pactl", "list", "sink-inputs"])
        Thread.sleep(forTimeInterval: 1)
        let listing = (try? String(contentsOfFile: h.path("pactl.out"), encoding: .utf8)) ?? ""
        #expect(listing.contains("media.role = \"music\""), "\(listing)")
    }

    /// A stock SRTP receiver (GStreamer's srtpdec, libsrtp) decodes the sealed stream with the
    /// key the SDP carries (RFC 4568 `a=crypto`, AEAD_AES_128_GCM).
    @Test func gstreamerDecodesTheSealedStreamWithTheKeyFromTheSDP() throws {
        let h = try Harness("gst")
        let port = Harness.freePort()
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock,
                                    "--unicast", "127.0.0.1:\(port)", "--sdp", h.path("stream.sdp")])
        #expect(Harness.wait(timeout: 10) { FileManager.default.fileExists(atPath: h.path("stream.sdp")) }, "\(h.log("coordinator"))")
        let sdp = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)
        #expect(sdp.contains("a=rtpmap:96 opus/48000/2"))
        #expect(sdp.contains("m=audio \(port) RTP/SAVP 96"))
        let mode = try #require(FileManager.default.attributesOfItem(atPath: h.path("stream.sdp"))[.posixPermissions] as? Int)
        #expect(mode == 0o600, "the SDP holds the stream's key: \(String(mode, radix: 8))")
        let inline = try #require(sdp.firstMatch(of: #/a=crypto:1 AEAD_AES_128_GCM inline:([A-Za-z0-9+\/=]+)/#)?.1, "\(sdp)")
        let keyBytes = try #require(Data(base64Encoded: String(inline)))
        #expect(keyBytes.count == 28)
        let key = keyBytes.map { String(format: "%02x", $0) }.joined()
        let ssrc = try #require(sdp.firstMatch(of: #/a=ssrc:(\d+) cname:/#)?.1, "\(sdp)")
        try h.start("gst", [
            "gst-launch-1.0", "-e", "-q",
            "udpsrc", "port=\(port)", "address=127.0.0.1",
            "caps=application/x-srtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=96,ssrc=(uint)\(ssrc),srtp-key=(buffer)\(key),"
                + "srtp-cipher=aes-128-gcm,srtp-auth=null,srtcp-cipher=aes-128-gcm,srtcp-auth=null",
            "!", "srtpdec", "!", "rtpjitterbuffer", "latency=100", "!", "rtpopusdepay", "!", "opusdec", "!", "audioconvert", "!",
            "audioresample", "!", "audio/x-raw,format=S16LE,rate=48000,channels=2", "!", "wavenc", "!",
            "filesink", "location=\(h.path("gst.wav"))",
        ])
        Thread.sleep(forTimeInterval: 5)
        // Stop GStreamer with SIGINT so that -e sends EOS and wavenc finishes the file.
        if let pid = Int32(ChildProcess.output(["pgrep", "-n", "-f", "location=\(h.path("gst.wav"))"])?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
            kill(pid, SIGINT)
        }
        _ = Harness.wait(timeout: 5) { (try? FileManager.default.attributesOfItem(atPath: h.path("gst.wav"))[.size] as? Int).map { $0 > 100_000 } ?? false }
        Thread.sleep(forTimeInterval: 1)

        let wav = try #require(Analysis.readWAV(h.path("gst.wav")), "GStreamer wrote nothing: \(h.log("gst"))")
        let received = wav.channels[0]
        let correlation = try #require(Analysis.correlationWithSource(received, source: try Harness.demoSongLeft()),
                                       "GStreamer decoded too little: \(received.count) frames; \(h.log("gst"))")
        #expect(correlation > 0.9, "GStreamer's decode does not match the source: correlation \(correlation)")
    }

    /// With `--plain-rtp` the stream is plain RTP again, for receivers without SRTP.
    @Test func gstreamerDecodesThePlainStreamWhenAskedFor() throws {
        let h = try Harness("gst-plain")
        let port = Harness.freePort()
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.start("gst", [
            "gst-launch-1.0", "-e", "-q",
            "udpsrc", "port=\(port)", "address=127.0.0.1",
            "caps=application/x-rtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=96",
            "!", "rtpjitterbuffer", "latency=100", "!", "rtpopusdepay", "!", "opusdec", "!", "audioconvert", "!",
            "audioresample", "!", "audio/x-raw,format=S16LE,rate=48000,channels=2", "!", "wavenc", "!",
            "filesink", "location=\(h.path("gst.wav"))",
        ])
        Thread.sleep(forTimeInterval: 0.5)
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock, "--plain-rtp",
                                    "--unicast", "127.0.0.1:\(port)", "--sdp", h.path("stream.sdp")])
        Thread.sleep(forTimeInterval: 4)
        if let pid = Int32(ChildProcess.output(["pgrep", "-n", "-f", "location=\(h.path("gst.wav"))"])?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
            kill(pid, SIGINT)
        }
        _ = Harness.wait(timeout: 5) { (try? FileManager.default.attributesOfItem(atPath: h.path("gst.wav"))[.size] as? Int).map { $0 > 100_000 } ?? false }
        Thread.sleep(forTimeInterval: 1)
        let sdp = try String(contentsOfFile: h.path("stream.sdp"), encoding: .utf8)
        #expect(sdp.contains("m=audio \(port) RTP/AVP 96") && !sdp.contains("a=crypto"))
        #expect(h.log("coordinator").contains("UNSEALED"))
        let wav = try #require(Analysis.readWAV(h.path("gst.wav")), "GStreamer wrote nothing: \(h.log("gst"))")
        let correlation = try #require(Analysis.correlationWithSource(wav.channels[0], source: try Harness.demoSongLeft()))
        #expect(correlation > 0.9, "correlation \(correlation)")
    }
}
}
