import Dispatch
import Foundation
import Synchronization
import TuttiAPI
import TuttiCore
import TuttiNet

/// The coordinator's music library: its music folders, indexed (`LibraryIndex`, in the
/// state folder) and kept so. A scan walks the folders and reads the tags of the files that
/// are new or changed since the index saw them (by size and time of change), on every core,
/// and forgets the files that are gone. Scans run on a thread of their own: at start, when
/// the folders change (inotify, once they have been quiet for two seconds), and when asked
/// (`rescan`). Reads answer from the index meanwhile.
public final class MusicLibrary: LibraryService {
    /// How the coordinator reads what the library needs of a file (its decoder).
    public struct Reader: Sendable {
        /// The tags and length of a music file; nil for a file that is not music it can play.
        public var tags: @Sendable (String) -> ScannedTrack?
        /// A file's embedded picture (its front cover, else its first): MIME type and bytes.
        public var picture: @Sendable (String) -> (mimeType: String, data: [UInt8])?

        public init(tags: @escaping @Sendable (String) -> ScannedTrack?,
                    picture: @escaping @Sendable (String) -> (mimeType: String, data: [UInt8])?) {
            self.tags = tags
            self.picture = picture
        }
    }

    /// The music folders, absolute, and the names the API shows them by.
    let roots: [(path: String, name: String)]
    let index: LibraryIndex
    private let reader: Reader
    private let log = Log("library")
    private let queue = DispatchQueue(label: "tutti.library")
    private let state = Mutex(ScanState())
    private let watches: Bool
    private let watcherBox = Mutex<FolderWatcher?>(nil)
    private var watcher: FolderWatcher? { watcherBox.withLock { $0 } }
    /// Tags are read this many files at a time, in parallel, then written in one transaction.
    static let batch = 256

    struct ScanState {
        var scanning = false
        /// A scan was asked for while one ran: another follows it.
        var again = false
        var scans = 0
    }

    /// Opens (or makes) the index at `database` for `folders`; with `watch`, folders are
    /// watched for changes. Nothing is scanned until `start`.
    /// Symbolic links that lead out of a music folder are followed (`--library-follow-links`).
    let followsLinksOut: Bool
    /// Links out of each music folder at its last walk (said in the log when it changes).
    private let linksOutSeen = Mutex<[String: Int]>([:])

    public init(folders: [String], database: String, reader: Reader, watch: Bool = true, followLinksOut: Bool = false) throws {
        followsLinksOut = followLinksOut
        var names: [String: Int] = [:]
        var paths = Set<String>()
        // Each folder once (a folder named twice, or inside another named, is walked once).
        let absolute = folders.map(Self.absolute).filter { paths.insert($0).inserted }
        roots = absolute.filter { path in !absolute.contains { path != $0 && path.hasPrefix($0 == "/" ? "/" : $0 + "/") } }.map { path in
            var name = (path as NSString).lastPathComponent
            if name.isEmpty || name == "/" { name = "music" }
            names[name, default: 0] += 1
            if let n = names[name], n > 1 { name += " (\(n))" }
            return (path, name)
        }
        index = try LibraryIndex(path: database)
        self.reader = reader
        watches = watch
    }

    deinit { watcher?.stop() }

    /// Starts watching the folders (when asked to), and the first scan, in the background.
    public func start() {
        if watches {
            do {
                let watcher = try FolderWatcher { [weak self] in self?.rescan() }
                watcherBox.withLock { $0 = watcher }
            } catch {
                log.warning("the music folders are not watched (\(error)): changes are seen by a rescan (tutti ctl library rescan)")
            }
        }
        rescan()
    }

    public func rescan() {
        let start = state.withLock { state -> Bool in
            if state.scanning { state.again = true; return false }
            state.scanning = true
            return true
        }
        guard start else { return }
        queue.async { [self] in
            while true {
                do {
                    _ = try scanNow()
                } catch {
                    log.warning("the library's scan stopped: \(error)")
                }
                let more = state.withLock { state -> Bool in
                    state.scans += 1
                    if state.again { state.again = false; return true }
                    state.scanning = false
                    return false
                }
                if !more { return }
            }
        }
    }

    /// Scans at once, on the caller's thread (the command line, tests): what changed.
    @discardableResult
    public func scanNow() throws -> LibraryStatus.Scan {
        let started = SystemClock.hostNanoseconds()
        var files: [FolderWalk.File] = []
        var folders: [String] = []
        var lrc = Set<String>()
        var covers: [String: String] = [:]
        // A music folder that cannot be opened now (a disk not mounted, a share away) keeps
        // what the index knows of it until it can be walked again.
        var away: [String] = []
        for root in roots {
            let walk = FolderWalk.walk(root.path, outside: followsLinksOut) { name in
                AudioFiles.isAudio(name) || Self.isLyrics(name) || Self.coverRank(name) != nil
            }
            if linksOutSeen.withLock({ $0.updateValue(walk.linksOut.count, forKey: root.path) }) ?? 0 != walk.linksOut.count {
                if let first = walk.linksOut.first {
                    log.info("\(walk.linksOut.count) symbolic link(s) in \(root.path) lead out of it and are not followed (\(first)); "
                             + "--library-follow-links follows them")
                }
            }
            if walk.folders.isEmpty {
                away.append(root.path + "/")
                log.warning("the music folder \(root.path) cannot be opened: what the library knows of it stays until it can")
            }
            folders += walk.folders
            for file in walk.files {
                let name = (file.path as NSString).lastPathComponent
                if AudioFiles.isAudio(name) {
                    files.append(file)
                } else if Self.isLyrics(name) {
                    lrc.insert((file.path as NSString).deletingPathExtension)
                } else if let rank = Self.coverRank(name) {
                    let folder = (file.path as NSString).deletingLastPathComponent
                    if covers[folder].map({ Self.coverRank(($0 as NSString).lastPathComponent)! > rank }) ?? true {
                        covers[folder] = file.path
                    }
                }
            }
        }
        watcher?.watch(folders)
        let known = try index.known()
        var changed: [FolderWalk.File] = []
        var lyricsMoved: [(path: String, lrcBeside: Bool)] = []
        var seen = Set<String>()
        for file in files {
            seen.insert(file.path)
            let beside = lrc.contains((file.path as NSString).deletingPathExtension)
            if let was = known[file.path], was.size == file.size, was.modified == file.modified {
                if !was.unreadable && was.lrcBeside != beside { lyricsMoved.append((file.path, beside)) }
            } else {
                changed.append(file)
            }
        }
        let gone = known.keys.filter { path in !seen.contains(path) && !away.contains { path.hasPrefix($0) } }
        var added = 0, updated = 0, unreadable = 0
        for start in stride(from: 0, to: changed.count, by: Self.batch) {
            let part = Array(changed[start..<min(start + Self.batch, changed.count)])
            let read = Mutex([ScannedTrack?](repeating: nil, count: part.count))
            DispatchQueue.concurrentPerform(iterations: part.count) { i in
                let tags = reader.tags(part[i].path)
                read.withLock { $0[i] = tags }
            }
            let tracks = read.withLock { $0 }
            var updates: [LibraryIndex.Update] = []
            for (file, track) in zip(part, tracks) {
                if track == nil { unreadable += 1 } else if known[file.path].map({ !$0.unreadable }) ?? false { updated += 1 } else { added += 1 }
                updates.append(.init(path: file.path, size: file.size, modified: file.modified,
                                     lrcBeside: lrc.contains((file.path as NSString).deletingPathExtension), track: track))
            }
            try index.write(updates)
        }
        try index.setLyricsBeside(lyricsMoved)
        let removed = gone.filter { known[$0].map { !$0.unreadable } ?? false }.count
        let last = try index.lastScan()
        let coversMoved = try index.covers() != covers
        let changedAny = last == nil || !changed.isEmpty || !gone.isEmpty || !lyricsMoved.isEmpty || coversMoved
        if changedAny { try index.finish(removing: gone, covers: covers) }
        let scan = LibraryStatus.Scan(endedAt: SystemClock.unixSeconds(), seconds: Double(SystemClock.hostNanoseconds() - started) / 1e9,
                                      added: added, updated: updated, removed: removed, unreadable: unreadable)
        try index.record(scan)
        if changedAny {
            log.info("library: \(files.count) music files in \(roots.count) folder(s): \(added) new, \(updated) changed, \(removed) gone, \(unreadable) unreadable (\(String(format: "%.2f", scan.seconds)) s)")
        }
        return scan
    }

    /// Scans done since the start (for tests and the status).
    public var scans: Int { state.withLock { $0.scans } }

    // MARK: - LibraryService

    public func status() -> LibraryStatus {
        let counts = (try? index.counts()) ?? (0, 0, 0)
        return LibraryStatus(folders: roots.map(\.name), tracks: counts.0, albums: counts.1, artists: counts.2,
                             scanning: state.withLock { $0.scanning }, watching: watcher != nil && (watcher?.unwatched ?? 0) == 0,
                             lastScan: try? index.lastScan())
    }

    public func search(_ query: String, limit: Int) throws(ControlError) -> LibrarySearch {
        let started = SystemClock.hostNanoseconds()
        guard query.utf8.count <= 256 else { throw .badRequest("the query is longer than 256 bytes") }
        guard let match = LibraryIndex.match(query) else {
            return LibrarySearch(query: query, artists: [], albums: [], tracks: [], milliseconds: 0)
        }
        let found = try read { try index.search(match: match, limit: max(1, min(limit, 200))) }
        return LibrarySearch(query: query, artists: found.artists, albums: found.albums, tracks: found.tracks,
                             milliseconds: Double(SystemClock.hostNanoseconds() - started) / 1e6)
    }

    public func albums() throws(ControlError) -> [LibraryAlbum] { try read { try index.albums() } }

    public func album(id: Int64) throws(ControlError) -> LibraryAlbum {
        guard let album = try read({ try index.album(id: id) }) else { throw .notFound("no album with id \(id) in the library") }
        return album
    }

    public func artists() throws(ControlError) -> [LibraryArtist] { try read { try index.artists() } }

    public func artist(id: Int64) throws(ControlError) -> LibraryArtist {
        guard let artist = try read({ try index.artist(id: id) }) else { throw .notFound("no artist with id \(id) in the library") }
        return artist
    }

    public func folder(_ path: String) throws(ControlError) -> LibraryFolder {
        let trimmed = path.split(separator: "/").map(String.init)
        guard !trimmed.isEmpty else {
            let entries = roots.map { root in
                LibraryFolder.Entry(name: root.name, path: root.name, trackCount: (try? index.trackCount(under: root.path)) ?? 0)
            }
            return LibraryFolder(path: "", folders: entries, tracks: [])
        }
        guard !trimmed.contains(where: { $0 == "." || $0 == ".." }), let root = roots.first(where: { $0.name == trimmed[0] }) else {
            throw .notFound("no folder '\(path)' in the library (its folders: \(roots.map(\.name).joined(separator: ", ")))")
        }
        let absolute = ([root.path] + trimmed.dropFirst()).joined(separator: "/")
        let found = try read { try index.folder(absolute) }
        guard !found.folders.isEmpty || !found.tracks.isEmpty || trimmed.count == 1 else {
            throw .notFound("no music in the library's folder '\(path)'")
        }
        let shown = trimmed.joined(separator: "/")
        return LibraryFolder(path: shown, folders: found.folders.map { folder in
            let name = (folder.path as NSString).lastPathComponent
            return LibraryFolder.Entry(name: name, path: shown + "/" + name, trackCount: folder.count)
        }, tracks: found.tracks)
    }

    public func paths(of ids: [Int64]) throws(ControlError) -> [String] {
        guard ids.count <= 10_000 else { throw .badRequest("at most 10000 ids at once") }
        let found = try read { try index.tracks(ids: ids) }
        return try ids.map { id throws(ControlError) in
            guard let track = found[id] else { throw .notFound("no track with id \(id) in the library") }
            return track.path
        }
    }

    public func artwork(albumID: Int64) throws(ControlError) -> (mimeType: String, data: [UInt8]) {
        guard let source = try read({ try index.artSource(albumID: albumID) }) else {
            throw .notFound("no album with id \(albumID) in the library")
        }
        if let cover = source.cover, let bytes = Files.read(cover, limit: 16 << 20), let type = PictureKind.mimeType(of: bytes) {
            return (type, bytes)
        }
        if let track = source.track, let picture = reader.picture(track) { return picture }
        throw .notFound("album \(albumID) has no artwork")
    }

    // MARK: - Helpers

    private func read<T>(_ body: () throws -> T) throws(ControlError) -> T {
        do {
            return try body()
        } catch {
            log.warning("the library's index failed: \(error)")
            throw ControlError(status: 500, "the library's index could not be read: \(error)")
        }
    }

    static func isLyrics(_ name: String) -> Bool { name.lowercased().hasSuffix(".lrc") }

    /// Image files taken for their folder's cover, the better the lower.
    public static func coverRank(_ name: String) -> Int? {
        let lower = name.lowercased()
        guard let dot = lower.lastIndex(of: ".") else { return nil }
        guard ["jpg", "jpeg", "png", "webp"].contains(lower[lower.index(after: dot)...]) else { return nil }
        return ["cover", "folder", "front", "album"].firstIndex(of: String(lower[..<dot]))
    }

    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var standard = (full as NSString).standardizingPath
        while standard.count > 1 && standard.hasSuffix("/") { standard.removeLast() }
        return standard
    }
}
