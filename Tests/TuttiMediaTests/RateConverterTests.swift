import Testing
import TuttiCore
import TuttiTesting
@testable import TuttiMedia

@Suite("Media: the house's sample-rate converter")
struct RateConverterTests {
    /// The whole signal through the converter, in pieces of the given sizes, then flushed.
    static func convert(_ signal: [Float], from rate: Int, pieces: [Int]) throws -> [Float] {
        let converter = try RateConverter(from: rate)
        var out: [Float] = []
        var at = 0
        var i = 0
        while at < signal.count / 2 {
            let n = min(pieces[i % pieces.count], signal.count / 2 - at)
            try converter.process(signal[(at * 2)..<((at + n) * 2)], into: &out)
            at += n
            i += 1
        }
        try converter.flush(into: &out)
        return out
    }

    /// A tone comes out clean: at 44.1 kHz to 48 kHz, a 1 kHz tone has nothing else in it
    /// past -100 dB, and a 20 kHz tone (the one that would alias) past -90 dB.
    @Test(arguments: [(44_100, 1_000.0, -100.0), (44_100, 20_000.0, -90.0), (96_000, 1_000.0, -100.0),
                      (88_200, 15_000.0, -90.0), (192_000, 1_000.0, -100.0), (22_050, 1_000.0, -100.0)])
    func tonesComeOutClean(rate: Int, hz: Double, floor: Double) throws {
        let frames = rate * 2
        let out = try Self.convert(MediaFixtures.sine(hz: hz, frames: frames, rate: rate), from: rate, pieces: [frames])
        #expect(abs(out.count / 2 - frames * 48_000 / rate) <= 1, "\(out.count / 2) frames")
        let residual = MediaFixtures.residualDB(MediaFixtures.left(out), hz: hz, rate: 48_000)
        #expect(residual < floor, "\(rate) Hz, \(hz) Hz tone: THD+N \(residual) dB")
    }

    /// However the signal is cut into pieces, the same signal comes out, where it went in:
    /// no delay of the filter's own.
    @Test func piecesMakeOneSignalInPlace() throws {
        let rate = 44_100
        let signal = MediaFixtures.chirp(frames: rate, rate: rate)
        let whole = try Self.convert(signal, from: rate, pieces: [rate])
        let pieces = try Self.convert(signal, from: rate, pieces: [1, 441, 1_000, 7, 4_096, 333])
        #expect(whole.count == pieces.count)
        let worst = zip(whole, pieces).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-5, "pieces differ by \(worst)")
        // Against the same chirp made at 48 kHz.
        let reference = MediaFixtures.chirp(frames: 48_000, rate: 48_000)
        let (lag, rms) = MediaFixtures.align(MediaFixtures.left(reference), MediaFixtures.left(whole), window: 2_000..<40_000, maxLag: 50)
        #expect(lag == 0)
        #expect(rms < 0.01, "RMS \(rms)")
    }

    /// A live input's converter stretches its signal to the house's clock: 300 ppm more
    /// frames (or fewer) than go in, within two frames in 20 s, from 48 kHz to 48 kHz and from 44.1 kHz;
    /// and a tone stays clean (nothing past -80 dB) while it is stretched.
    @Test(arguments: [(48_000, 300.0), (48_000, -300.0), (44_100, 300.0), (48_000, 0.0), (48_000, 20_000), (44_100, 20_000), (48_000, -5_000)])
    func aLiveConverterStretches(rate: Int, ppm: Double) throws {
        let converter = try RateConverter(from: rate, stretchable: true)
        try converter.stretch(ppm: ppm)
        let seconds = 20
        let tone = MediaFixtures.sine(hz: 1_000, frames: rate, rate: rate)
        var out: [Float] = []
        for _ in 0..<seconds { try converter.process(tone[...], into: &out) }
        let expected = Double(seconds * 48_000) * (1 + ppm * 1e-6)
        // What the filter holds (a few tens of frames) has not come out yet.
        let made = Double(out.count / 2 + converter.delay)
        #expect(abs(made - expected) <= 2, "\(made) frames for \(expected): \((made / expected - 1) * 1e6) ppm off")
        // The tone's frequency as stretched, to within a few ppm: a fit at a frequency off by
        // 0.3 mHz already leaves -64 dB.
        let second = MediaFixtures.left(Array(out[96_000..<(96_000 + 96_000)]))
        let residual = (-20...20).map { step in
            MediaFixtures.residualDB(second, hz: 1_000 / (1 + ppm * 1e-6) + Double(step) * 0.000_05, rate: 48_000)
        }.min()!
        #expect(residual < -80, "THD+N \(residual) dB")
    }
}
