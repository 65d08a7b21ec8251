import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet

/// Time passing, rooms reporting, and the event stream.
extension House {
    public func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        let current = nowPlaying(at: now)
        continuation.yield(Event(.hello(nowPlaying: current, queue: queueView(), rooms: roomViews(),
                                        lyrics: lyrics(ofItem: current.itemID)), at: now.nanoseconds))
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) {
        subscribers.removeValue(forKey: id)
    }

    func lyrics(ofItem itemID: Int?) -> Lyrics? {
        guard let id = itemID, let item = transport.queue.item(id: id) else { return nil }
        return lyricsLibrary.known(item.path)
    }

    func broadcast(_ event: Event) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Publishes what changed on the now-playing card since it was last published: the
    /// state, the track, the timeline. The position moving on by itself is not a change.
    func publish(force: Bool = false) {
        let t = now
        let current = nowPlaying(at: t)
        let previous = published
        var stable = current
        var old = previous ?? current
        stable.elapsed = 0; stable.at = 0; old.elapsed = 0; old.at = 0
        guard force || previous == nil || stable != old else { return }
        published = current
        if let previous {
            if previous.itemID != current.itemID {
                if previous.state == .playing, let id = previous.itemID {
                    broadcast(Event(.trackEnded(itemID: id), at: t.nanoseconds))
                }
                broadcast(Event(.trackChanged(itemID: current.itemID, nowPlaying: current, lyrics: lyrics(ofItem: current.itemID)),
                                at: t.nanoseconds))
            }
            if previous.state != current.state || (current.failure != nil && previous.failure != current.failure) {
                broadcast(Event(.state(current.state, previous: previous.state, reason: current.failure), at: t.nanoseconds))
            }
        }
        broadcast(Event(.nowPlaying(current), at: t.nanoseconds))
    }

    func publishQueue() {
        broadcast(Event(.queue(queueView()), at: now.nanoseconds))
        publish(force: true)
    }

    func publishVolume() {
        broadcast(Event(.volume(rooms: roomViews()), at: now.nanoseconds))
        publish(force: true)
    }

    // MARK: - Rooms

    /// A room's report arrived on the clock port.
    func received(_ report: RoomReport, from address: SocketAddress, at time: Int64) {
        let before = registry.rooms[report.name]
        let refused = registry.refused
        let events = registry.report(report, from: address.description, now: time)
        guard registry.rooms[report.name] != nil else {
            if registry.refused > refused, registry.refused % 100 == 1 {
                log.warning("a report from \(address) names a new room '\(report.name.prefix(64))', but the house has \(RoomRegistry.limit) rooms: "
                            + "not taken (remove rooms with `tutti ctl room remove NAME`; \(registry.refused) refused so far)")
            }
            return
        }
        messenger.remember(address, for: report.name)
        for case let .joined(key) in events {
            log.info("room '\(registry.rooms[key]?.settings.name ?? key)' joined from \(address)")
            if let room = roomViews().first(where: { $0.key == key }) { broadcast(Event(.roomJoined(room), at: time)) }
            saveSoon()  // a new room's settings are kept
        }
        if let before, before.connected,
           before.report?.state != report.state || before.report?.interrupted != report.interrupted {
            if let room = roomViews().first(where: { $0.key == report.name }) { broadcast(Event(.room(room), at: time)) }
        }
        deliverSettings(force: false)
    }

    /// Sends rooms the settings they have not applied yet (again every 250 ms until they do).
    func deliverSettings(force: Bool) {
        let t = clock.nanosecondsNow()
        for room in registry.undelivered {
            if !force, let last = lastDelivery[room.key], t - last < 250_000_000 { continue }
            lastDelivery[room.key] = t
            messenger.deliver(room.settings, to: room.key)
        }
    }

    // MARK: - Time

    /// Time passing: scheduled changes happen, rooms that fell silent leave, epoch ends are
    /// sent again, settings are delivered again, the position is saved now and then.
    func tick() {
        let t = now
        transport.tick(now: t)
        for case let .left(key) in registry.expire(now: t.nanoseconds) {
            log.info("room '\(registry.rooms[key]?.settings.name ?? key)' left (silent for 5 s)")
            if let room = roomViews().first(where: { $0.key == key }) { broadcast(Event(.roomLeft(room), at: t.nanoseconds)) }
        }
        let due = resends.filter { $0.at <= t.nanoseconds }
        resends.removeAll { $0.at <= t.nanoseconds }
        for resend in due { messenger.endEpoch(resend.epoch, at: resend.end, rooms: registry.connected) }
        deliverSettings(force: false)
        publish()
        if transport.snapshot(at: t).state == .playing, Date().timeIntervalSince(lastSaved) > 5 {
            saveSoon()
        }
    }
}
