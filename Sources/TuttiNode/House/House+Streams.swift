import TuttiAPI
import TuttiCore

/// Remote sources: what the player says of them, and how now playing shows it.
extension House {
    /// A zone's player's report on the remote source of `itemID`.
    func heard(_ status: StreamStatus, of itemID: Int, zone: String) {
        let old = plays[zone]!.streams[itemID]
        plays[zone]!.streams[itemID] = status
        if plays[zone]!.streams.count > 64 {
            let queue = plays[zone]!.transport.queue
            plays[zone]!.streams = plays[zone]!.streams.filter { queue.item(id: $0.key) != nil }
        }
        let name = plays[zone]!.transport.queue.item(id: itemID)?.path ?? "item \(itemID)"
        if status.phase != .connecting, status.phase != .failed {
            plays[zone]!.transport.setSeekable(itemID: itemID, status.canSeek,
                                  reason: status.isLive ? "\(name) is a live stream" : "\(name) is on a server that serves no byte ranges")
        }
        if let tags = status.tags, tags != old?.tags {
            library.setTags(tags, of: name)
            publishQueue(zone: zone)
        }
        if let length = status.length, !status.isLive {
            plays[zone]!.transport.setDuration(itemID: itemID, frames: length)
            library.setLength(length, of: name)
        }
        let dry: Set<StreamStatus.Phase> = [.buffering, .reconnecting, .connecting]
        let current = plays[zone]!.transport.snapshot(at: now)
        if dry.contains(status.phase), current.item?.id == itemID, current.state == .playing {
            if plays[zone]!.dryAt?.itemID != itemID {
                plays[zone]!.dryAt = (itemID, current.position.seconds)
            }
        } else if plays[zone]!.dryAt?.itemID == itemID, !dry.contains(status.phase) {
            plays[zone]!.dryAt = nil
        }
        if status.phase != old?.phase {
            log.info("\(name): \(status.phase.rawValue)\(status.station.map { " (\($0))" } ?? "")")
        }
        if status.streamTitle != old?.streamTitle, let title = status.streamTitle {
            log.info("\(status.station ?? name) now plays \(title)")
        }
        publish(zone: zone)
    }

    /// Adds what is known of a remote source to now playing: the station, the live title,
    /// the buffer; the state is `buffering` while the rooms wait for it (since `dryAt`).
    func describe(_ stream: StreamStatus, itemID: Int, dryAt: (itemID: Int, elapsed: Double)?, in np: inout NowPlaying) {
        np.isLiveStream = stream.isLive
        np.station = stream.station
        np.streamTitle = stream.streamTitle
        if stream.isLive {
            np.duration = nil
            if let (artist, title) = stream.streamTitle.flatMap(IcyMetadata.artistAndTitle) {
                np.title = title
                np.artist = artist
                np.album = stream.station
            } else if let station = stream.station {
                np.title = station
            }
        }
        guard [.playing, .loading, .paused].contains(np.state) else { return }
        let until = np.duration.flatMap { d in stream.loadedFraction.map { $0 * d } }
        np.buffer = BufferView(phase: stream.phase, seconds: stream.bufferedSeconds, loaded: stream.loadedFraction,
                               loadedUntil: until)
        if (np.state == .playing || np.state == .loading), [.buffering, .reconnecting, .connecting].contains(stream.phase) {
            np.state = .buffering
            np.rate = 0
            if let dry = dryAt, dry.itemID == itemID { np.elapsed = dry.elapsed }
        }
    }
}

/// A live receiver's sender (AirPlay, with DACP), told what the house is told.
extension House {
    /// Passes `command` on to the sender of the live stream the zone plays, when that sender
    /// takes commands back (`SenderRemote`), on a thread of its own. Returns true when the
    /// sender alone acts on it: next and previous move in the sender's queue, which is what
    /// the house plays, not in the house's (that would end the receiver).
    func tellSender(_ command: TransportCommand, zone: String) -> Bool {
        let snapshot = plays[zone]!.transport.snapshot(at: now)
        guard snapshot.state != .stopped, let id = snapshot.item?.id, let remote = plays[zone]!.streams[id]?.remote,
              let told = SenderRemote.command(for: command, housePlays: snapshot.state != .paused) else { return false }
        let clock = clock, log = log, name = snapshot.item?.path ?? "the receiver"
        Task {
            do {
                try await Blocking.run(on: SenderControl.queue) { () throws(SenderControl.Failure) in
                    try SenderControl.send(told, to: remote, clock: clock)
                }
                log.info("\(name): its AirPlay sender took '\(told.rawValue)'")
                CoordinatorMetrics.shared.command("sender-\(told.rawValue)")
            } catch {
                log.warning("\(name): its AirPlay sender did not take '\(told.rawValue)': \(error)")
            }
        }
        return told == .next || told == .previous
    }
}
