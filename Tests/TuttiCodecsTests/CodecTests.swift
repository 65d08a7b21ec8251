import Foundation
import Testing
import TuttiCore
@testable import TuttiCodecs

@Suite("Codecs: libmpg123 and libopus")
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
    static func frequency(_ interleaved: [Float]) -> Double {
        var crossings: [Int] = []
        var previous: Float = 0
        for i in stride(from: 0, to: interleaved.count, by: 2) {
            let v = interleaved[i]
            if previous < 0 && v >= 0 && abs(v - previous) > 0.01 { crossings.append(i / 2) }
            previous = v
        }
        guard let first = crossings.first, let last = crossings.last, last > first else { return 0 }
        return Double(crossings.count - 1) / (Double(last - first) / 48_000)
    }

    @Test(arguments: [(44_100, 1), (48_000, 2), (22_050, 2), (32_000, 1)])
    func decodesAnyRateAndLayoutTo48kStereo(rate: Int, channels: Int) throws {
        let path = try Self.makeMP3(hz: 1000, rate: rate, channels: channels, seconds: 1)
        let decoder = try MP3Decoder(path: path)
        var pcm: [Float] = []
        while try decoder.read(into: &pcm) > 0 {}
        let frames = pcm.count / 2
        #expect(abs(frames - 48_000) < 4_000, "\(frames) frames")
        #expect(abs(Self.frequency(pcm) - 1000) < 5, "\(Self.frequency(pcm)) Hz")
        // Both channels carry the tone.
        let right = stride(from: 1, to: pcm.count, by: 2).map { abs(pcm[$0]) }.max() ?? 0
        #expect(right > 0.3)
    }

    /// Seeking lands on the very sample a straight decode reaches there; the length is the file's.
    @Test(arguments: [48_000, 44_100])
    func seeksToTheSampleAndKnowsItsLength(rate: Int) throws {
        let base = "\(Self.scratch)/noise-\(rate)"
        try Self.run(["sox", "-n", "-r", "\(rate)", "-c", "2", "-b", "16", base + ".wav", "synth", "3", "pinknoise", "gain", "-6"])
        try Self.run(["lame", "--quiet", "-b", "192", base + ".wav", base + ".mp3"])
        let whole = try MP3Decoder(path: base + ".mp3")
        var all: [Float] = []
        while try whole.read(into: &all) > 0 {}
        let length = try #require(whole.length)
        #expect(abs(length - Int64(all.count / 2)) <= 1, "length \(length), decoded \(all.count / 2)")
        for target in [Int64(1), 47_999, 100_003] {
            let seeker = try MP3Decoder(path: base + ".mp3")
            try seeker.seek(toFrame: target)
            var part: [Float] = []
            while part.count < 2_000, try seeker.read(into: &part) > 0 {}
            let expected = Array(all[Int(target) * 2..<Int(target) * 2 + 1_000])
            let worst = zip(part.prefix(1_000), expected).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < (rate == 48_000 ? 1e-6 : 0.02), "seek to \(target): off by \(worst)")
        }
    }

    @Test func corruptFileIsAClearErrorNamingIt() throws {
        let path = "\(Self.scratch)/garbage.mp3"
        var random = SystemRandomNumberGenerator()
        let bytes = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        // Make sure no accidental MPEG sync word survives.
        let data = Data(bytes.map { $0 == 0xFF ? 0 : $0 })
        #expect(FileManager.default.createFile(atPath: path, contents: data))
        let error = #expect(throws: CodecError.self) {
            let d = try MP3Decoder(path: path)
            var pcm: [Float] = []
            while try d.read(into: &pcm) > 0 {}
        }
        #expect(error?.description.contains("garbage.mp3") == true)
    }

    /// A named pipe (or a device) is never opened for reading: that would block until a
    /// writer came (and /dev/zero would stream for ever).
    @Test func onlyRegularFilesAreOpenedAndNeverBlock() throws {
        let pipe = "\(Self.scratch)/pipe-\(UInt32.random(in: 0...UInt32.max)).mp3"
        #expect(mkfifo(pipe, 0o600) == 0)
        defer { unlink(pipe) }
        for path in [pipe, "/dev/zero", Self.scratch] {
            let error = #expect(throws: CodecError.self) { try MP3Decoder(path: path) }
            #expect(error?.description.contains("not a regular file") == true || error?.description.contains("Is a directory") == true,
                    "\(path): \(error?.description ?? "opened")")
        }
    }

    @Test func missingFileIsAClearError() {
        let error = #expect(throws: CodecError.self) { try MP3Decoder(path: "/nonexistent/song.mp3") }
        #expect(error?.description.contains("/nonexistent/song.mp3") == true)
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
