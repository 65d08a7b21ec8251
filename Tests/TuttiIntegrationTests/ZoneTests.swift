import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
    /// Zones on loopback: the real coordinator with two zones playing different music, four
    /// real followers writing WAV files on this host's clock, rooms moved between zones.
    @Suite("Zones: different music in different rooms", .timeLimit(.minutes(2)))
    struct ZoneTests {
        typealias Room = ControlTests.Room

        /// How `y` lines up with `x` at local time `time`, over 100 ms: the lag (samples) and
        /// the correlation of their differences (near 1: the same music in step, above 0.6
        /// half a sample apart on pink noise; near 0: other music).
        static func match(_ x: Room, _ y: Room, at time: Int64, search: Int = 96) -> (lag: Double, correlation: Double)? {
            let i = x.frame(at: time), j = y.frame(at: time)
            guard i - search >= 0, j - search >= 0, i + 4_800 + search < x.samples.count, j + 4_800 + search < y.samples.count else { return nil }
            let a = Analysis.difference(Array(x.samples[(i - search)..<(i + 4_800 + search)]))
            let b = Analysis.difference(Array(y.samples[(j - search)..<(j + 4_800 + search)]))
            return Analysis.lag(a, b, start: search, length: 4_800, maxLag: search)
        }

        /// The skews (µs) between two rooms over local times `from..<to`, every 100 ms.
        static func skews(_ x: Room, _ y: Room, from: Int64, to: Int64) -> [Double] {
            stride(from: from, to: to, by: 100_000_000).compactMap { t in
                match(x, y, at: t).flatMap { $0.correlation > 0.6 ? $0.lag * 1e6 / 48_000 : nil }
            }
        }

        /// SIGKILL: the zones, their queues and places, and which zone each room is in come
        /// back; the rooms, told their zone's new stream, play it when it plays again.
        @Test func zonesSurviveAKillAndTheirRoomsFollowTheNewStreams() throws {
            let h = try Harness("zones-kill")
            let noise = try h.noiseSong(seconds: 20)
            let control = ControlTests()
            let clock = try control.coordinator(h, [], [])
            let api = try ControlAPI(h)
            try control.follower(h, "Den", clock: clock, output: "null")
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.first?.connected) == true })
            try api.change("POST", "/zones", #"{"name": "Kids Room"}"#)
            try api.change("PUT", "/rooms/Den", #"{"zone": "Kids Room"}"#)
            try api.change("POST", "/zones/kids-room/queue", #"{"paths": ["\#(noise)"]}"#)
            try api.change("POST", "/zones/kids-room/transport/play")
            #expect(Harness.wait(timeout: 5) { (try? api.rooms.first?.report?.state) == .playing })
            Thread.sleep(forTimeInterval: 1)
            let paused = try #require(try api.change("POST", "/zones/kids-room/transport/pause"))
            h.kill("coordinator")

            try h.tutti("coordinator2", ["coordinator", "--multicast", "off", "--clock-listen", clock])
            let again = try ControlAPI(h, coordinator: "coordinator2")
            let zones = try again.get("/zones", as: [ZoneView].self)
            #expect(zones.map(\.id) == ["default", "kids-room"])
            #expect(Harness.wait(timeout: 5) { (try? again.get("/zones", as: [ZoneView].self).last?.rooms) == ["Den"] })
            let restored = try again.get("/zones/kids-room/now-playing", as: NowPlaying.self)
            #expect(restored.state == .paused && abs(restored.elapsed - paused.elapsed) < 0.01, "\(restored.elapsed) vs \(paused.elapsed)")
            #expect(try again.get("/zones/kids-room/queue", as: QueueView.self).items.count == 1)
            try again.change("POST", "/zones/kids-room/transport/play")
            #expect(Harness.wait(timeout: 5) { (try? again.rooms.first?.report?.state) == .playing },
                    "the room did not play its zone's new stream: \(h.log("Den").suffix(600))")
        }

        @Test func twoZonesPlayApartInSyncAndAMovedRoomSwitchesAtOnce() throws {
            let h = try Harness("zones")
            // Pink noise in both zones, drawn apart: every window of either lines up with one lag
            // only (the demo song's sustained chords gave false peaks now and then).
            let noise = try h.noiseSong(seconds: 40)
            let otherNoise = try h.noiseSong(seconds: 40, name: "other-noise")
            let control = ControlTests()
            let clock = try control.coordinator(h, [otherNoise], ["--loop"])
            let api = try ControlAPI(h)
            let kids = try JSONDecoder().decode(ZoneView.self, from: Data(try api.call("POST", "/zones", json: #"{"name": "Kids Room"}"#).body.utf8))
            #expect(kids.id == "kids-room")
            try api.change("POST", "/zones/kids-room/queue", #"{"paths": ["\#(noise)"]}"#)
            try api.change("PUT", "/zones/Kids%20Room/loop", #"{"mode": "all"}"#)
            try api.change("POST", "/zones/kids-room/transport/play")
            for name in ["a1", "a2", "b1", "b2"] { try control.follower(h, name, clock: clock, output: "wav:" + h.path(name + ".wav")) }
            #expect(Harness.wait(timeout: 10) { (try? api.rooms.filter { $0.report?.state == .playing }.count) == 4 })
            for name in ["b1", "b2"] { try api.change("PUT", "/rooms/\(name)", #"{"zone": "Kids Room"}"#) }
            #expect(Harness.wait(timeout: 5) { (try? api.get("/zones/kids-room", as: ZoneView.self).rooms.sorted()) == ["b1", "b2"] })
            let monotonic = SystemClock()
            // A room that joins a stream settles its timing over its first seconds (as at any
            // start): the zones' figures are taken after that.
            Thread.sleep(forTimeInterval: 4)
            let calm = monotonic.nanosecondsNow()
            Thread.sleep(forTimeInterval: 1)
            let movedAt = monotonic.nanosecondsNow()
            try api.change("PUT", "/rooms/a2", #"{"zone": "kids-room"}"#)
            Thread.sleep(forTimeInterval: 2)
            for name in ["a1", "a2", "b1", "b2"] { h.stop(name) }
            let zones = try api.get("/zones", as: [ZoneView].self)
            #expect(zones.map(\.rooms) == [["a1"], ["a2", "b1", "b2"]])
            #expect(zones.map(\.nowPlaying.state) == [.playing, .playing])

            let a1 = try control.wav(h.path("a1.wav")), a2 = try control.wav(h.path("a2.wav"))
            let b1 = try control.wav(h.path("b1.wav")), b2 = try control.wav(h.path("b2.wav"))
            // Two zones, two kinds of music: each zone's rooms in step, the zones unlike.
            let before = calm - 2_000_000_000
            for (x, y, zone) in [(a1, a2, "default"), (b1, b2, "kids")] {
                let skews = Self.skews(x, y, from: before, to: movedAt)
                #expect(skews.count >= 15, "\(zone): too few comparable windows (\(skews.count))")
                let typical = Analysis.median(skews.map(abs)), p90 = Analysis.percentile(skews.map(abs), 0.9)
                #expect(typical < 60 && p90 < 150, "\(zone)'s rooms apart: median \(typical) µs, p90 \(p90) µs")
            }
            let across = Self.match(a1, b1, at: calm)
            #expect(across.map { $0.correlation < 0.3 } == true, "the two zones play the same music: \(String(describing: across))")

            // Moved: a2 plays the kids' music, in step with them, within 200 ms (and its
            // device's latency) of the move; before it, the default zone's.
            // (Each check's message names the figures only: a recording is long.)
            let still = Self.skews(a1, a2, from: movedAt - 700_000_000, to: movedAt - 100_000_000)
            #expect(still.count >= 4 && Analysis.median(still.map(abs)) < 60, "before the move a2 played with a1: \(still) µs")
            let switched = movedAt + 200_000_000 + 80_000_000
            for t in stride(from: switched, to: movedAt + 1_200_000_000, by: 100_000_000) {
                let m = Self.match(b1, a2, at: t)
                #expect(m.map { $0.correlation > 0.6 && abs($0.lag) < 3 } == true,
                        "\((t - movedAt) / 1_000_000) ms after the move a2 is not with the kids: \(String(describing: m))")
            }
            let left = Self.match(a1, a2, at: switched)
            #expect(left.map { $0.correlation < 0.3 } == true, "a2 still plays the default zone's music: \(String(describing: left))")
            // The switch was faded, not cut: no sample jumps by more than the music does.
            let i = a2.frame(at: movedAt), j = a2.frame(at: movedAt + 400_000_000)
            let jumps = zip(a2.samples[i..<j], a2.samples[(i + 1)...j]).map { abs($1 - $0) }
            #expect((jumps.max() ?? 0) < 0.5, "a click in a2's handover: a step of \(jumps.max() ?? 0)")
        }
    }
}
