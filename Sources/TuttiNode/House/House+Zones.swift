import TuttiAPI
import TuttiCore

/// Zones: made, renamed, removed and merged, from the control API. Each change is made at
/// once and saved before it is acknowledged, as every other.
extension House {
    public func addZone(_ name: String) async throws(ControlError) -> ZoneView {
        CoordinatorMetrics.shared.command("zone-add")
        var list = zoneList
        let id: String
        do throws(ZoneError) {
            id = try list.add(name)
        } catch {
            throw ControlError(error)
        }
        // Its epochs start anywhere: a room that moves between zones never takes an end of
        // one zone's epoch for the other's.
        plays[id] = ZonePlay(transport: Transport(queue: PlayQueue(), pausedAt: 0, epoch: UInt32.random(in: 0...UInt32.max)))
        do {
            try startSender(of: id)
        } catch {
            plays[id] = nil
            throw ControlError(status: 500, "cannot start the stream of zone '\(name)': \(error)")
        }
        zoneList = list
        log.info("zone '\(name)' made (\(id))")
        streamsChanged()
        // Taken before the save: another call may change the zones while it is written.
        let view = zoneView(zoneList.zone(id: id)!, at: now)
        try await commit()
        return view
    }

    public func renameZone(_ zone: String, to name: String) async throws(ControlError) -> ZoneView {
        CoordinatorMetrics.shared.command("zone-rename")
        let id = try zoneID(zone)
        do throws(ZoneError) {
            try zoneList.rename(id, to: name)
        } catch {
            throw ControlError(error)
        }
        publishZones()
        let view = zoneView(zoneList.zone(id: id)!, at: now)
        try await commit()
        return view
    }

    public func removeZone(_ zone: String) async throws(ControlError) {
        CoordinatorMetrics.shared.command("zone-remove")
        let id: String
        do throws(ZoneError) {
            id = try zoneList.remove(try zoneList.find(zone))
        } catch {
            throw ControlError(error)
        }
        // Its rooms go to the default zone, and hear it at once; then its stream ends.
        registry.release(zone: id)
        if let play = plays.removeValue(forKey: id), play.player != nil { senders?.stop(ssrc: play.ssrc) }
        subscribers = subscribers.filter { _, subscriber in
            guard subscriber.zone == id else { return true }
            subscriber.continuation.finish()
            return false
        }
        log.info("zone '\(zone)' removed; its rooms play the default zone")
        streamsChanged()
        try await commit()
    }

    public func party(zone: String?) async throws(ControlError) -> ZoneView {
        CoordinatorMetrics.shared.command("zone-party")
        let id = try zoneID(zone)
        for room in registry.list where room.settings.zoneID != id { try? registry.move(room.key, to: id) }
        deliverSettings(force: true)
        publishZones()
        let view = zoneView(zoneList.zone(id: id)!, at: now)
        try await commit()
        return view
    }

    /// The house's streams changed (a zone made or removed): every room is told which one
    /// is its own (a house of one zone names none), and everyone sees the zones.
    private func streamsChanged() {
        registry.renewAll()
        deliverSettings(force: true)
        publishZones()
    }
}
