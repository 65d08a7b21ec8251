import Foundation
import Testing
import TuttiCore
@testable import TuttiCodecs

@Suite("Codecs: libmpg123 (MP3 as it arrives) and libopus")
struct CodecTests {
    /// The suite's files, made once per test process and removed when it exits.
    static let scratch: String = {
        let dir = scratchPath()
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: CodecTests.scratchPath()) }
        return dir
    }()

    static func scratchPath() -> String { NSTemporaryDirectory() + "tutti-codec-tests-\(getpid())" }

    /// Makes an MP3 with sox and lame: a `hz` sine, `rate` Hz, `channels` channels.
    static func makeMP3(hz: Int, rate: Int, channels: Int, seconds: Double) throws -> String {
        let base = "\(scratch)/sine-\(hz)-\(rate)-\(channels)"
        try run(["sox", "-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", base + ".wav", "synth", "\(seconds)", "sine", "\(hz)", "gain", "-6"])
        try run(["lame", "--quiet", "-b", "128", base + ".wav", base + ".mp3"])
        return base + ".mp3"
    }

    static func run(_ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = args
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
    }

    /// Frequency from the upward zero crossings of the left channel, between the first and last.
    static func frequency(_ interleaved: [Float], rate: Int) -> Double {
        var crossings: [Int] = []
        var previous: Float = 0
        for i in stride(from: 0, to: interleaved.count, by: 2) {
            let v = interleaved[i]
            if previous < 0 && v >= 0 && abs(v - previous) > 0.01 { crossings.append(i / 2) }
            previous = v
        }
        guard let first = crossings.first, let last = crossings.last, last > first else { return 0 }
        return Double(crossings.count - 1) / (Double(last - first) / Double(rate))
    }

    /// The whole file fed to a stream decoder in pieces of `piece` bytes.
    static func streamDecode(_ path: String, piece: Int = 4_096) throws -> (pcm: [Float], rate: Int) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let decoder = try MP3StreamDecoder(name: path)
        decoder.setSize(Int64(bytes.count))
        var pcm: [Float] = []
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + piece)
            try bytes[at..<end].withUnsafeBytes { try decoder.feed($0) }
            at = end
            while case .frames = try decoder.decode(into: &pcm) {}
        }
        return (pcm, decoder.sampleRate)
    }

    /// MP3 over the network comes out at the stream's own rate (the player's chain brings
    /// it to 48 kHz), stereo whatever its channels.
    @Test(arguments: [(44_100, 1), (48_000, 2), (22_050, 2), (32_000, 1)])
    func streamDecoderGivesTheStreamsOwnRate(rate: Int, channels: Int) throws {
        let path = try Self.makeMP3(hz: 1000, rate: rate, channels: channels, seconds: 1)
        let (pcm, decodedRate) = try Self.streamDecode(path)
        #expect(decodedRate == rate)
        #expect(abs(pcm.count / 2 - rate) < rate / 10, "\(pcm.count / 2) frames")
        #expect(abs(Self.frequency(pcm, rate: rate) - 1000) < 5, "\(Self.frequency(pcm, rate: rate)) Hz")
        let right = stride(from: 1, to: pcm.count, by: 2).map { abs(pcm[$0]) }.max() ?? 0
        #expect(right > 0.3)
    }

    static func sine(frames: Int, hz: Double) -> [Float] {
        (0..<frames).flatMap { i -> [Float] in
            let v = Float(0.5 * sin(2 * Double.pi * hz * Double(i) / 48_000))
            return [v, v]
        }
    }

    @Test(arguments: [20.0, 10.0])
    func opusRoundTripKeepsTheSignal(frameMs: Double) throws {
        var settings = OpusFrameEncoder.Settings()
        settings.frameMilliseconds = frameMs
        let encoder = try OpusFrameEncoder(settings: settings)
        let decoder = try OpusFrameDecoder()
        let n = settings.frameSize
        let input = Self.sine(frames: n * 50, hz: 440)
        var output: [Float] = []
        for k in 0..<50 {
            let packet = try encoder.encode(input, offset: k * n * 2)
            #expect(!packet.isEmpty && packet.count < 1000)
            let decoded = try decoder.decode(packet, into: &output)
            #expect(decoded == n)
        }
        // Compensate the codec delay and compare the last half.
        let delay = encoder.lookahead
        #expect(delay > 0 && delay < 960)
        var err = 0.0, sig = 0.0
        for i in (n * 25)..<(n * 49) {
            let a = Double(input[i * 2]), b = Double(output[(i + delay) * 2])
            err += (a - b) * (a - b)
            sig += a * a
        }
        let snr = 10 * log10(sig / err)
        #expect(snr > 15, "SNR \(snr) dB")
    }

    @Test func lossIsConcealedAndFECRecoversWhenPresent() throws {
        var settings = OpusFrameEncoder.Settings()
        settings.bitrate = 24_000  // low enough for SILK/hybrid, which carries LBRR (FEC)
        settings.expectedLossPercent = 20
        let encoder = try OpusFrameEncoder(settings: settings)
        let decoder = try OpusFrameDecoder()
        let input = Self.sine(frames: 960 * 20, hz: 300)
        var packets: [[UInt8]] = []
        for k in 0..<20 { packets.append(try encoder.encode(input, offset: k * 960 * 2)) }
        var out: [Float] = []
        for k in 0..<10 { _ = try decoder.decode(packets[k], into: &out) }
        #expect(try decoder.conceal(frames: 960, into: &out) == 960)
        let recovered = try decoder.decodeFEC(from: packets[12], frames: 960, into: &out)
        #expect(recovered == 960 || recovered == 0)
        if packets[12][0] >> 3 < 16 { #expect(recovered == 960) }
        decoder.reset()
        #expect(try decoder.decode(packets[13], into: &out) == 960)
        // A CELT packet (128 kb/s music) carries no FEC: reported as 0, not garbage.
        let celt = try OpusFrameEncoder()
        let packet = try celt.encode(Self.sine(frames: 960, hz: 440))
        #expect(packet[0] >> 3 >= 16)
        #expect(try decoder.decodeFEC(from: packet, frames: 960, into: &out) == 0)
    }

    @Test func garbagePayloadIsAnErrorNotACrash() throws {
        let decoder = try OpusFrameDecoder()
        var out: [Float] = []
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let junk = (0..<Int.random(in: 1..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? decoder.decode(junk, into: &out)
        }
    }
}
