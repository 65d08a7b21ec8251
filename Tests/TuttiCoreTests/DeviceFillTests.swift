import Testing
@testable import TuttiCore

/// When the playout writes and how much: a floor before the device runs dry, topping it up
/// to a floor and a period ahead; the floor grows at a near miss and at a hole, never shrinks.
@Suite("Device fill")
struct DeviceFillTests {
    static let ms: Int64 = 1_000_000
    static let frame = 1e9 / 48_000

    @Test func aWriteOnTimeTopsTheDeviceUpByAPeriod() {
        var fill = DeviceFill()
        #expect(fill.floor == 20 * Self.ms && fill.fillTarget == 60 * Self.ms)
        // The first write, before anything is known of the device: the whole fill.
        let first = fill.write(at: 0, dryAt: nil)
        #expect(first.frames == 2_880 && first.event == nil)
        // Due 20 ms before the device runs dry, it writes the 40 ms that were played.
        let dry = 1_000 * Self.ms
        #expect(fill.writeDue(dryAt: dry) == 980 * Self.ms)
        let (frames, event) = fill.write(at: 980 * Self.ms, dryAt: dry)
        #expect(frames == 1_920 && event == nil)
        #expect(fill.closest == 20 * Self.ms && fill.nearMisses == 0 && fill.dryWrites == 0)
    }

    @Test func aNearMissRaisesTheFloorToTwiceTheLatenessThatAteIntoIt() {
        var fill = DeviceFill()
        // 12 ms late: 8 ms left, under half the floor.
        let (frames, event) = fill.write(at: 992 * Self.ms, dryAt: 1_000 * Self.ms)
        #expect(event == .nearMiss(margin: 8 * Self.ms, floor: 30 * Self.ms), "grows by half, at least")
        #expect(frames == 62 * 48, "tops up to the new floor and a period")
        // 28 ms late against 30: twice 28.
        #expect(fill.write(at: 1_028 * Self.ms, dryAt: 1_030 * Self.ms).event == .nearMiss(margin: 2 * Self.ms, floor: 56 * Self.ms))
        // More than half the floor left: no news, and the floor stays.
        #expect(fill.write(at: 2_000 * Self.ms, dryAt: 2_030 * Self.ms).event == nil)
        #expect(fill.floor == 56 * Self.ms && fill.nearMisses == 2)
    }

    @Test func aWriteAfterTheDeviceRanDryCoversTheTimeItMissed() {
        var fill = DeviceFill()
        // 10 ms after the device ran dry: its frames keep their places (a sound server's read
        // index moves on), so the write spans the 10 ms lost and the new fill.
        let (frames, event) = fill.write(at: 1_010 * Self.ms, dryAt: 1_000 * Self.ms)
        #expect(event == .ranDry(dry: 10 * Self.ms, floor: 60 * Self.ms))
        #expect(frames == 110 * 48)
        #expect(fill.dryWrites == 1 && fill.closest == -10 * Self.ms)
    }

    @Test func aMachineThatSleptIsNotCaughtUpAllAtOnce() {
        var fill = DeviceFill()
        let (frames, _) = fill.write(at: 10_000 * Self.ms, dryAt: 1_000 * Self.ms)
        #expect(Double(frames) * Self.frame <= Double(fill.fillTarget + DeviceFill.catchUpLimit) + Self.frame)
    }

    @Test func aWritePlannedOnAGuessIsNotJudged() {
        var fill = DeviceFill()
        let (frames, event) = fill.write(at: 999 * Self.ms, dryAt: 1_000 * Self.ms, judged: false)
        #expect(event == nil && fill.floor == 20 * Self.ms && fill.closest == nil)
        #expect(frames == 59 * 48)
    }

    @Test func theFloorGrowsNoFurtherThanTheDeviceHolds() {
        var config = DeviceFill.Configuration()
        config.ceiling = 50 * Self.ms
        var fill = DeviceFill(configuration: config)
        _ = fill.write(at: 1_100 * Self.ms, dryAt: 1_000 * Self.ms)
        #expect(fill.floor == 50 * Self.ms)
        fill.deviceRanDry()
        #expect(fill.floor == 50 * Self.ms)
    }

    @Test func theDeviceSayingItRanDryRaisesTheFloorByHalf() {
        var fill = DeviceFill()
        fill.deviceRanDry()
        #expect(fill.floor == 30 * Self.ms)
    }
}
