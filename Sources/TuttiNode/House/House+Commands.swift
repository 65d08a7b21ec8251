import Foundation
import TuttiAPI
import TuttiControl
import TuttiCore

/// Changes, from the control API. Each one is made at once (the actor's state changes in
/// one step, with nothing awaited in between) and saved before it is acknowledged.
extension House {
    public func transport(_ command: TransportCommand) async throws(ControlError) -> NowPlaying {
        CoordinatorMetrics.shared.command(command.metricName)
        let t = now
        transport.configuration.cutLead = registry.commandLead()
        do throws(TransportError) {
            execute(try transport.handle(command, now: t))
        } catch {
            throw ControlError(error)
        }
        publish(force: true)
        let answer = nowPlaying(at: t)
        try await commit()
        return answer
    }

    public func add(paths: [String], placement: PlayQueue.Placement) async throws(ControlError) -> [QueueEntry] {
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
        await warm(tracks)
        let added = Set(transport.add(tracks, placement: placement, titles: PlaylistParser.Entry.titles(entries)).map(\.id))
        lineUpAgain()
        publishQueue()
        let view = queueView().items.filter { added.contains($0.id) }
        try await commit()
        return view
    }

    public func remove(itemID: Int) async throws(ControlError) {
        CoordinatorMetrics.shared.command("queue-remove")
        transport.configuration.cutLead = registry.commandLead()
        do throws(TransportError) {
            execute(try transport.remove(itemID: itemID, now: now))
        } catch {
            throw ControlError(error)
        }
        publishQueue()
        try await commit()
    }

    public func move(itemID: Int, to index: Int) async throws(ControlError) {
        CoordinatorMetrics.shared.command("queue-move")
        do throws(TransportError) {
            try transport.move(itemID: itemID, to: index)
        } catch {
            throw ControlError(error)
        }
        lineUpAgain()
        publishQueue()
        try await commit()
    }

    public func clearQueue() async throws(ControlError) {
        CoordinatorMetrics.shared.command("queue-clear")
        transport.configuration.cutLead = registry.commandLead()
        execute(transport.clear(now: now))
        publishQueue()
        try await commit()
    }

    public func setLoopMode(_ mode: LoopMode) async throws(ControlError) {
        CoordinatorMetrics.shared.command("loop")
        transport.setLoopMode(mode)
        lineUpAgain()
        publishQueue()
        try await commit()
    }

    public func replayGain() -> ReplayGain { loudnessSetting }

    public func setReplayGain(_ update: ReplayGainUpdate) async throws(ControlError) -> ReplayGain {
        CoordinatorMetrics.shared.command("replaygain")
        loudnessSetting = try update.applied(to: loudnessSetting)
        player?.setReplayGain(loudnessSetting)
        publish(force: true)
        try await commit()
        return loudnessSetting
    }

    public func setGroup(volume: Double?, muted: Bool?) async throws(ControlError) {
        CoordinatorMetrics.shared.command("volume")
        do throws(RoomError) {
            if let volume { try registry.setGroupVolume(volume) }
        } catch {
            throw ControlError(error)
        }
        if let muted { registry.setGroupMuted(muted) }
        deliverSettings(force: true)
        publishVolume()
        try await commit()
    }

    public func updateRoom(_ name: String, _ update: RoomUpdate) async throws(ControlError) -> RoomView {
        CoordinatorMetrics.shared.command("room")
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
        deliverSettings(force: true)
        publishVolume()
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
        do throws(RoomError) {
            try registry.remove(name)
        } catch {
            throw ControlError(error)
        }
        publishVolume()
        try await commit()
    }

    public func recordFeedback(_ kind: FeedbackKind) async throws(ControlError) -> FeedbackEntry {
        CoordinatorMetrics.shared.command("feedback")
        let s = transport.snapshot(at: now)
        guard let item = s.item else { throw .conflict("nothing is playing or queued to \(kind)") }
        let tags = library.known(item.path).tags
        let entry = feedbackLog.record(kind, path: item.path, title: tags.title, artist: tags.artist,
                                       position: s.position, date: Date().timeIntervalSince1970)
        broadcast(Event(.feedback(entry), at: now.nanoseconds))
        publish(force: true)
        try await commit()
        return entry
    }

    public func removeFeedback(id: Int) async throws(ControlError) {
        CoordinatorMetrics.shared.command("feedback-remove")
        guard feedbackLog.remove(id: id) else { throw .notFound("no feedback entry with id \(id)") }
        publish(force: true)
        try await commit()
    }

    /// The command line named tracks: they become the queue, and play.
    func replaceQueue(with tracks: [String], loopMode: LoopMode, titles: [String: String] = [:]) async throws(ControlError) {
        await warm(tracks)
        execute(transport.clear(now: now))
        transport.setLoopMode(loopMode)
        transport.add(tracks, titles: titles)
        execute((try? transport.handle(.play, now: now)) ?? [])
        publishQueue()
        try await commit()
    }
}
