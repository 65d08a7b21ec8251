import Foundation
import Testing
@testable import TuttiCore

@Suite("Rate servo and sample queue")
struct RateServoTests {
    /// A playback whose device runs `ppm` fast: the servo must pull the error to zero
    /// and settle at the compensating ratio, never exceeding its limit.
    @Test(arguments: [-300.0, -100.0, 0.0, 100.0, 300.0])
    func cancelsConstantDrift(ppm: Double) {
        var servo = RateServo()
        var error = 0.002  // start 2 ms late
        let dt = 0.01
        var maxRatioStep = 0.0
        var lastRatio = 1.0
        for _ in 0..<6_000 {  // 60 s
            let ratio = servo.update(error: error, interval: dt)
            maxRatioStep = max(maxRatioStep, abs(ratio - lastRatio))
            lastRatio = ratio
            #expect(abs(ratio - 1) <= servo.maximumCorrection + 1e-12)
            // Consuming `ratio` input seconds per output second reduces lateness by (ratio - 1) dt;
            // a device running fast adds lateness at `ppm`.
            error += (ppm * 1e-6 - (ratio - 1)) * dt
        }
        #expect(abs(error) < 2e-6, "residual error \(error * 1e6) µs")
        #expect(abs((servo.ratio - 1) - ppm * 1e-6) < 5e-6)
        #expect(maxRatioStep <= servo.maximumSlew * dt + 1e-9)  // smooth: pitch glides
    }

    @Test func sampleQueueInterpolatesAtFractionalPositions() {
        var q = SampleQueue(start: 100)
        _ = q.append { out in
            for i in 0..<10 { out.append(Float(i)); out.append(Float(-i)) }
            return 10
        }
        #expect(q.end == 110)
        var out: [Float] = []
        q.interpolate(from: 102.5, step: 1.0, count: 3, into: &out)
        #expect(out == [2.5, -2.5, 3.5, -3.5, 4.5, -4.5])
        out.removeAll()
        q.interpolate(from: 100, step: 2.0, count: 3, into: &out)
        #expect(out == [0, 0, 2, -2, 4, -4])
        q.discard(before: 105)
        #expect(q.start == 105)
        out.removeAll()
        q.interpolate(from: 105.25, step: 1, count: 1, into: &out)
        #expect(out == [5.25, -5.25])
    }

    /// A minute of play, 20 ms packets decoded 120 ms ahead of 20 ms renders: what was
    /// played is freed before the storage outgrows what it started with, and what is still
    /// queued stays readable across the moves.
    @Test func sampleQueueKeepsItsStorageInSteadyPlay() {
        var q = SampleQueue(start: 0)
        let initial = q.capacity
        var played: Int64 = 0
        for packet in 0..<3_000 {
            _ = q.append { out in
                for i in 0..<960 { let v = Float(packet * 960 + i); out += [v, -v] }
                return 960
            }
            guard packet >= 6 else { continue }
            var out: [Float] = []
            q.interpolate(from: Double(played), step: 1, count: 960, into: &out)
            #expect(out[0] == Float(played) && out[1_918] == Float(played + 959))
            played += 960
            q.discard(before: played)
        }
        #expect(q.capacity == initial, "storage grew from \(initial) to \(q.capacity) samples")
        // A queue that holds more than the storage it started with still grows to hold it.
        _ = q.append { out in out += [Float](repeating: 1, count: 2 * initial); return initial }
        #expect(q.end - q.start == 6 * 960 + Int64(initial))
    }

    /// The fixed-point resampler against plain arithmetic, at a servo's ratio over a chunk.
    @Test(arguments: [0.9995, 1.0, 1.000_3, 1.0005])
    func interpolationMatchesAReference(step: Double) {
        var q = SampleQueue(start: 1_000)
        _ = q.append { out in
            for i in 0..<1_000 { out += [Float(sin(Double(i) * 0.05)), Float(cos(Double(i) * 0.07))] }
            return 1_000
        }
        var out: [Float] = []
        let from = 1_010.37
        q.interpolate(from: from, step: step, count: 480, into: &out)
        #expect(out.count == 960)
        var worst: Float = 0
        for i in 0..<480 {
            let p = from - 1_000 + step * Double(i)
            let k = Int(p), f = p - Double(k)
            let l = sin(Double(k) * 0.05) * (1 - f) + sin(Double(k + 1) * 0.05) * f
            let r = cos(Double(k) * 0.07) * (1 - f) + cos(Double(k + 1) * 0.07) * f
            worst = max(worst, abs(out[2 * i] - Float(l)), abs(out[2 * i + 1] - Float(r)))
        }
        #expect(worst < 1e-5)
    }
}

@Suite("Gain stage")
struct GainStageTests {
    @Test func glidesToTheTargetWithoutAJumpAndLeavesUnityAlone() {
        var stage = GainStage(rampFrames: 100)
        var ones = [Float](repeating: 1, count: 400)
        stage.apply(to: &ones)
        #expect(ones.allSatisfy { $0 == 1 })
        stage.target = 0
        var out = [Float](repeating: 1, count: 600)
        stage.apply(to: &out)
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        #expect(left[0] < 1 && left[0] > 0.98)
        #expect(left[101] == 0 && left[299] == 0)
        #expect(zip(left, left.dropFirst()).allSatisfy { $0 - $1 <= 0.0101 }, "never steeper than the ramp")
        stage.target = 0.5
        var up = [Float](repeating: 1, count: 200)
        stage.apply(to: &up)
        #expect(up[198] == 0.5 && stage.gain == 0.5)
    }
}
