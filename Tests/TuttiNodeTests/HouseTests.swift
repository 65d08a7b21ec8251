import Dispatch
import Foundation
import Synchronization
import Testing
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet
import TuttiSecurity
@testable import TuttiNode

/// The house actor alone, in memory: its own state folder, a messenger on a loopback socket,
/// no player and no network beyond it.
@Suite("The house")
struct HouseTests {
    static let song = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("assets/demo/tutti-demo.mp3").path

    final class Rig: Sendable {
        let folder = NSTemporaryDirectory() + "tutti-house-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let store: StateStore
        let house: House
        /// Where the state is written: the tests hold it up.
        let saving = DispatchQueue(label: "test.saving")

        init() throws {
            store = try StateStore(directory: folder)
            let socket = try UDPSocket()
            try socket.bind(SocketAddress(address: 0x7F00_0001, port: 0))
            let messenger = RoomMessenger(socket: socket, clock: SystemClock(), keys: OneKey(HMACAuthenticator.random()))
            house = try House(store: store, messenger: messenger, version: "test", saving: saving, clock: SystemClock())
        }

        deinit { try? FileManager.default.removeItem(atPath: folder) }

        /// Holds the state's writes until the returned gate is opened.
        func holdSaving() -> DispatchSemaphore {
            let gate = DispatchSemaphore(value: 0)
            saving.async { gate.wait() }
            return gate
        }
    }

    /// The events of a subscription, as they come.
    final class EventLog: Sendable {
        final class Seen: Sendable { let events = Mutex<[Event]>([]) }
        private let seen = Seen()
        private let reader: Task<Void, Never>

        init(_ events: AsyncStream<Event>) {
            let seen = self.seen
            reader = Task { for await event in events { seen.events.withLock { $0.append(event) } } }
        }

        deinit { reader.cancel() }

        /// What came, by kind (for messages).
        var kinds: [String] { seen.events.withLock { $0.map { "\($0.kind)" } } }

        /// The first event that `matches`, waiting up to 5 s for it (nil: none came).
        func first(_ matches: (Event) -> Bool) async -> Event? {
            for _ in 0..<500 {
                if let event = seen.events.withLock({ $0.first(where: matches) }) { return event }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    /// A change is made at once, the house serves others while its state is being written,
    /// and the change is acknowledged only once it is on disk.
    @Test func aChangeIsMadeAtOnceAndAcknowledgedOnceOnDisk() async throws {
        let rig = try Rig()
        let house = rig.house
        _ = try await house.add(paths: [Self.song], placement: .end)
        #expect(rig.store.load()?.queue.items.map(\.path) == [Self.song])
        let before = try #require(rig.store.load())

        let gate = rig.holdSaving()
        let acknowledged = Mutex(false)
        let play = Task {
            let answer = try await house.transport(.play)
            acknowledged.withLock { $0 = true }
            return answer
        }
        // The house answers others meanwhile, and already plays.
        var playing = false
        for _ in 0..<250 where !playing {
            playing = await house.nowPlaying().state != .stopped
            if !playing { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(playing, "the change was not made while its state was being written")
        #expect(await house.queue().items.count == 1)
        try await Task.sleep(for: .milliseconds(100))
        let early = acknowledged.withLock { $0 }
        #expect(!early, "acknowledged before it was on disk")
        #expect(rig.store.load() == before)

        gate.signal()
        let answer = try await play.value
        #expect(answer.state == .loading || answer.state == .playing)
        let saved = try #require(rig.store.load())
        #expect(saved.epoch == answer.epoch && saved.epoch != before.epoch)
    }

    /// A change whose state cannot be written is refused with a 500 that says why.
    @Test func aChangeThatCannotBeSavedIsRefused() async throws {
        let rig = try Rig()
        // A folder where the state file goes: the write's rename fails.
        try FileManager.default.createDirectory(atPath: rig.store.statePath + "/in-the-way", withIntermediateDirectories: true)
        let error = await #expect(throws: ControlError.self) { try await rig.house.setLoopMode(.all) }
        #expect(error?.status == 500)
        #expect(error?.message.contains("could not be saved") == true)
    }

    /// What the player and the rooms tell the house reaches it in order, while it runs:
    /// a room joins (an event, and the rooms list), a track's length becomes its duration,
    /// its end stops the house.
    @Test func noticesAreHeardInOrder() async throws {
        let rig = try Rig()
        let house = rig.house
        _ = try await house.add(paths: [Self.song], placement: .end)
        let running = Task { await house.run() }
        defer { running.cancel() }
        let events = EventLog(await house.subscribe())

        let address = SocketAddress(address: 0x7F00_0001, port: 40_000)
        house.tell(.report(RoomReport(name: "Kitchen", state: .playing), from: address, member: 0, at: house.coordinatorTime()))
        let joined = await events.first { if case .roomJoined = $0.change { true } else { false } }
        guard case let .roomJoined(room) = joined?.change else {
            Issue.record("no room-joined event")
            return
        }
        #expect(room.name == "Kitchen" && room.connected)
        #expect(await house.rooms().map(\.name) == ["Kitchen"])

        try await house.setLoopMode(.once)  // a fresh house loops the queue
        let playing = try await house.transport(.play)
        let id = try #require(playing.itemID)
        let end = CoordinatorTime(nanoseconds: house.coordinatorTime() + 200_000_000)
        house.tell(.player(.opened(itemID: id, length: 480_000), zone: ZoneInfo.defaultID))
        house.tell(.player(.ended(itemID: id, at: end), zone: ZoneInfo.defaultID))
        let stopped = await events.first { if case .state(.stopped, _, _) = $0.change { true } else { false } }
        #expect(stopped != nil, "the track's end did not stop the house: \(events.kinds)")
        #expect(house.coordinatorTime() >= end.nanoseconds - 20_000_000)
        #expect(await house.queue().items.first?.duration == 10)
    }
}

/// Every number a request can carry, through the real house and the API's own checks, at
/// the values that break conversions: each is taken or refused with a message, never a trap
/// (1e300 as a room's delay once killed the coordinator while it wrote the refusal).
@Suite("Numbers from outside")
struct OutsideNumberTests {
    static let extremes: [Double] = [0, -0.0, 1, -1, 0.5, 100, 101, 1e19, -1e19, 1e300, -1e300, .nan, .infinity, -.infinity,
                                     Double(Int64.max), Double(Int64.min), Double(Int32.max), .leastNonzeroMagnitude, .greatestFiniteMagnitude]

    @Test(arguments: extremes)
    func everyNumberIsTakenOrRefusedNeverATrap(_ x: Double) async throws {
        let rig = try HouseTests.Rig()
        await rig.house.received(RoomReport(name: "Kitchen"), from: SocketAddress(address: 0x7F00_0001, port: 9), at: 0)
        func refusal(_ body: () async throws -> Void) async -> String? {
            do {
                try await body()
                return nil
            } catch let error as ControlError {
                #expect((400..<500).contains(error.status), "\(error)")
                return error.message
            } catch {
                Issue.record("not a ControlError: \(error)")
                return "\(error)"
            }
        }
        let inRange = x.isFinite && (0...100).contains(x)
        // The house's volume as a fraction (the route takes percent and divides), a room's in percent.
        let volume = await refusal { try await rig.house.setGroup(volume: x, muted: nil) }
        #expect((volume == nil) == (x.isFinite && (0...1).contains(x)), "volume \(x): \(volume ?? "taken")")
        let roomVolume = await refusal { _ = try await rig.house.updateRoom("Kitchen", RoomUpdate(name: nil, volume: x, muted: nil, outputDelayMs: nil)) }
        #expect((roomVolume == nil) == inRange, "room volume \(x): \(roomVolume ?? "taken")")
        let delay = await refusal { _ = try await rig.house.updateRoom("Kitchen", RoomUpdate(name: nil, volume: nil, muted: nil, outputDelayMs: x)) }
        #expect((delay == nil) == (x.isFinite && (0...2000).contains(x)), "delay \(x): \(delay ?? "taken")")
        for update in [ReplayGainUpdate(preampDb: x), ReplayGainUpdate(untaggedDb: x)] {
            let gain = await refusal { _ = try await rig.house.setReplayGain(update) }
            #expect((gain == nil) == ReplayGain.accepts(x), "replaygain \(x): \(gain ?? "taken")")
        }
        // The transport's numbers go through the API's requests first.
        for command in [try? SeekRequest(position: x).command(), try? SkipRequest(seconds: x).command()].compactMap({ $0 }) {
            _ = try? await rig.house.transport(command)
        }
    }
}

/// Zones in the house actor: each with its queue and transport and sender, rooms moved
/// between them and told their zone's stream, events by zone, all of it saved.
@Suite("Zones in the house")
struct HouseZoneTests {
    /// Senders that do not send: a player per zone (never run), its SSRC, and what was stopped.
    final class Senders: ZoneSenders {
        let started = Mutex<[String: UInt32]>([:])
        let stopped = Mutex<[UInt32]>([])
        func start(zone: String, news: @escaping @Sendable (PlayerNews) -> Void) throws -> (ssrc: UInt32, player: Player) {
            let ssrc = UInt32.random(in: 1...UInt32.max)
            let player = try Player(configuration: .init(), ssrc: ssrc, stopFlag: StopFlag(), clock: SystemClock(), send: { _ in }, sendReport: { _ in })
            started.withLock { $0[zone] = ssrc }
            return (ssrc, player)
        }
        func stop(ssrc: UInt32) { stopped.withLock { $0.append(ssrc) } }
        func codec(zone: String) -> StreamCodec { zone == "kids" ? .flac : .opus }
    }

    /// A room's follower: a socket the coordinator's settings come to.
    final class Room: Sendable {
        let socket: UDPSocket
        let address: SocketAddress
        init() throws {
            socket = try UDPSocket()
            try socket.bind(SocketAddress(address: 0x7F00_0001, port: 0))
            address = try socket.localAddress()
        }
        /// The stream the latest settings that came name (nil: none came within 1 s).
        func namedStream() throws -> UInt32? {
            var stream: UInt32?
            while let datagram = try socket.receive(timeoutMilliseconds: stream == nil ? 1_000 : 50) {
                if case let .roomSettings(_, _, _, _, named) = try ControlMessage.decode(Array(datagram.bytes.dropLast(16))).message {
                    stream = named
                }
            }
            return stream
        }
    }

    func report(_ house: House, _ name: String, _ room: Room, version: UInt32 = 0) async {
        var report = RoomReport(name: name, state: .playing)
        report.settingsVersion = version
        await house.received(report, from: room.address, at: house.coordinatorTime())
    }

    /// A room whose packets came late raises its zone's live latency (what the player is
    /// told), within the cap; now playing shows the latency in force as the player says it.
    /// A house whose latency was fixed (`--latency-ms`) keeps it.
    @Test func aRoomsLatePacketsRaiseItsZonesLatency() async throws {
        let rig = try HouseTests.Rig()
        let room = SocketAddress(address: 0x7F00_0001, port: 9)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: -100), from: room, at: 0)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner == nil, "a fixed latency is not fitted")
        await rig.house.setLiveLatency(floor: 150_000_000, cap: 1_000_000_000)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: 60), from: room, at: 1_000_000_000)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner?.target == 150_000_000)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: -100), from: room, at: 2_000_000_000)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner?.target == 275_000_000)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: -1e300), from: room, at: 3_000_000_000)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner?.target == 1_000_000_000)
        #expect(try await rig.house.nowPlaying(zone: nil).latencyMilliseconds == 150)
        await rig.house.heard(.latency(420_000_000), zone: ZoneInfo.defaultID)
        #expect(try await rig.house.nowPlaying(zone: nil).latencyMilliseconds == 420)
    }

    /// A room whose retransmissions came with too little to spare raises its zone's live
    /// latency, though its first copies had plenty.
    @Test func aRoomsLateRetransmissionsRaiseItsZonesLatency() async throws {
        let rig = try HouseTests.Rig()
        let room = SocketAddress(address: 0x7F00_0001, port: 9)
        await rig.house.setLiveLatency(floor: 150_000_000, cap: 1_000_000_000)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: 30, recoveryHeadroomMilliseconds: 5),
                                 from: room, at: 1_000_000_000)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner?.target == 175_000_000)
        await rig.house.received(RoomReport(name: "Kitchen", state: .playing, headroomMilliseconds: 30, recoveryHeadroomMilliseconds: -60),
                                 from: room, at: 2_000_000_000)
        #expect(await rig.house.plays[ZoneInfo.defaultID]?.tuner?.target == 225_000_000)
    }

    @Test func zonesPlayApartMoveRoomsAndSurviveARestart() async throws {
        let rig = try HouseTests.Rig()
        let house = rig.house
        let senders = Senders()
        try await house.attach(senders)
        let (kitchen, living) = (try Room(), try Room())
        await report(house, "Kitchen", kitchen)
        await report(house, "Living", living)
        #expect(try kitchen.namedStream() == 0, "a house of one zone names no stream")

        let kids = try await house.addZone("Kids Room")
        #expect(kids.id == "kids-room" && kids.rooms.isEmpty)
        let ssrc = try #require(senders.started.withLock { $0["kids-room"] })
        #expect(try kitchen.namedStream() == senders.started.withLock { $0["default"] }, "with two zones every room is told its stream")
        _ = try await house.updateRoom("kitchen", RoomUpdate(name: nil, volume: 40, muted: nil, outputDelayMs: 12, zone: "Kids Room"))
        #expect(try kitchen.namedStream() == ssrc)
        let rooms = await house.rooms()
        #expect(rooms.first { $0.name == "Kitchen" }?.zone == "kids-room")
        #expect(rooms.first { $0.name == "Kitchen" }?.volume == 40 && rooms.first { $0.name == "Kitchen" }?.outputDelayMs == 12,
                "the room's own settings go with it")
        #expect(await house.zones().map(\.rooms) == [["Living"], ["Kitchen"]])

        // Each zone its own queue and transport; events by zone.
        let kidsEvents = HouseTests.EventLog(try await house.subscribe(zone: "kids-room"))
        let homeEvents = HouseTests.EventLog(await house.subscribe())
        _ = try await house.add(paths: [HouseTests.song], placement: .end, zone: "kids-room")
        let playing = try await house.transport(.play, zone: "Kids Room")
        #expect(playing.zone == "kids-room" && playing.state != .stopped)
        #expect(await house.nowPlaying().state == .stopped)
        #expect(await house.queue().items.isEmpty)
        #expect(try await house.queue(zone: "kids-room").items.count == 1)
        let queued = await kidsEvents.first { $0.kind == .queue }
        #expect(queued?.zone == "kids-room")
        try await Task.sleep(for: .milliseconds(200))
        #expect(!homeEvents.kinds.contains("queue"), "the default zone's subscribers hear nothing of the kids' queue: \(homeEvents.kinds)")

        // Refusals.
        await #expect(throws: ControlError.notFound("no zone named 'Garage'; the zones are: Default, Kids Room")) {
            _ = try await house.nowPlaying(zone: "Garage")
        }
        let taken = await #expect(throws: ControlError.self) { _ = try await house.addZone("kids room") }
        #expect(taken?.status == 409)
        let stays = await #expect(throws: ControlError.self) { try await house.removeZone("Default") }
        #expect(stays?.status == 409)

        // Restarted: the zones, their queues and the rooms' zones are as they were.
        let again = try House(store: rig.store, messenger: RoomMessenger(socket: try UDPSocket(), clock: SystemClock(), keys: OneKey(HMACAuthenticator.random())),
                              version: "test", clock: SystemClock())
        #expect(await again.zones().map(\.name) == ["Default", "Kids Room"])
        #expect(await again.zones().map(\.rooms) == [["Living"], ["Kitchen"]])
        #expect(try await again.queue(zone: "kids-room").items.map(\.path) == [HouseTests.song])

        // Removed: its rooms play the default zone, its sender ends.
        try await house.removeZone("Kids Room")
        #expect(senders.stopped.withLock { $0 } == [ssrc])
        #expect(await house.rooms().allSatisfy { $0.zone == "default" })
        #expect(try kitchen.namedStream() == 0, "one zone again: no stream named")
        #expect(rig.store.load()?.zones?.map(\.id) == ["default"])

        // A party: every room into one zone.
        _ = try await house.addZone("Garden")
        let party = try await house.party(zone: "Garden")
        #expect(party.rooms.sorted() == ["Kitchen", "Living"])
        #expect(try living.namedStream() == senders.started.withLock { $0["garden"] })
    }

    @Test func aHouseHasAtMostItsLimitOfZones() async throws {
        let rig = try HouseTests.Rig()
        for n in 1..<ZoneList.limit { _ = try await rig.house.addZone("Zone \(n)") }
        let tooMany = await #expect(throws: ControlError.self) { _ = try await rig.house.addZone("One more") }
        #expect(tooMany?.status == 409)
        #expect(await rig.house.zones().count == ZoneList.limit)
    }
}
