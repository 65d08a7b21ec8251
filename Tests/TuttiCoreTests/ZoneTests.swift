import Foundation
import Testing
import TuttiCore

@Suite("Zones")
struct ZoneTests {
    @Test func zonesAreAddedRenamedFoundAndRemovedButTheDefaultStays() throws {
        var zones = ZoneList()
        #expect(zones.ids == [ZoneInfo.defaultID])
        let kitchen = try zones.add("  Kitchen radio ")
        #expect(kitchen == "kitchen-radio")
        #expect(zones.zone(id: kitchen)?.name == "Kitchen radio")
        #expect(try zones.find("KITCHEN RADIO") == kitchen)
        #expect(try zones.find("kitchen-radio") == kitchen)
        #expect(throws: ZoneError.nameTaken("Kitchen radio")) { try zones.add("kitchen radio") }
        // Another name that makes the same id gets an id of its own.
        #expect(try zones.add("Kitchen-Radio!") == "kitchen-radio-2")
        try zones.rename("Kitchen radio", to: "Radio")
        #expect(zones.zone(id: kitchen)?.name == "Radio", "a rename keeps the id")
        #expect(throws: ZoneError.nameTaken("Radio")) { try zones.rename("kitchen-radio-2", to: "radio") }
        #expect(throws: ZoneError.badName(" ")) { try zones.add(" ") }
        // One letter with 20,000 combining marks is one character, but not a name.
        let heavy = "a" + String(repeating: "\u{301}", count: 20_000)
        #expect(heavy.count == 1)
        #expect(throws: ZoneError.self) { try zones.add(heavy) }
        #expect(!RoomReport.isValidName(heavy))
        #expect(try zones.add(String(repeating: "ア", count: 64)) != "", "64 characters in 192 bytes")
        #expect(throws: ZoneError.defaultStays) { try zones.remove("default") }
        #expect(try zones.remove("radio") == kitchen)
        #expect(throws: ZoneError.self) { try zones.find("Radio") }
        // At most `limit`: the default and 15 more.
        var full = ZoneList()
        for n in 1..<ZoneList.limit { _ = try full.add("Zone \(n)") }
        #expect(throws: ZoneError.tooMany(limit: ZoneList.limit)) { try full.add("One more") }
    }

    /// A saved list is read back as saved, the default zone first, nonsense left out.
    @Test func aSavedListComesBackWithItsDefaultFirst() throws {
        var zones = ZoneList()
        _ = try zones.add("Party")
        let data = try JSONEncoder().encode(zones)
        #expect(try JSONDecoder().decode(ZoneList.self, from: data) == zones)
        let odd = ZoneList(saved: [ZoneInfo(id: "a", name: "A"), ZoneInfo(id: "a", name: "A again"), ZoneInfo(id: "b", name: " "),
                                   ZoneInfo(id: ZoneInfo.defaultID, name: "Home")])
        #expect(odd.zones == [ZoneInfo(id: ZoneInfo.defaultID, name: "Home"), ZoneInfo(id: "a", name: "A")])
    }

    /// Rooms move between zones with their settings; a zone's volume is its rooms'; rooms of
    /// a removed zone (or of one a saved state no longer has) go to the default zone.
    @Test func roomsMoveBetweenZonesWithTheirSettings() throws {
        var registry = RoomRegistry()
        for name in ["Kitchen", "Study", "Bath"] { _ = registry.report(RoomReport(name: name), from: name, now: 0) }
        try registry.setVolume("Kitchen", to: 0.2)
        try registry.setOutputDelay("Kitchen", milliseconds: 30)
        let before = registry.rooms["Kitchen"]!.settings.version
        try registry.move("Kitchen", to: "radio")
        let kitchen = registry.rooms["Kitchen"]!.settings
        #expect(kitchen.zoneID == "radio" && kitchen.volume == 0.2 && kitchen.outputDelayMilliseconds == 30)
        #expect(kitchen.version == before + 1, "the follower hears of it")
        #expect(registry.rooms(in: "radio").map(\.key) == ["Kitchen"])
        #expect(registry.rooms(in: ZoneInfo.defaultID).map(\.key) == ["Bath", "Study"])
        // Volumes per zone.
        try registry.setGroupVolume(0.5, in: ZoneInfo.defaultID)
        #expect(registry.rooms["Kitchen"]!.settings.volume == 0.2)
        #expect(abs(registry.groupVolume(in: ZoneInfo.defaultID) - 0.5) < 1e-9)
        registry.setGroupMuted(true, in: "radio")
        #expect(registry.groupMuted(in: "radio") && !registry.groupMuted(in: ZoneInfo.defaultID))
        registry.release(zone: "radio")
        #expect(registry.rooms["Kitchen"]!.settings.zone == nil)
        try registry.move("Bath", to: "gone")
        registry.keep(zones: [ZoneInfo.defaultID])
        #expect(registry.rooms(in: ZoneInfo.defaultID).count == 3)
    }

    /// Settings saved before zones read as the default zone's.
    @Test func settingsSavedBeforeZonesAreTheDefaultZones() throws {
        let old = #"{"name":"Kitchen","volume":0.5,"muted":false,"outputDelayMilliseconds":0,"version":3}"#
        let settings = try JSONDecoder().decode(RoomSettings.self, from: Data(old.utf8))
        #expect(settings.zoneID == ZoneInfo.defaultID)
    }
}
