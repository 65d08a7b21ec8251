import Foundation
import TuttiAPI
import TuttiCore

/// Reading the house is open, but its file system is nobody's business but its owner's: a
/// reader without the token sees each track's file name, never the folders above it (nor
/// where lyrics files are kept). `tutti ctl` sends the token and sees whole paths.
protocol Redactable {
    /// This value with every file path cut to its last component.
    var withoutFolders: Self { get }
}

enum Redaction {
    static func fileName(_ path: String) -> String {
        if RemoteLocation.isRemote(path) { return url(path) }
        let name = (path as NSString).lastPathComponent
        return name.isEmpty ? path : name
    }

    /// A URL as a reader without the token may see it: its host and the last part of its
    /// path, never its query, fragment or credentials (where stations' and servers' keys
    /// travel: `?apikey=`, `user:password@`), nor a host of the house's own network (a
    /// private or loopback address, a name no public DNS serves: it would map the house for
    /// a stranger): "a server on the house network".
    static func url(_ text: String) -> String {
        guard let parts = URLComponents(string: text), let host = parts.host?.lowercased(), !host.isEmpty else {
            return "a web address"
        }
        let name = (parts.path as NSString).lastPathComponent
        let file = name.isEmpty || name == "/" ? "" : "/…/" + name
        let scheme = parts.scheme.map { $0 + "://" } ?? ""
        return isHouseHost(host) ? "a server on the house network" + (file.isEmpty ? "" : " (" + name + ")") : scheme + host + file
    }

    /// A host of the house's own network: a private, loopback or link-local address (any of
    /// IANA's special-purpose ones), or a name no public DNS serves (one label, `.local`,
    /// `.lan`, `.home`, `.internal`, `.home.arpa`, `localhost`).
    static func isHouseHost(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let address = NetworkAddress(parsing: bare) { return address.isSpecialPurpose }
        let name = bare.hasSuffix(".") ? String(bare.dropLast()) : bare
        return !name.contains(".") || name == "localhost" || HostNames.localSuffixes.contains { name.hasSuffix("." + $0) }
    }

    /// Why a track failed, for a reader without the token: that it failed, not the paths,
    /// addresses and answers in the reason (what a server said of a URL on the house's own
    /// network would map it for a stranger).
    static func failure(_ reason: String?) -> String? {
        reason.map { _ in "the track could not be played (the reason is shown with the house's token)" }
    }
}

extension NowPlaying: Redactable {
    var withoutFolders: NowPlaying {
        var copy = self
        copy.path = path.map(Redaction.fileName)
        copy.failure = Redaction.failure(failure)
        return copy
    }
}

extension QueueEntry: Redactable {
    var withoutFolders: QueueEntry {
        var copy = self
        copy.path = Redaction.fileName(path)
        return copy
    }
}

extension QueueView: Redactable {
    var withoutFolders: QueueView {
        var copy = self
        copy.items = items.map(\.withoutFolders)
        return copy
    }
}

extension FeedbackEntry: Redactable {
    var withoutFolders: FeedbackEntry {
        var copy = self
        copy.path = Redaction.fileName(path)
        return copy
    }
}

extension Lyrics: Redactable {
    var withoutFolders: Lyrics {
        var copy = self
        // "ID3 SYLT" and the like stay; a file path becomes its name.
        copy.source = source.map { $0.hasPrefix("/") ? Redaction.fileName($0) : $0 }
        return copy
    }
}

extension TrackLyrics: Redactable {
    var withoutFolders: TrackLyrics {
        var copy = self
        copy.lyrics = lyrics?.withoutFolders
        copy.nowPlaying = nowPlaying.withoutFolders
        return copy
    }
}

extension Event: Redactable {
    var withoutFolders: Event {
        var copy = self
        switch change {
        case let .hello(nowPlaying, queue, rooms, lyrics):
            copy.change = .hello(nowPlaying: nowPlaying.withoutFolders, queue: queue.withoutFolders, rooms: rooms, lyrics: lyrics?.withoutFolders)
        case let .nowPlaying(nowPlaying): copy.change = .nowPlaying(nowPlaying.withoutFolders)
        case let .trackChanged(itemID, nowPlaying, lyrics):
            copy.change = .trackChanged(itemID: itemID, nowPlaying: nowPlaying.withoutFolders, lyrics: lyrics?.withoutFolders)
        case let .queue(queue): copy.change = .queue(queue.withoutFolders)
        case let .feedback(entry): copy.change = .feedback(entry.withoutFolders)
        case let .state(state, previous, reason): copy.change = .state(state, previous: previous, reason: Redaction.failure(reason))
        case let .zones(zones): copy.change = .zones(zones.withoutFolders)
        case .trackEnded, .volume, .roomJoined, .roomLeft, .room: break
        }
        return copy
    }
}

extension ZoneView: Redactable {
    var withoutFolders: ZoneView {
        var copy = self
        copy.nowPlaying = nowPlaying.withoutFolders
        return copy
    }
}

extension Status: Redactable {
    var withoutFolders: Status {
        var copy = self
        copy.nowPlaying = nowPlaying.withoutFolders
        copy.zones = zones?.withoutFolders
        return copy
    }
}

extension Array: Redactable where Element: Redactable {
    var withoutFolders: [Element] { map(\.withoutFolders) }
}
