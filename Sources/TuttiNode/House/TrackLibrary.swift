import Foundation
import Synchronization
import TuttiCore
import TuttiLibrary
import TuttiMedia
import TuttiNet

/// What the house knows about its tracks: their tags (read from the files' containers:
/// ID3, MP4 atoms, Vorbis comments), their lengths and artwork. Tags are read once per file and kept, without their pictures,
/// for the `capacity` tracks asked about last (a full queue of every zone fits); artwork is
/// read again when asked for, and the last few are kept.
public final class TrackLibrary: Sendable {
    public struct Info: Sendable {
        /// The tags, pictures left out.
        public var tags: TrackTags
        /// Frames, when known.
        public var length: MediaFrames?
        public var hasArtwork: Bool
        /// Counts the artwork's changes (a receiver's sender shows each track's cover).
        public var artworkVersion = 0
    }

    /// The tracks kept: a queue's worth and a margin.
    public static let capacity = PlayQueue.capacity + 5_000
    private let cache = Mutex(BoundedCache<String, Info>(capacity: capacity))
    /// Titles playlists gave entries (`#EXTINF`, `TitleN=`): used when the entry's own tags
    /// have none.
    private let suggested = Mutex(BoundedCache<String, String>(capacity: capacity))
    private let pictures = Mutex<[(path: String, picture: TrackTags.Picture)]>([])

    public init() {}

    public func info(_ path: String) -> Info {
        if let known = cache.withLock({ $0[path] }) { return known }
        let info = read(path)
        cache.withLock { $0[path] = info }
        return info
    }

    /// What is known of `path` without reading it (nothing, until `info` has read it): for
    /// the house's critical sections, which never touch the disk.
    public func known(_ path: String) -> Info {
        cache.withLock { $0[path] } ?? Info(tags: TrackTags(), length: nil, hasArtwork: false)
    }

    /// Keeps the titles playlists gave `entries`.
    public func suggest(_ entries: [PlaylistParser.Entry]) {
        suggested.withLock { titles in
            for entry in entries { if let t = entry.title { titles[entry.location] = t } }
        }
        cache.withLock { cache in
            for entry in entries {
                guard let t = entry.title, let known = cache[entry.location] else { continue }
                // A file with no title of its own, or a URL still called by its name.
                let placeholder = RemoteLocation.isRemote(entry.location) && known.tags.title == RemoteLocation.displayName(entry.location)
                if known.tags.title == nil || placeholder { cache.update(entry.location) { $0.tags.title = t } }
            }
        }
    }

    /// Records a remote file's own tags, read as it plays (a playlist's title stays only
    /// when the file has none).
    public func setTags(_ tags: TrackTags, of path: String) {
        // A receiver's tags come with the cover its sender shows (a file's never do: they
        // are read again when asked).
        let receiver = ReceiverEntry.isReceiver(path)
        var changedCover = false
        if receiver {
            pictures.withLock { kept in
                let old = kept.first { $0.path == path }?.picture
                changedCover = old != tags.artwork
                kept.removeAll { $0.path == path }
                if let art = tags.artwork { kept.insert((path, art), at: 0) }
                if kept.count > 8 { kept.removeLast() }
            }
        }
        cache.withLock { cache in
            var merged = tags
            merged.pictures = []
            if merged.title == nil { merged.title = cache[path]?.tags.title }
            var info = cache[path] ?? Info(tags: TrackTags(), length: nil, hasArtwork: false)
            info.tags = merged
            if receiver {
                info.hasArtwork = tags.artwork != nil
                if changedCover { info.artworkVersion += 1 }
            }
            cache[path] = info
        }
    }

    /// Records a length learned from the decoder.
    public func setLength(_ length: MediaFrames, of path: String) {
        cache.withLock { $0.update(path) { $0.length = length } }
    }

    /// The track's artwork (its front cover, else its first picture).
    public func artwork(_ path: String) -> TrackTags.Picture? {
        if ReceiverEntry.isReceiver(path) { return pictures.withLock { $0.first { $0.path == path }?.picture } }
        if LiveInput.isLive(path) || RemoteLocation.isRemote(path) { return nil }
        if let kept = pictures.withLock({ $0.first { $0.path == path }?.picture }) { return kept }
        guard let picture = tags(path).artwork ?? Self.folderCover(of: path) else { return nil }
        pictures.withLock {
            $0.insert((path, picture), at: 0)
            if $0.count > 8 { $0.removeLast() }
        }
        return picture
    }

    private func read(_ path: String) -> Info {
        if LiveInput.isLive(path) {
            // A live input has no tags: it is called by what it is. Never opened here.
            var tags = TrackTags()
            tags.title = (try? LiveInput(parsing: path))?.title ?? (try? ReceiverEntry(parsing: path))?.title ?? path
            return Info(tags: tags, length: nil, hasArtwork: false)
        }
        if RemoteLocation.isRemote(path) {
            // Nothing is asked of the server here: a playlist's title, else the URL's name,
            // until it plays (then its stream says more).
            var tags = TrackTags()
            tags.title = suggested.withLock { $0[path] } ?? RemoteLocation.displayName(path)
            return Info(tags: tags, length: nil, hasArtwork: false)
        }
        var (tags, length) = probe(path)
        if tags.title == nil { tags.title = suggested.withLock { $0[path] } }
        let hasArtwork = !tags.pictures.isEmpty || Self.folderCoverPath(of: path) != nil
        tags.pictures = []
        return Info(tags: tags, length: length, hasArtwork: hasArtwork)
    }

    /// A file's tags (with their pictures) and length; nothing for what cannot be read
    /// (it fails when it plays, with its reason).
    private func probe(_ path: String) -> (TrackTags, MediaFrames?) {
        (try? MediaDecoder.probe(path: path)) ?? (TrackTags(), nil)
    }

    private func tags(_ path: String) -> TrackTags { probe(path).0 }

    /// A cover image beside the file, as the library takes them (cover, folder, front or
    /// album; .jpg, .jpeg, .png or .webp, in any case), for a file with no picture of its own.
    static func folderCoverPath(of path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder) else { return nil }
        let best = names.compactMap { name in MusicLibrary.coverRank(name).map { (name, $0) } }.min { $0.1 < $1.1 }
        return best.map { folder + "/" + $0.0 }
    }

    static func folderCover(of path: String) -> TrackTags.Picture? {
        guard let file = folderCoverPath(of: path), let bytes = Files.read(file, limit: 16 << 20),
              let type = PictureKind.mimeType(of: bytes) else { return nil }
        return TrackTags.Picture(mimeType: type, kind: 3, description: "", data: bytes)
    }
}
