import Glibc
import Synchronization

/// What a walk of a folder found: every regular file under it with its size and time of
/// last change (hidden names, those starting with a dot, left out), and every folder (for
/// watching). Symbolic links are followed where they stay within the folder walked; one
/// that leads out of it (`music/etc -> /etc`, a share's link to a home folder) is followed
/// only when asked (`outside`).
public struct FolderWalk: Sendable {
    public struct File: Sendable, Equatable {
        public var path: String
        public var size: Int64
        /// Last modification, nanoseconds since the Unix epoch.
        public var modified: Int64
    }

    public var files: [File] = []
    public var folders: [String] = []
    /// Links not followed: they lead out of the folder walked.
    public var linksOut: [String] = []

    /// Walks `root`; `keep` picks files by name; `outside`: links that lead out of `root` are
    /// followed too. A folder met twice (a link back up) is walked once; what cannot be read
    /// is skipped.
    public static func walk(_ root: String, outside: Bool = false, keep: (String) -> Bool) -> FolderWalk {
        var walk = FolderWalk()
        var seen = Set<[UInt64]>()
        var pending = [root]
        let realRoot = realPath(root) ?? root
        while let folder = pending.popLast() {
            var info = stat()
            guard stat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR,
                  seen.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted,
                  let dir = opendir(folder) else { continue }
            walk.folders.append(folder)
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name.hasPrefix(".") { continue }
                let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
                var link = stat()
                guard lstat(path, &link) == 0 else { continue }
                if link.st_mode & S_IFMT == S_IFLNK, !outside {
                    guard let target = realPath(path), target == realRoot || target.hasPrefix(realRoot == "/" ? "/" : realRoot + "/") else {
                        walk.linksOut.append(path)
                        continue
                    }
                }
                var item = stat()
                guard stat(path, &item) == 0 else { continue }
                switch item.st_mode & S_IFMT {
                case S_IFDIR: pending.append(path)
                case S_IFREG where keep(name):
                    walk.files.append(File(path: path, size: Int64(item.st_size),
                                           modified: Int64(item.st_mtim.tv_sec) * 1_000_000_000 + Int64(item.st_mtim.tv_nsec)))
                default: break
                }
            }
            closedir(dir)
        }
        return walk
    }

    /// Where `path` leads, every link followed; nil when it leads nowhere.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// Tells when anything changes in a set of folders (inotify): a file made, written, moved
/// or removed, a folder made or removed. Changes are gathered until the folders have been
/// quiet for `settle` (a copy of an album is one change, not hundreds); then `changed` is
/// called on the watcher's own thread. Watches are per folder: `watch` is given every
/// folder, again after each walk (new folders are watched from then on).
public final class FolderWatcher: Sendable {
    private let fd: Int32
    private let settle: Int64
    private let changed: @Sendable () -> Void
    /// Watch descriptors by folder.
    private let watches = Mutex<[String: Int32]>([:])
    private let stopped = Atomic<Bool>(false)
    /// Folders that could not be watched (the system's limit, max_user_watches, reached).
    public var unwatched: Int { unwatchedCount.load(ordering: .relaxed) }
    private let unwatchedCount = Atomic<Int>(0)

    public init(settle nanoseconds: Int64 = 2_000_000_000, changed: @escaping @Sendable () -> Void) throws(SystemError) {
        fd = try System.check("inotify_init1", inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)))
        settle = nanoseconds
        self.changed = changed
        startThread("tutti-watch") { [self] in run() }
    }

    /// Watches exactly `folders` from now on.
    public func watch(_ folders: [String]) {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)
        let wanted = Set(folders)
        var failed = 0
        watches.withLock { watches in
            for (folder, wd) in watches where !wanted.contains(folder) {
                inotify_rm_watch(fd, wd)
                watches[folder] = nil
            }
            for folder in folders where watches[folder] == nil {
                let wd = inotify_add_watch(fd, folder, mask)
                if wd >= 0 { watches[folder] = wd } else { failed += 1 }
            }
        }
        unwatchedCount.store(failed, ordering: .relaxed)
    }

    /// Stops watching; the thread ends within a second.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var pendingSince: Int64?
        var lastEvent: Int64 = 0
        let clock = SystemClock()
        while !stopped.load(ordering: .relaxed) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait: Int32 = pendingSince == nil ? 1000 : Int32(max(10, min(1000, settle / 1_000_000)))
            _ = poll(&poller, 1, wait)
            let now = clock.nanosecondsNow()
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got > 0 {
                pendingSince = pendingSince ?? now
                lastEvent = now
                continue
            }
            if pendingSince != nil, now - lastEvent >= settle {
                pendingSince = nil
                changed()
            }
        }
        watches.withLock { $0.removeAll() }
        close(fd)
    }
}
