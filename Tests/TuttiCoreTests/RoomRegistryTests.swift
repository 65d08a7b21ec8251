import Foundation
import Testing
@testable import TuttiCore

@Suite("Rooms, volumes and feedback")
struct RoomRegistryTests {
    static func house(_ names: [String] = ["Kitchen", "Study", "Bath"]) -> RoomRegistry {
        var registry = RoomRegistry()
        for name in names { _ = registry.report(RoomReport(name: name), from: "10.0.0.1:4000", now: 0) }
        return registry
    }

    /// A calibration is kept with the room's settings: a new delay within the registry's
    /// range, refused beyond it (nothing changed), and read back from saved settings, as old
    /// saved settings without one still are.
    @Test func aRoomKeepsItsCalibration() throws {
        var registry = Self.house()
        let record = RoomCalibration(at: 1_795_970_000, by: "ctl", offsetMs: 19.99, residualMs: 0.026, applied: true)
        let version = try #require(registry.rooms["Study"]?.settings.version)
        try registry.setCalibration("Study", record, delay: 12.5)
        let study = try #require(registry.rooms["Study"]?.settings)
        #expect(study.calibration == record && study.outputDelayMilliseconds == 12.5 && study.version != version)
        #expect(throws: RoomError.self) { try registry.setCalibration("Study", nil, delay: 2_500) }
        #expect(registry.rooms["Study"]?.settings.calibration == record)
        let saved = try JSONEncoder().encode(study)
        #expect(try JSONDecoder().decode(RoomSettings.self, from: saved) == study)
        let old = #"{"name": "Bath", "volume": 0.5, "muted": false, "outputDelayMilliseconds": 0, "version": 3}"#
        #expect(try JSONDecoder().decode(RoomSettings.self, from: Data(old.utf8)).calibration == nil)
    }

    @Test func roomsJoinByReportingAndLeaveWhenSilent() {
        var registry = RoomRegistry()
        #expect(registry.report(RoomReport(name: "Kitchen"), from: "a", now: 0) == [.joined(key: "Kitchen")])
        #expect(registry.report(RoomReport(name: "Kitchen"), from: "a", now: 1_000_000_000).isEmpty)
        #expect(registry.expire(now: 5_000_000_000).isEmpty)
        #expect(registry.expire(now: 6_500_000_000) == [.left(key: "Kitchen")])
        #expect(registry.connected.isEmpty && registry.list.count == 1)
        #expect(registry.report(RoomReport(name: "Kitchen"), from: "a", now: 7_000_000_000) == [.joined(key: "Kitchen")])
    }

    /// Regression: forged reports named "" or " " added rooms that could never be removed
    /// (and were saved). Such names are refused on the wire, by the registry, and on load.
    @Test func blankOrOverlongNamesNeverBecomeRooms() throws {
        for name in ["", " ", "\t\n", String(repeating: "x", count: 65), "bell\u{7}"] {
            let message = ControlMessage.roomReport(RoomReport(name: name)).encode()
            #expect(throws: PacketError.self, "\(name.debugDescription)") { try ControlMessage.decode(message) }
            var registry = RoomRegistry()
            #expect(registry.report(RoomReport(name: name), from: "a", now: 0).isEmpty)
            #expect(registry.rooms.isEmpty)
        }
        let loaded = RoomRegistry(saved: ["": RoomSettings(name: ""), " ": RoomSettings(name: " "), "Kitchen": RoomSettings(name: "Kitchen")])
        #expect(loaded.rooms.keys.sorted() == ["Kitchen"])
        #expect(RoomReport.isValidName("Living Room — 厨房") && RoomReport.isValidName(String(repeating: "x", count: 64)))
    }

    @Test func roomsAreFoundByShownNameOrKeyInAnyCase() throws {
        var registry = Self.house()
        try registry.rename("kitchen", to: "Cuisine")
        #expect(try registry.find("CUISINE") == "Kitchen")
        #expect(try registry.find("kitchen") == "Kitchen")
        #expect(throws: RoomError.nameTaken("Study")) { try registry.rename("Cuisine", to: "study") }
        #expect(throws: RoomError.badName("  ")) { try registry.rename("Cuisine", to: "  ") }
        #expect(throws: RoomError.self) { try registry.find("Garage") }
        #expect(RoomError.noSuchRoom("Garage", known: ["Bath", "Cuisine"]).description.contains("Bath, Cuisine"))
    }

    @Test func volumeChangesBumpTheVersionAndAreDeliveredUntilApplied() throws {
        var registry = Self.house(["Kitchen"])
        #expect(registry.undelivered.count == 1, "a new follower has applied nothing yet")
        _ = registry.report(RoomReport(name: "Kitchen", settingsVersion: 1), from: "a", now: 1)
        #expect(registry.undelivered.isEmpty)
        try registry.setVolume("Kitchen", to: 0.4)
        #expect(registry.rooms["Kitchen"]?.settings.version == 2)
        #expect(registry.undelivered.map(\.key) == ["Kitchen"])
        try registry.setVolume("Kitchen", to: 0.4)
        #expect(registry.rooms["Kitchen"]?.settings.version == 2, "no change, no new version")
        #expect(throws: RoomError.outOfRange(what: "volume", value: 140, range: 0...100)) { try registry.setVolume("Kitchen", to: 1.4) }
        #expect(throws: RoomError.self) { try registry.setVolume("Kitchen", to: .nan) }
        // Values far past any integer are refused with a message, never a trap while writing it.
        for huge in [1e300, -1e19, .infinity] {
            let refused = #expect(throws: RoomError.self) { try registry.setOutputDelay("Kitchen", milliseconds: huge) }
            #expect(refused.map { "\($0)" }?.contains("out of range") == true)
            #expect(throws: RoomError.self) { try registry.setVolume("Kitchen", to: huge) }
            #expect(throws: RoomError.self) { try registry.setGroupVolume(huge) }
        }
        #expect(throws: RoomError.self) { try registry.setOutputDelay("Kitchen", milliseconds: -1) }
    }

    /// A follower that applied a newer version than the house holds (its room was forgotten,
    /// or the saved state is older) is sent a version newer still: it takes only newer ones.
    @Test func aFollowerAheadOfTheHousesVersionIsToldANewerOne() throws {
        var registry = Self.house(["Kitchen"])
        try registry.remove("Kitchen")
        _ = registry.report(RoomReport(name: "Kitchen", settingsVersion: 57), from: "a", now: 1)
        #expect(registry.rooms["Kitchen"]?.settings.version == 58)
        #expect(registry.undelivered.map(\.key) == ["Kitchen"])
        _ = registry.report(RoomReport(name: "Kitchen", settingsVersion: 58), from: "a", now: 2)
        #expect(registry.undelivered.isEmpty && registry.rooms["Kitchen"]?.settings.version == 58)
        // Compared across the wrap of the 32-bit version: 1 is already newer than the largest.
        _ = registry.report(RoomReport(name: "Study", settingsVersion: .max), from: "a", now: 3)
        #expect(registry.rooms["Study"]?.settings.version == 1)
        _ = registry.report(RoomReport(name: "Bath", settingsVersion: .max - 1), from: "a", now: 3)
        #expect(registry.rooms["Bath"]?.settings.version == 1)
    }

    /// The group volume is the rooms' average; setting it scales every room alike.
    @Test func groupVolumeKeepsTheRoomsProportions() throws {
        var registry = Self.house()
        try registry.setVolume("Kitchen", to: 0.2)
        try registry.setVolume("Study", to: 0.4)
        try registry.setVolume("Bath", to: 0.6)
        #expect(abs(registry.groupVolume() - 0.4) < 1e-9)
        try registry.setGroupVolume(0.2)
        let v = ["Kitchen", "Study", "Bath"].map { registry.rooms[$0]!.settings.volume }
        #expect(abs(v[0] - 0.1) < 1e-9 && abs(v[1] - 0.2) < 1e-9 && abs(v[2] - 0.3) < 1e-9)
        #expect(abs(registry.groupVolume() - 0.2) < 1e-9)
        try registry.setGroupVolume(0)
        try registry.setGroupVolume(0.5)
        #expect(registry.connected.allSatisfy { $0.settings.volume == 0.5 }, "from silence, all rise together")
        registry.setGroupMuted(true)
        #expect(registry.groupMuted())
    }

    @Test func commandLeadCoversTheSlowestRoom() {
        var registry = Self.house(["A"])
        #expect(registry.commandLead() == 40_000_000)
        _ = registry.report(RoomReport(name: "A", outputLatencyMilliseconds: 70), from: "a", now: 0)
        _ = registry.report(RoomReport(name: "B", outputLatencyMilliseconds: 105), from: "b", now: 0)
        #expect(registry.commandLead() == 113_000_000)
        // A room far away on a jittery path: its round trip counts too.
        _ = registry.report(RoomReport(name: "A", roundTripMicroseconds: 40_000, outputLatencyMilliseconds: 70), from: "a", now: 0)
        #expect(registry.commandLead() == 118_000_000)
        // Nonsense from a report is bounded, never a crash.
        _ = registry.report(RoomReport(name: "B", outputLatencyMilliseconds: 1e300), from: "b", now: 0)
        #expect(registry.commandLead() == 1_000_000_000)
        _ = registry.report(RoomReport(name: "B", outputLatencyMilliseconds: .nan), from: "b", now: 0)
        #expect(registry.commandLead() == 118_000_000)
    }

    @Test func settingsSurviveAsSaved() throws {
        var registry = Self.house(["Kitchen"])
        try registry.setVolume("Kitchen", to: 0.3)
        try registry.setOutputDelay("Kitchen", milliseconds: 35)
        let restored = RoomRegistry(saved: registry.savedSettings)
        #expect(restored.rooms["Kitchen"]?.settings == registry.rooms["Kitchen"]?.settings)
        #expect(restored.connected.isEmpty)
        #expect(RoomSettings.gain(volume: 0.5, muted: false) == 0.125)
        #expect(RoomSettings.gain(volume: 0.5, muted: true) == 0)
    }

    @Test func aNewRoomWithATakenNameIsShownApart() {
        var registry = Self.house(["Kitchen"])
        try? registry.rename("Kitchen", to: "Study")
        _ = registry.report(RoomReport(name: "Study"), from: "b", now: 0)
        #expect(registry.rooms["Study"]?.settings.name == "Study 2")
    }

    @Test func ratingsReplaceEachOtherAndBookmarksAccumulate() {
        var log = FeedbackLog()
        log.record(.like, path: "/a.mp3", title: "A", artist: nil, position: 5, date: 1)
        log.record(.dislike, path: "/a.mp3", title: "A", artist: nil, position: nil, date: 2)
        log.record(.bookmark, path: "/a.mp3", title: "A", artist: nil, position: 48_000, date: 3)
        log.record(.bookmark, path: "/a.mp3", title: "A", artist: nil, position: 96_000, date: 4)
        #expect(log.rating(path: "/a.mp3") == .dislike)
        #expect(log.entries.count == 3)
        #expect(log.entries.filter { $0.kind == .bookmark }.map(\.position) == [48_000, 96_000])
        let removed = log.remove(id: log.entries[0].id)
        let missing = log.remove(id: 999)
        #expect(removed && !missing)
        #expect(log.rating(path: "/a.mp3") == nil)
    }

    /// A member that reports under ever new names does not fill the house: past the limit,
    /// new names are refused and counted; the rooms there go on reporting.
    @Test func theHouseHoldsAtMostItsLimitOfRooms() {
        var registry = RoomRegistry()
        for n in 0..<300 { _ = registry.report(RoomReport(name: "fake \(n)"), from: "10.0.0.9", now: 0) }
        #expect(registry.rooms.count == RoomRegistry.limit)
        #expect(registry.refused == 300 - RoomRegistry.limit)
        #expect(registry.savedSettings.count == RoomRegistry.limit)
        _ = registry.report(RoomReport(name: "fake 0", state: .playing), from: "10.0.0.9", now: 1)
        #expect(registry.rooms["fake 0"]?.report?.state == .playing)
        try? registry.remove("fake 1")
        _ = registry.report(RoomReport(name: "Kitchen"), from: "10.0.0.2", now: 2)
        #expect(registry.rooms["Kitchen"] != nil, "room for a real one once one is removed")
    }
}
