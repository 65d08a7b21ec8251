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
        locked {
            let nowPlaying = nowPlayingLocked(at: now)
            continuation.yield(Event(.hello(nowPlaying: nowPlaying, queue: queueLocked(), rooms: roomViewsLocked(),
                                            lyrics: lyricsLocked(nowPlaying.itemID)), at: now.nanoseconds))
            subscribers[id] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            self?.locked { _ = self?.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func lyricsLocked(_ itemID: Int?) -> Lyrics? {
        guard let id = itemID, let item = transport.queue.item(id: id) else { return nil }
        return lyricsLibrary.known(item.path)
    }

    func broadcastLocked(_ event: Event) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Publishes what changed on the now-playing card since it was last published: the
    /// state, the track, the timeline. The position moving on by itself is not a change.
    func publishLocked(force: Bool = false) {
        let t = now
        let current = nowPlayingLocked(at: t)
        let previous = published
        var stable = current
        var old = previous ?? current
        stable.elapsed = 0; stable.at = 0; old.elapsed = 0; old.at = 0
        guard force || previous == nil || stable != old else { return }
        published = current
        if let previous {
            if previous.itemID != current.itemID {
                if previous.state == .playing, let id = previous.itemID {
                    broadcastLocked(Event(.trackEnded(itemID: id), at: t.nanoseconds))
                }
                broadcastLocked(Event(.trackChanged(itemID: current.itemID, nowPlaying: current, lyrics: lyricsLocked(current.itemID)),
                                      at: t.nanoseconds))
            }
            if previous.state != current.state || (current.failure != nil && previous.failure != current.failure) {
                broadcastLocked(Event(.state(current.state, previous: previous.state, reason: current.failure), at: t.nanoseconds))
            }
        }
        broadcastLocked(Event(.nowPlaying(current), at: t.nanoseconds))
    }

    func publishQueueLocked() {
        broadcastLocked(Event(.queue(queueLocked()), at: now.nanoseconds))
        publishLocked(force: true)
    }

    func publishVolumeLocked() {
        broadcastLocked(Event(.volume(rooms: roomViewsLocked()), at: now.nanoseconds))
        publishLocked(force: true)
    }

    // MARK: - Rooms

    /// A room's report arrived on the clock port.
    func received(_ report: RoomReport, from address: SocketAddress, at time: Int64) {
        locked {
            let before = registry.rooms[report.name]
            messenger.remember(address, for: report.name)
            let events = registry.report(report, from: address.description, now: time)
            for case let .joined(key) in events {
                let name = registry.rooms[key]?.settings.name ?? key
                later { [log] in log.info("room '\(name)' joined from \(address)") }
                if let room = roomViewsLocked().first(where: { $0.key == key }) { broadcastLocked(Event(.roomJoined(room), at: time)) }
                saveLocked()  // a new room's settings are kept
            }
            if let before, before.connected,
               before.report?.state != report.state || before.report?.interrupted != report.interrupted {
                if let room = roomViewsLocked().first(where: { $0.key == report.name }) { broadcastLocked(Event(.room(room), at: time)) }
            }
            deliverSettingsLocked(force: false)
        }
    }

    /// Sends rooms the settings they have not applied yet (again every 250 ms until they do).
    func deliverSettingsLocked(force: Bool) {
        let t = clock.nanosecondsNow()
        for room in registry.undelivered {
            if !force, let last = lastDelivery[room.key], t - last < 250_000_000 { continue }
            lastDelivery[room.key] = t
            let (settings, key) = (room.settings, room.key)
            later { [messenger] in messenger.deliver(settings, to: key) }
        }
    }

    // MARK: - Time

    /// Runs the house's clock until the stop flag is set: scheduled changes happen, rooms
    /// that fell silent leave, epoch ends are sent again, the position is saved now and then.
    func tick(stopFlag: StopFlag) {
        while !stopFlag.isSet {
            Thread.sleep(forTimeInterval: 0.02)
            locked { tickLocked() }
        }
    }

    func tickLocked() {
        let t = now
        transport.tick(now: t)
        for case let .left(key) in registry.expire(now: t.nanoseconds) {
            let name = registry.rooms[key]?.settings.name ?? key
            later { [log] in log.info("room '\(name)' left (silent for 5 s)") }
            if let room = roomViewsLocked().first(where: { $0.key == key }) { broadcastLocked(Event(.roomLeft(room), at: t.nanoseconds)) }
        }
        let due = resends.filter { $0.at <= t.nanoseconds }
        resends.removeAll { $0.at <= t.nanoseconds }
        let rooms = registry.connected
        for resend in due { later { [messenger] in messenger.endEpoch(resend.epoch, at: resend.end, rooms: rooms) } }
        deliverSettingsLocked(force: false)
        publishLocked()
        if transport.snapshot(at: t).state == .playing, Date().timeIntervalSince(lastSaved) > 5 {
            saveLocked()
        }
    }
}
