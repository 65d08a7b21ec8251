import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore

/// Changes, from the control API. Each one is saved before it is acknowledged.
extension House {
    public func transport(_ command: TransportCommand) throws(ControlError) -> NowPlaying {
        try changing { () throws(ControlError) -> NowPlaying in
            let t = now
            transport.configuration.cutLead = registry.commandLead()
            do throws(TransportError) {
                execute(try transport.handle(command, now: t))
            } catch {
                throw ControlError(error)
            }
            saveLocked()
            publishLocked(force: true)
            return nowPlayingLocked(at: t)
        }
    }

    public func add(paths: [String], placement: PlayQueue.Placement) throws(ControlError) -> [QueueEntry] {
        let tracks: [String]
        do {
            tracks = try TrackSource.expand(paths)
        } catch {
            throw .badRequest("\(error)")
        }
        guard !tracks.isEmpty else { throw .badRequest("no MP3 files in \(paths.joined(separator: ", "))") }
        warm(tracks)  // tags and lyrics read outside the lock
        return try changing { () throws(ControlError) -> [QueueEntry] in
            let added = transport.add(tracks, placement: placement)
            saveLocked()
            publishQueueLocked()
            let ids = Set(added.map(\.id))
            return queueLocked().items.filter { ids.contains($0.id) }
        }
    }

    public func remove(itemID: Int) throws(ControlError) {
        try changing { () throws(ControlError) in
            transport.configuration.cutLead = registry.commandLead()
            do throws(TransportError) {
                execute(try transport.remove(itemID: itemID, now: now))
            } catch {
                throw ControlError(error)
            }
            saveLocked()
            publishQueueLocked()
        }
    }

    public func move(itemID: Int, to index: Int) throws(ControlError) {
        try changing { () throws(ControlError) in
            do throws(TransportError) {
                try transport.move(itemID: itemID, to: index)
            } catch {
                throw ControlError(error)
            }
            saveLocked()
            publishQueueLocked()
        }
    }

    public func clearQueue() {
        locked {
            transport.configuration.cutLead = registry.commandLead()
            execute(transport.clear(now: now))
            saveLocked()
            publishQueueLocked()
        }
    }

    public func setLoopMode(_ mode: LoopMode) {
        locked {
            transport.setLoopMode(mode)
            saveLocked()
            publishQueueLocked()
        }
    }

    public func setGroup(volume: Double?, muted: Bool?) throws(ControlError) {
        try changing { () throws(ControlError) in
            do throws(RoomError) {
                if let volume { try registry.setGroupVolume(volume) }
            } catch {
                throw ControlError(error)
            }
            if let muted { registry.setGroupMuted(muted) }
            saveLocked()
            deliverSettingsLocked(force: true)
            publishVolumeLocked()
        }
    }

    public func updateRoom(_ name: String, _ update: RoomUpdate) throws(ControlError) -> RoomView {
        try changing { () throws(ControlError) -> RoomView in
            let key: String
            do throws(RoomError) {
                key = try registry.find(name)
                // Check everything before changing anything: a refused update changes nothing.
                var trial = registry
                try apply(update, to: key, in: &trial)
                registry = trial
            } catch {
                throw ControlError(error)
            }
            saveLocked()
            deliverSettingsLocked(force: true)
            publishVolumeLocked()
            return roomViewsLocked().first { $0.key == key }!
        }
    }

    private func apply(_ update: RoomUpdate, to key: String, in registry: inout RoomRegistry) throws(RoomError) {
        if let volume = update.volume { try registry.setVolume(key, to: volume / 100) }
        if let muted = update.muted { try registry.setMuted(key, muted) }
        if let delay = update.outputDelayMs { try registry.setOutputDelay(key, milliseconds: delay) }
        if let newName = update.name { try registry.rename(key, to: newName) }
    }

    public func removeRoom(_ name: String) throws(ControlError) {
        try changing { () throws(ControlError) in
            do throws(RoomError) {
                try registry.remove(name)
            } catch {
                throw ControlError(error)
            }
            saveLocked()
            publishVolumeLocked()
        }
    }

    public func recordFeedback(_ kind: FeedbackKind) throws(ControlError) -> FeedbackEntry {
        try changing { () throws(ControlError) -> FeedbackEntry in
            let s = transport.snapshot(at: now)
            guard let item = s.item else { throw .conflict("nothing is playing or queued to \(kind)") }
            let tags = library.known(item.path).tags
            let entry = feedbackLog.record(kind, path: item.path, title: tags.title, artist: tags.artist,
                                           position: s.position, date: Date().timeIntervalSince1970)
            saveLocked()
            broadcastLocked(Event(.feedback(entry), at: now.nanoseconds))
            publishLocked(force: true)
            return entry
        }
    }

    public func removeFeedback(id: Int) throws(ControlError) {
        try changing { () throws(ControlError) in
            guard feedbackLog.remove(id: id) else { throw .notFound("no feedback entry with id \(id)") }
            saveLocked()
            publishLocked(force: true)
        }
    }
}
