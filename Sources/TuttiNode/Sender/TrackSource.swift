import Foundation
import TuttiCore
import TuttiNet
import TuttiRemote

/// Expands what the user named (audio files of any format, folders, M3U, M3U8 and PLS playlists, local or
/// remote, URLs, live inputs) into the ordered list of entries to play, with the titles
/// playlists give them. Folders are walked recursively and sorted.
public enum TrackSource {
    static func isAudio(_ path: String) -> Bool { AudioFiles.isAudio(path) }

    /// What a path names, without following it into a read (a FIFO would block one).
    enum Kind { case missing, folder, file, other(String) }

    static func kind(_ path: String) -> Kind {
        switch InputFile.kind(of: path) {
        case .missing: .missing
        case .folder: .folder
        case .file: .file
        case let other: .other(other.described)
        }
    }

    /// The tracks `inputs` name, in order, with the titles playlists give them. Each input
    /// must be a folder, a playlist (M3U, M3U8, PLS; a file or a URL), an audio file (by its
    /// extension), a URL or a live input; files must be regular files: a named pipe, a
    /// device or any other file is refused with a clear error, never opened. Playlists may
    /// hold playlists; one that includes itself is refused. Playlist entries that are not
    /// regular audio files are left out; missing ones are kept (they fail when their turn
    /// comes, with an event), and so are URLs (the server is asked when they play).
    /// `pcmFiles`: `pcm:` may name a regular file (the coordinator's command line); else a
    /// named pipe or standard input only (what the API queues), and playlists' others are left out.
    /// What one expansion may bring in (a URL is anyone's: one remote M3U fanning out to
    /// 240,000 entries once took 370 MB): past any of these it is refused as a whole, with
    /// an error that names the bound, and nothing is queued.
    public struct Limits: Sendable {
        /// Entries read from playlists (all of them, nested ones included).
        public var entries = 10_000
        /// Playlists read.
        public var playlists = 1_000
        /// Bytes of playlists read (each one at most 1 MB).
        public var bytes = 16 << 20
        public init() {}
    }

    /// What an expansion has brought in so far, against its limits.
    struct Budget {
        let limits: Limits
        var entries = 0, playlists = 0, bytes = 0

        mutating func entry(_ location: String) throws(SourceError) {
            entries += 1
            guard entries <= limits.entries else { throw .tooMany(location, "\(limits.entries) entries") }
        }

        mutating func playlist(_ location: String, bytes read: Int) throws(SourceError) {
            playlists += 1
            bytes += read
            guard playlists <= limits.playlists else { throw .tooMany(location, "\(limits.playlists) playlists") }
            guard bytes <= limits.bytes else { throw .tooMany(location, "\(limits.bytes >> 20) MB of playlists") }
        }
    }

    public static func expand(_ inputs: [String], fetcher: RemoteFetcher = .shared, pcmFiles: Bool = true,
                              limits: Limits = Limits()) async throws -> [PlaylistParser.Entry] {
        var entries: [PlaylistParser.Entry] = []
        var budget = Budget(limits: limits)
        for input in inputs {
            try await expand(input, title: nil, within: [], fetcher: fetcher, pcmFiles: pcmFiles, budget: &budget, into: &entries)
        }
        return entries
    }

    /// Playlists within playlists, at most this deep.
    static let maximumDepth = 8

    private static func expand(_ input: String, title: String?, within playlists: [String], fetcher: RemoteFetcher,
                               pcmFiles: Bool = true, budget: inout Budget, into entries: inout [PlaylistParser.Entry]) async throws {
        let top = playlists.isEmpty
        if ReceiverEntry.isReceiver(input) {
            do {
                entries.append(.init(location: try ReceiverEntry(parsing: input).entry, title: title))
            } catch {
                if top { throw SourceError.badLiveInput(error) }
            }
            return
        }
        if LiveInput.isLive(input) {
            let live: LiveInput
            do {
                live = try LiveInput(parsing: input)
            } catch {
                if top { throw SourceError.badLiveInput(error) }
                return
            }
            if !pcmFiles, live.path != "-", await Blocking.run({ InputFile.kind(of: live.path) }) == .file {
                if top { throw SourceError.pcmFile(live.path) }
                return
            }
            entries.append(.init(location: live.entry, title: title))
            return
        }
        if RemoteLocation.isRemote(input) {
            if let format = PlaylistParser.Format(location: input) {
                try await playlist(input, format: format, within: playlists, fetcher: fetcher, pcmFiles: pcmFiles, budget: &budget,
                                   into: &entries)
            } else {
                entries.append(.init(location: input, title: title))
            }
            return
        }
        let format = PlaylistParser.Format(location: input)
        switch await Blocking.run({ kind(input) }) {
        case .missing:
            if top { throw SourceError.missing(input) }
            entries.append(.init(location: input, title: title))  // it fails when its turn comes
        case .folder:
            entries += await Blocking.run { folder(input) }.map { PlaylistParser.Entry(location: $0) }
        case let .other(what):
            if top { throw SourceError.notAFile(input, what) }
        case .file where format != nil:
            try await playlist(input, format: format!, within: playlists, fetcher: fetcher, pcmFiles: pcmFiles, budget: &budget,
                               into: &entries)
        case .file where isAudio(input):
            entries.append(.init(location: input, title: title))
        case .file:
            if top { throw SourceError.notAudio(input) }
        }
    }

    /// A playlist's entries, expanded in turn (at most 1 MB of it is read).
    private static func playlist(_ location: String, format: PlaylistParser.Format, within playlists: [String],
                                 fetcher: RemoteFetcher, pcmFiles: Bool, budget: inout Budget,
                                 into entries: inout [PlaylistParser.Entry]) async throws {
        let remote = RemoteLocation.isRemote(location)
        let key = remote ? location : await Blocking.run { InputFile.realPath(location) }
        if playlists.contains(key) {
            throw SourceError.includesItself((playlists + [key]).map { ($0 as NSString).lastPathComponent })
        }
        guard playlists.count < maximumDepth else { throw SourceError.tooDeep(location) }
        let text: String, base: String
        var kind = format
        if remote {
            let answer = try await fetcher.text(location)
            // An HLS playlist is a stream (a station's segments), not a list of tracks.
            if HLSPlaylist.isHLS(answer.text[...]) {
                entries.append(.init(location: location))
                return
            }
            text = answer.text
            base = answer.url
            if let sniffed = PlaylistParser.Format(sniffing: text[...]) { kind = sniffed }
        } else {
            text = try await Blocking.run { () throws(SourceError) -> String in
                guard let handle = FileHandle(forReadingAtPath: location), let data = try? handle.read(upToCount: 1 << 20) else {
                    throw SourceError.unreadable(location)
                }
                try? handle.close()
                return String(decoding: data, as: UTF8.self)
            }
            let folder = (location as NSString).deletingLastPathComponent
            base = folder.isEmpty ? "." : folder
        }
        try budget.playlist(location, bytes: text.utf8.count)
        for entry in PlaylistParser.parse(text, format: kind, base: base) {
            try budget.entry(location)
            // A playlist from a web server names only web resources: never a file or an
            // input of this machine.
            if remote && !RemoteLocation.isRemote(entry.location) { continue }
            try await expand(entry.location, title: entry.title, within: playlists + [key], fetcher: fetcher, pcmFiles: pcmFiles,
                             budget: &budget, into: &entries)
        }
    }

    static func folder(_ path: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return [] }
        var found: [String] = []
        while let item = walker.nextObject() as? String {
            let full = (path as NSString).appendingPathComponent(item)
            if isAudio(item), case .file = kind(full) {
                found.append(full)
            }
        }
        return found.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
    }
}

public enum SourceError: Error, CustomStringConvertible {
    case missing(String)
    case unreadable(String)
    case notAFile(String, String)
    case notAudio(String)
    case nothingPlayable
    case cannotSeek(String)
    case badLiveInput(LiveInputError)
    case includesItself([String])
    case tooDeep(String)
    /// An expansion past one of its limits (`TrackSource.Limits`): where, and which.
    case tooMany(String, String)
    /// `pcm:` on a regular file, not given on the coordinator's command line.
    case pcmFile(String)
    /// A receiver (`librespot:`) that cannot run, and why.
    case receiver(String)
    public var description: String {
        switch self {
        case let .missing(p): "no such file or folder: \(p)"
        case let .unreadable(p): "cannot read playlist \(p)"
        case let .notAFile(p, what): "\(p) is \(what), not a file: only regular files can be played"
        case let .notAudio(p): "\(p) is not an audio file tutti plays (\(AudioFiles.described)) nor a playlist (.m3u, .m3u8, .pls)"
        case .nothingPlayable: "none of the tracks could be played"
        case let .cannotSeek(what): "\(what) is live: it cannot seek"
        case let .badLiveInput(error): error.description
        case let .includesItself(chain): "playlist \(chain.last ?? "") includes itself (\(chain.joined(separator: " → "))): refused"
        case let .tooDeep(p): "\(p) lies more than \(TrackSource.maximumDepth) playlists deep: refused"
        case let .tooMany(p, bound):
            "more than \(bound) at \(p.count > 120 ? String(p.prefix(120)) + "…" : p): tutti takes at most that much from one request; nothing was queued"
        case let .receiver(why): why
        case let .pcmFile(p): "\(p) is a regular file: pcm: plays a named pipe or standard input (a file only when the coordinator is started with it)"
        }
    }
}
