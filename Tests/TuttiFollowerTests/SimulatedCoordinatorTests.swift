import Testing
import TuttiAPI
import TuttiCore
import TuttiTesting
@testable import TuttiFollower
@testable import TuttiNode

/// What only the whole house can show: the real coordinator (its house actor, clock
/// service, rooms' messenger, sealed outlets and senders) and the real followers, in memory,
/// on drifting clocks over lossy, jittery links (`SimulatedHouse`).
@Suite("The whole house in memory")
struct SimulatedCoordinatorTests {
    /// The worst gap (ns) between when a frame of `zone`'s stream was heard and when its
    /// position was due there, over frames heard in [from, to).
    static func worst(_ m: SimulatedHouse.Member, _ house: SimulatedHouse, zone: String = ZoneInfo.defaultID,
                      from: Int64, to: Int64) -> Double {
        m.heard.filter { $0.time >= from && $0.time < to }
            .map { abs(($0.position - house.position(at: $0.time, zone: zone)) / 48_000 * 1e9) }.max() ?? 0
    }

    /// A room moves to a zone of its own, playing something else, and back, while every link
    /// loses 2 %: it plays the other zone's stream in time there, the default zone's again
    /// when it is back, and nothing but one or the other meanwhile; the room that stays
    /// loses nothing.
    @Test func aRoomMovesToAnotherZoneAndBackUnderLoss() async throws {
        let house = try await SimulatedHouse(TransportPlayoutTests.followers())
        try await house.run(until: 4_000_000_000)
        let away = try await house.house.addZone("Away")
        // The zone's queue: one more index source (the simulated coordinator opens every entry as one;
        // nothing asks the address for anything, and it is this host's should anything try).
        _ = try await house.house.add(paths: ["http://127.0.0.1:9/index.flac"], placement: .now, zone: away.id)
        try await house.run(until: 5_000_000_000)
        let move = { (zone: String) in RoomUpdate(name: nil, volume: nil, muted: nil, outputDelayMs: nil, zone: zone) }
        _ = try await house.house.updateRoom("room1", move(away.id))
        try await house.run(until: 9_000_000_000)
        _ = try await house.house.updateRoom("room1", move(ZoneInfo.defaultID))
        try await house.run(until: 13_000_000_000)

        let stays = house.members[0], moves = house.members[1]
        #expect(LookaheadTests.breaks(stays, from: 3_000_000_000, to: 12_500_000_000) == 0, "the room that stays plays every frame in turn")
        #expect(Self.worst(stays, house, from: 3_000_000_000, to: 12_500_000_000) < 50_000)
        #expect(stays.engine.statistics.concealedFrames == 0)
        // Away's stream is heard within a second of the move, in time; the default zone's
        // again within a second of the move back.
        #expect(Self.worst(moves, house, zone: away.id, from: 6_000_000_000, to: 9_000_000_000) < 50_000)
        #expect(Self.worst(moves, house, from: 10_000_000_000, to: 13_000_000_000) < 50_000)
        // Nothing else in between: every frame is one of the two streams' at its time.
        let stray = moves.heard.filter { $0.time >= 5_000_000_000 && $0.time < 10_000_000_000 }.filter { h in
            abs(h.position - house.position(at: h.time)) > 48 && abs(h.position - house.position(at: h.time, zone: away.id)) > 48
        }
        #expect(stray.isEmpty, "\(stray.count) frames of neither stream at their time")
        let there = try #require(moves.heard.first { $0.time > 5_000_000_000 && abs($0.position - house.position(at: $0.time, zone: away.id)) < 2 })
        let back = try #require(moves.heard.first { $0.time > 9_000_000_000 && abs($0.position - house.position(at: $0.time)) < 2 })
        #expect(there.time - 5_000_000_000 < 300_000_000 && back.time - 9_000_000_000 < 300_000_000,
                "away \((there.time - 5_000_000_000) / 1_000_000) ms after the move, back \((back.time - 9_000_000_000) / 1_000_000) ms after")
        #expect(LookaheadTests.breaks(moves, from: 3_000_000_000, to: 12_500_000_000) == 2, "a break at each move, none else")
    }

    /// A pause whose epoch end is lost on the way to every room twice (its three copies, then
    /// the first resend): the house's last resend still reaches the rooms before the cut, and
    /// every room stops there, to the sample.
    @Test func anEpochEndLostTwiceStillStopsEveryRoomAtTheCut() async throws {
        let house = try await SimulatedHouse(TransportPlayoutTests.followers())
        final class Dropped: @unchecked Sendable { var count: [Int: Int] = [:] }
        let dropped = Dropped()
        house.dropsEpochEnd = { index, _ in
            dropped.count[index, default: 0] += 1
            return dropped.count[index]! <= 4
        }
        house.commands = [(5_000_000_000, .pause(resumeAfter: 1_000_000_000))]
        try await house.run(until: 8_000_000_000)
        #expect(dropped.count.values.allSatisfy { $0 >= 5 }, "the house sent each room its end at least five times: \(dropped.count)")
        let cut = try #require(house.cuts.first).at
        for m in house.members {
            try TransportPlayoutTests.expectPaused(m, house, from: cut, until: cut + 1_000_000_000)
            #expect(m.engine.statistics.resyncs == 0)
        }
    }

    /// A member is revoked while the house plays: the stream moves to a new key once the
    /// others hold it, and they play through the move without losing a frame.
    @Test func theStreamMovesToANewKeyWithoutAGap() async throws {
        let house = try await SimulatedHouse(TransportPlayoutTests.followers())
        try await house.run(until: 4_000_000_000)
        let keyring = house.coordinator.keyring
        let before = keyring.streamInUse.generation
        _ = try #require(keyring.add(name: "old phone", at: house.now))
        _ = try await house.house.revokeMember("old phone")
        try await house.run(until: 14_000_000_000)
        #expect(keyring.streamInUse.generation > before, "the stream moved to the new key")
        for m in house.members {
            #expect(LookaheadTests.breaks(m, from: 3_000_000_000, to: 13_500_000_000) == 0, "every frame in turn")
            #expect(m.engine.statistics.concealedFrames == 0)
            #expect(Self.worst(m, house, from: 3_000_000_000, to: 13_500_000_000) < 50_000)
        }
    }

    /// The coordinator itself restarts (as SIGTERM and a new start do: the house saves
    /// where it is), down for 300 ms, its clock 37 s elsewhere after: every room plays what
    /// it had of the old stream, then silence, then the new stream from where the house left
    /// off, in time, and nothing else.
    @Test func theCoordinatorRestartsAndTheRoomsFollowTheNewStream() async throws {
        let house = try await SimulatedHouse(TransportPlayoutTests.followers())
        try await house.run(until: 5_000_000_000)
        let old = try #require(house.epochStarts.last)
        try await house.restartCoordinator(offset: 37_000_000_000, down: 300_000_000)
        try await house.run(until: 13_000_000_000)
        let new = try #require(house.epochStarts.last)
        #expect(new.epoch != old.epoch && new.at > 5_300_000_000)
        #expect(abs(Double(new.position.count) - house.position(at: 5_000_000_000, zone: ZoneInfo.defaultID, epoch: old)) < 48_000,
                "it plays on from where it stopped")
        for m in house.members {
            let back = try #require(m.heard.first { $0.time >= new.at - 50_000 }, "the room plays again")
            #expect(back.time - new.at < 500_000_000, "back \((back.time - new.at) / 1_000_000) ms after the new stream starts")
            #expect(Self.worst(m, house, from: back.time + 1_000_000_000, to: 13_000_000_000) < 50_000)
            // The old stream where it was due (its last packet's end concealed: one packet's
            // fade), then silence, then the new one where it is due.
            let stray = m.heard.filter { $0.time >= 4_000_000_000 }.filter { h in
                let due = h.time < new.at ? house.position(at: h.time, zone: ZoneInfo.defaultID, epoch: old) : house.position(at: h.time)
                return abs(h.position - due) > 2
            }
            let strayTimes = Set(stray.map(\.time))
            let lastInPlace = try #require(m.heard.last { $0.time < new.at && !strayTimes.contains($0.time) })
            #expect(stray.allSatisfy { $0.time > lastInPlace.time && $0.time < lastInPlace.time + 21_000_000 && $0.time < new.at },
                    "only the old stream's end faded out: \(stray.count) frames out of place across the restart")
            #expect(m.engine.statistics.concealedFrames <= 960)
        }
    }
}
