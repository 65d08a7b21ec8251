import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiNet

/// Changes, from the control API. Each one is made at once (the actor's state changes in
/// one step, with nothing awaited in between) and saved before it is acknowledged.
extension House {
    public func transport(_ command: TransportCommand, zone: String?) async throws(ControlError) -> NowPlaying {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command(command.metricName)
        let t = now
        if tellSender(command, zone: id) {
            // The sender moves in its own queue; what it plays next comes through the receiver.
            return nowPlaying(at: t, zone: id)
        }
        plays[id]!.transport.configuration.cutLead = registry.commandLead(in: id)
        do throws(TransportError) {
            execute(try plays[id]!.transport.handle(command, now: t), zone: id)
        } catch {
            throw ControlError(error)
        }
        publish(zone: id, force: true)
        let answer = nowPlaying(at: t, zone: id)
        try await commit()
        return answer
    }

    public func add(paths: [String], placement: PlayQueue.Placement, zone: String?) async throws(ControlError) -> [QueueEntry] {
        var id = try zoneID(zone)
        CoordinatorMetrics.shared.command("queue-add")
        // Folders and playlists are walked, and tags and lyrics read, on a disk thread.
        let entries: [PlaylistParser.Entry]
        do {
            // What the API queues may not read a regular file as raw PCM.
            entries = try await TrackSource.expand(paths, pcmFiles: false)
        } catch {
            throw .badRequest("\(error)")
        }
        guard !entries.isEmpty else { throw .badRequest("no audio files in \(paths.joined(separator: ", "))") }
        library.suggest(entries)
        let tracks = entries.map(\.location)
        try roomInQueue(for: tracks.count, zone: id)
        await warm(tracks)
        // The zone may have gone while the files were read.
        id = try zoneID(zone)
        try roomInQueue(for: tracks.count, zone: id)
        let added = Set(plays[id]!.transport.add(tracks, placement: placement, titles: PlaylistParser.Entry.titles(entries)).map(\.id))
        lineUpAgain(zone: id)
        publishQueue(zone: id)
        var view = queueView(zone: id).items.filter { added.contains($0.id) }
        try await commit()
        // Play now: the first of them, at once (the transport saves again).
        if placement == .now, let first = view.first {
            _ = try await transport(.playItem(index: first.index), zone: id)
            view = queueView(zone: id).items.filter { added.contains($0.id) }
        }
        return view
    }

    /// Refuses an addition of `count` tracks past the queue's capacity (`PlayQueue.capacity`).
    private func roomInQueue(for count: Int, zone id: String) throws(ControlError) {
        let held = plays[id]!.transport.queue.items.count
        guard held + count <= PlayQueue.capacity else {
            throw .badRequest("the queue holds at most \(PlayQueue.capacity) tracks: it has \(held), and \(count) more were asked for; nothing was queued")
        }
    }

    public func remove(itemID: Int, zone: String?) async throws(ControlError) {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("queue-remove")
        plays[id]!.transport.configuration.cutLead = registry.commandLead(in: id)
        do throws(TransportError) {
            execute(try plays[id]!.transport.remove(itemID: itemID, now: now), zone: id)
        } catch {
            throw ControlError(error)
        }
        publishQueue(zone: id)
        try await commit()
    }

    public func move(itemID: Int, to index: Int, zone: String?) async throws(ControlError) {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("queue-move")
        do throws(TransportError) {
            try plays[id]!.transport.move(itemID: itemID, to: index)
        } catch {
            throw ControlError(error)
        }
        lineUpAgain(zone: id)
        publishQueue(zone: id)
        try await commit()
    }

    public func clearQueue(zone: String?) async throws(ControlError) {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("queue-clear")
        plays[id]!.transport.configuration.cutLead = registry.commandLead(in: id)
        execute(plays[id]!.transport.clear(now: now), zone: id)
        publishQueue(zone: id)
        try await commit()
    }

    public func setLoopMode(_ mode: LoopMode, zone: String?) async throws(ControlError) {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("loop")
        plays[id]!.transport.setLoopMode(mode)
        lineUpAgain(zone: id)
        publishQueue(zone: id)
        try await commit()
    }

    public func replayGain() -> ReplayGain { loudnessSetting }

    public func setReplayGain(_ update: ReplayGainUpdate) async throws(ControlError) -> ReplayGain {
        CoordinatorMetrics.shared.command("replaygain")
        loudnessSetting = try update.applied(to: loudnessSetting)
        for play in plays.values { play.player?.setReplayGain(loudnessSetting) }
        publishAll(force: true)
        try await commit()
        return loudnessSetting
    }

    public func setGroup(volume: Double?, muted: Bool?, zone: String?) async throws(ControlError) {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("volume")
        do throws(RoomError) {
            if let volume { try registry.setGroupVolume(volume, in: id) }
        } catch {
            throw ControlError(error)
        }
        if let muted { registry.setGroupMuted(muted, in: id) }
        deliverSettings(force: true)
        publishVolume(zone: id)
        try await commit()
    }

    public func updateRoom(_ name: String, _ update: RoomUpdate) async throws(ControlError) -> RoomView {
        CoordinatorMetrics.shared.command("room")
        let key: String
        let zone = try update.zone.map { zone throws(ControlError) in try zoneID(zone) }
        do throws(RoomError) {
            key = try registry.find(name)
            // Check everything before changing anything: a refused update changes nothing.
            var trial = registry
            try apply(update, to: key, in: &trial)
            if let zone { try trial.move(key, to: zone) }
            registry = trial
        } catch {
            throw ControlError(error)
        }
        deliverSettings(force: true)
        if zone != nil { publishZones() } else { publishVolume(zone: nil) }
        let view = roomViews().first { $0.key == key }!
        try await commit()
        return view
    }

    private func apply(_ update: RoomUpdate, to key: String, in registry: inout RoomRegistry) throws(RoomError) {
        if let volume = update.volume { try registry.setVolume(key, to: volume / 100) }
        if let muted = update.muted { try registry.setMuted(key, muted) }
        if let delay = update.outputDelayMs { try registry.setOutputDelay(key, milliseconds: delay) }
        if let newName = update.name { try registry.rename(key, to: newName) }
    }

    public func removeRoom(_ name: String) async throws(ControlError) {
        CoordinatorMetrics.shared.command("room-remove")
        let key: String
        do throws(RoomError) {
            key = try registry.remove(name)
        } catch {
            throw ControlError(error)
        }
        // The room's member goes with it: it can neither hear nor steer the house again.
        let revoked = keyring.revoke(room: key)
        if !revoked.isEmpty {
            messenger.forget(rooms: [key])
            log.info("room '\(name)' removed: its member \(revoked.map(String.init).joined(separator: ", ")) revoked; the stream moves "
                     + "to a new key once the other members hold it")
        }
        publishZones()
        try await commit()
    }

    public func recordFeedback(_ kind: FeedbackKind, zone: String?) async throws(ControlError) -> FeedbackEntry {
        let id = try zoneID(zone)
        CoordinatorMetrics.shared.command("feedback")
        let s = plays[id]!.transport.snapshot(at: now)
        guard let item = s.item else { throw .conflict("nothing is playing or queued to \(kind)") }
        let tags = library.known(item.path).tags
        let entry = feedbackLog.record(kind, path: item.path, title: tags.title, artist: tags.artist,
                                       position: s.position, date: SystemClock.unixSeconds())
        broadcast(Event(.feedback(entry), at: now.nanoseconds, zone: id))
        publishAll(force: true)
        try await commit()
        return entry
    }

    public func removeFeedback(id: Int) async throws(ControlError) {
        CoordinatorMetrics.shared.command("feedback-remove")
        guard feedbackLog.remove(id: id) else { throw .notFound("no feedback entry with id \(id)") }
        publishAll(force: true)
        try await commit()
    }

    /// The command line named tracks: they become the default zone's queue, and play.
    func replaceQueue(with tracks: [String], loopMode: LoopMode, titles: [String: String] = [:]) async throws(ControlError) {
        let id = ZoneInfo.defaultID
        var tracks = tracks
        if tracks.count > PlayQueue.capacity {
            log.warning("the command line names \(tracks.count) tracks: the queue takes the first \(PlayQueue.capacity)")
            tracks.removeLast(tracks.count - PlayQueue.capacity)
        }
        await warm(tracks)
        execute(plays[id]!.transport.clear(now: now), zone: id)
        plays[id]!.transport.setLoopMode(loopMode)
        plays[id]!.transport.add(tracks, titles: titles)
        execute((try? plays[id]!.transport.handle(.play, now: now)) ?? [], zone: id)
        publishQueue(zone: id)
        try await commit()
    }
}
