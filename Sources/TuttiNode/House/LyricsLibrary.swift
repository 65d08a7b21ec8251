import Foundation
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet

/// Finds a track's lyrics: an `.lrc` file beside it with the same name (whatever the
/// track's format), then a file in the lyrics folder matching its artist and title
/// (`Artist - Title.lrc`, `Title.lrc`, `Artist/Title.lrc`, in any case and punctuation),
/// then lyrics in its tags: ID3's SYLT as timed lines; ID3's USLT, Vorbis comments'
/// `LYRICS`/`UNSYNCEDLYRICS` and MP4's `©lyr` as LRC when they carry time tags, else as
/// plain text. Found once per track and kept.
public final class LyricsLibrary: Sendable {
    private let folder: String?
    /// The lyrics of the tracks asked about last (found or not).
    private let cache = Mutex(BoundedCache<String, Lyrics?>(capacity: 2_000))
    /// The lyrics folder's `.lrc` files by normalized name, read once.
    private let index = Mutex<[String: String]?>(nil)
    private let log = Log("coordinator")

    public init(folder: String?) {
        self.folder = folder
    }

    public func lyrics(for path: String, tags: TrackTags) -> Lyrics? {
        if let known = cache.withLock({ $0[path] }) { return known }
        let found = find(path, tags)
        if let found { log.info("lyrics for \((path as NSString).lastPathComponent): \(found.source ?? "?")\(found.skipped > 0 ? " (\(found.skipped) lines skipped)" : "")") }
        cache.withLock { $0[path] = found }
        return found
    }

    /// The lyrics of `path` if they were looked for already (nil otherwise): for the
    /// house's critical sections, which never touch the disk.
    public func known(_ path: String) -> Lyrics? {
        cache.withLock { $0[path] } ?? nil
    }

    private func find(_ path: String, _ tags: TrackTags) -> Lyrics? {
        let base = (path as NSString).deletingPathExtension
        for candidate in [base + ".lrc", base + ".LRC", base + ".Lrc"] {
            if let lyrics = read(candidate) { return lyrics }
        }
        if let title = tags.title ?? Optional(((path as NSString).lastPathComponent as NSString).deletingPathExtension) {
            let keys = [tags.artist.map { Self.key($0 + " - " + title) }, Self.key(title),
                        tags.artist.map { Self.key($0 + "/" + title) }].compactMap { $0 }
            let table = folderIndex()
            for key in keys {
                if let file = table[key], let lyrics = read(file) { return lyrics }
            }
        }
        if let synced = tags.syncedLyrics.first(where: { !$0.lines.isEmpty }) {
            return Lyrics(lines: synced.lines.map { LyricLine(time: $0.milliseconds, text: $0.text.trimmingWhitespace()) }
                .sorted { $0.time < $1.time }, source: "ID3 SYLT")
        }
        if let plain = tags.lyrics.first(where: { !$0.text.trimmingWhitespace().isEmpty }) {
            let source = "embedded lyrics (\(plain.description.isEmpty ? "USLT" : plain.description))"
            let timed = LRCParser.parse(plain.text, source: source)
            if timed.isSynced { return timed }
            return Lyrics(plain: plain.text.components(separatedBy: .newlines).map { $0.trimmingSpaces() }
                .filter { !$0.isEmpty }, source: source)
        }
        return nil
    }

    private func read(_ file: String) -> Lyrics? {
        // A regular file of at most 1 MB (a named pipe would block the disk queue).
        guard let data = Files.read(file, limit: 1_000_000) else {
            if FileManager.default.fileExists(atPath: file) {
                log.warning("lyrics file \(file) is not a readable regular file of at most 1 MB; ignored")
            }
            return nil
        }
        let (text, _) = LyricsText.decode(data, legacy: LegacyText.decode)
        let lyrics = LRCParser.parse(text, source: file)
        return lyrics.isEmpty ? nil : lyrics
    }

    private func folderIndex() -> [String: String] {
        if let known = index.withLock({ $0 }) { return known }
        var table: [String: String] = [:]
        if let folder, let walker = FileManager.default.enumerator(atPath: folder) {
            while let item = walker.nextObject() as? String {
                guard (item as NSString).pathExtension.lowercased() == "lrc" else { continue }
                table[Self.key((item as NSString).deletingPathExtension)] = (folder as NSString).appendingPathComponent(item)
            }
        }
        index.withLock { $0 = table }
        return table
    }

    /// A name reduced to lowercase letters and digits, so that "AC/DC - Back in Black" and
    /// "ac-dc - back in black" meet.
    static func key(_ name: String) -> String {
        String(name.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map(Character.init))
    }
}
