import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet

/// Time passing, rooms reporting, and the event stream.
extension House {
    public func subscribe(zone: String?) throws(ControlError) -> AsyncStream<Event> {
        let id = try zoneID(zone)
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let key = UUID()
        let current = nowPlaying(at: now, zone: id)
        continuation.yield(Event(.hello(nowPlaying: current, queue: queueView(zone: id), rooms: roomViews(),
                                        lyrics: lyrics(ofItem: current.itemID, zone: id)), at: now.nanoseconds, zone: id))
        subscribers[key] = (id, continuation)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(key) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) {
        subscribers.removeValue(forKey: id)
    }

    func lyrics(ofItem itemID: Int?, zone: String) -> Lyrics? {
        guard let id = itemID, let item = plays[zone]?.transport.queue.item(id: id) else { return nil }
        return lyricsLibrary.known(item.path)
    }

    /// Sends an event to its subscribers: one of what a zone plays to that zone's, one of
    /// the house (rooms, volumes, zones, feedback) to every one.
    func broadcast(_ event: Event) {
        let perZone: Set<Event.Kind> = [.hello, .nowPlaying, .state, .trackChanged, .trackEnded, .queue]
        let only = perZone.contains(event.kind) ? event.zone : nil
        for (zone, continuation) in subscribers.values where only == nil || zone == only { continuation.yield(event) }
    }

    /// Publishes what changed on a zone's now-playing card since it was last published: the
    /// state, the track, the timeline. The position moving on by itself is not a change.
    func publish(zone: String, force: Bool = false) {
        guard plays[zone] != nil else { return }
        let t = now
        let current = nowPlaying(at: t, zone: zone)
        let previous = plays[zone]!.published
        var stable = current
        var old = previous ?? current
        stable.elapsed = 0; stable.at = 0; old.elapsed = 0; old.at = 0
        guard force || previous == nil || stable != old else { return }
        plays[zone]!.published = current
        if let previous {
            if previous.itemID != current.itemID {
                if previous.state == .playing, let id = previous.itemID {
                    broadcast(Event(.trackEnded(itemID: id), at: t.nanoseconds, zone: zone))
                }
                broadcast(Event(.trackChanged(itemID: current.itemID, nowPlaying: current, lyrics: lyrics(ofItem: current.itemID, zone: zone)),
                                at: t.nanoseconds, zone: zone))
            }
            if previous.state != current.state || (current.failure != nil && previous.failure != current.failure) {
                broadcast(Event(.state(current.state, previous: previous.state, reason: current.failure), at: t.nanoseconds, zone: zone))
            }
        }
        broadcast(Event(.nowPlaying(current), at: t.nanoseconds, zone: zone))
    }

    /// Every zone's card (a change of the house's: ReplayGain, a rating).
    func publishAll(force: Bool = false) {
        for id in zoneList.ids { publish(zone: id, force: force) }
    }

    func publishQueue(zone: String) {
        broadcast(Event(.queue(queueView(zone: zone)), at: now.nanoseconds, zone: zone))
        publish(zone: zone, force: true)
    }

    /// Rooms' volumes changed: those of `zone` (nil: of any zone).
    func publishVolume(zone: String?) {
        broadcast(Event(.volume(rooms: roomViews()), at: now.nanoseconds, zone: zone))
        if let zone { publish(zone: zone, force: true) } else { publishAll(force: true) }
    }

    /// Zones were made, renamed or removed, or rooms moved.
    func publishZones() {
        broadcast(Event(.zones(zones()), at: now.nanoseconds))
        publishVolume(zone: nil)
    }

    // MARK: - Rooms

    /// A room's report arrived on the clock port.
    func received(_ report: RoomReport, from address: SocketAddress, member: UInt16 = 0, at time: Int64) {
        let before = registry.rooms[report.name]
        let refused = registry.refused
        let events = registry.report(report, from: address.description, now: time)
        guard let room = registry.rooms[report.name] else {
            if registry.refused > refused, registry.refused % 100 == 1 {
                log.warning("a report from \(address) names a new room '\(report.name.prefix(64))', but the house has \(RoomRegistry.limit) rooms: "
                            + "not taken (remove rooms with `tutti ctl room remove NAME`; \(registry.refused) refused so far)")
            }
            return
        }
        // A Sendspin player's settings go over its own session (`sendspinDelivery`).
        if report.via != RoomReport.sendspin { messenger.remember(address, member: member, for: report.name) }
        if let headroom = report.headroomMilliseconds { fitLatency(zone: room.settings.zoneID, headroom: headroom, room: room, at: time) }
        if let headroom = report.recoveryHeadroomMilliseconds {
            fitLatency(zone: room.settings.zoneID, headroom: headroom, recoveries: true, room: room, at: time)
        }
        for case let .joined(key) in events {
            log.info("room '\(registry.rooms[key]?.settings.name ?? key)' joined from \(address)")
            if let view = roomViews().first(where: { $0.key == key }) { broadcast(Event(.roomJoined(view), at: time, zone: view.zone)) }
            saveSoon()  // a new room's settings are kept
        }
        if let before, before.connected,
           before.report?.state != report.state || before.report?.interrupted != report.interrupted {
            if let view = roomViews().first(where: { $0.key == report.name }) { broadcast(Event(.room(view), at: time, zone: room.settings.zoneID)) }
        }
        deliverSettings(force: false)
    }

    /// A room of `zone` reported its packets' headroom (ms), or its retransmissions'
    /// (`recoveries`): when the house fits the latency to the network, the zone's player
    /// moves its live input to what its rooms need.
    func fitLatency(zone: String, headroom: Double, recoveries: Bool = false, room: RoomRegistry.Room, at time: Int64) {
        guard let cap = liveLatency.cap, plays[zone] != nil, headroom.isFinite else { return }
        let headroom = min(max(headroom, -1e6), 1e6)  // a report's figure, bounded before it is converted
        let floor = liveLatency.floor
        var tuner = plays[zone]!.tuner ?? LatencyTuner(floor: floor, cap: cap)
        let inForce = plays[zone]!.latency ?? floor
        // The headroom is over the room's last 2 to 4 s: the latency its packets went out
        // with is at least the least in force since (more would count a growth twice).
        let sentWith = plays[zone]!.leastLatency(since: 2 * LeadWatch.span, at: time, floor: floor)
        let changed = tuner.observe(headroom: Int64(headroom * 1e6), inForce: sentWith, now: time, recoveries: recoveries)
        plays[zone]!.tuner = tuner
        guard changed else { return }
        let target = tuner.target
        plays[zone]!.player?.setLatency(target)
        let which = zoneList.zones.count > 1 ? "zone '\(zoneList.zones.first { $0.id == zone }?.name ?? zone)'" : "the house"
        if target > inForce {
            log.info("\(which)'s live latency grows to \(target / 1_000_000) ms: room '\(room.settings.name)'s "
                     + (recoveries ? "retransmissions " : "packets ")
                     + (headroom < 0 ? "came up to \(Int(-headroom)) ms too late" : "had only \(Int(headroom)) ms to spare"))
        } else {
            log.info("\(which)'s live latency comes back to \(target / 1_000_000) ms: its network was calm for a minute")
        }
    }

    /// The SSRC of the stream a room is to play: its zone's, once the house has more than
    /// one zone (0 before: any, as a house of one stream always was).
    func stream(of room: RoomRegistry.Room) -> UInt32 {
        zoneList.zones.count > 1 ? plays[room.settings.zoneID]?.ssrc ?? 0 : 0
    }

    /// Tells the keyring which stream each room is to play: a stream's packets carry the
    /// tags of the members speaking for its rooms (docs/security.md, "The audio stream").
    func publishRoomStreams() {
        var streams: [String: UInt32] = [:]
        for room in registry.rooms.values {
            if let ssrc = plays[room.settings.zoneID]?.ssrc, ssrc != 0 { streams[room.key] = ssrc }
        }
        keyring.setRoomStreams(streams)
    }

    /// Sends rooms the settings they have not applied yet (again every 250 ms until they do),
    /// after telling the keyring which stream each is to play.
    func deliverSettings(force: Bool) {
        publishRoomStreams()
        let t = clock.nanosecondsNow()
        for room in registry.undelivered {
            if !force, let last = lastDelivery[room.key], t - last < 250_000_000 { continue }
            lastDelivery[room.key] = t
            if room.report?.via == RoomReport.sendspin {
                sendspinDelivery?(room.key, room.settings)
            } else {
                messenger.deliver(room.settings, stream: stream(of: room), to: room.key)
            }
        }
    }

    // MARK: - Time

    /// Time passing: scheduled changes happen, rooms that fell silent leave, epoch ends are
    /// sent again, settings are delivered again, the positions are saved now and then.
    func tick() {
        let t = now
        for case let .left(key) in registry.expire(now: t.nanoseconds) {
            log.info("room '\(registry.rooms[key]?.settings.name ?? key)' left (silent for 5 s)")
            if let view = roomViews().first(where: { $0.key == key }) { broadcast(Event(.roomLeft(view), at: t.nanoseconds, zone: view.zone)) }
        }
        var playing = false
        for id in zoneList.ids {
            plays[id]!.transport.tick(now: t)
            let due = plays[id]!.resends.filter { $0.at <= t.nanoseconds }
            plays[id]!.resends.removeAll { $0.at <= t.nanoseconds }
            let rooms = registry.rooms(in: id).filter(\.connected)
            for resend in due { messenger.endEpoch(resend.epoch, at: resend.end, rooms: rooms) }
            publish(zone: id)
            playing = playing || plays[id]!.transport.snapshot(at: t).state == .playing
        }
        deliverSettings(force: false)
        if playing, lastSaved.map({ clock.nanosecondsNow() - $0 > 5_000_000_000 }) ?? true {
            saveSoon()
        }
    }
}
