/// Parses M3U and M3U8 playlists (extended or plain): one entry per non-comment line,
/// `#EXTINF` titles kept; relative paths resolved against the playlist's folder.
public enum PlaylistParser {
    public struct Entry: Equatable, Sendable {
        public var location: String
        public var title: String?
        public init(location: String, title: String? = nil) {
            self.location = location
            self.title = title
        }
    }

    public static func parse(_ text: String, baseDirectory: String) -> [Entry] {
        var entries: [Entry] = []
        var pendingTitle: String?
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: { $0.isNewline }) {
            var line = raw.trimmingSpaces()
            if line.hasPrefix("\u{FEFF}") { line.removeFirst() }
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if line.hasPrefix("#EXTINF:"), let comma = line.firstIndex(of: ",") {
                    pendingTitle = String(line[line.index(after: comma)...]).trimmingSpaces()
                }
                continue
            }
            var location = line
            if location.hasPrefix("file://") { location.removeFirst("file://".count) }
            let isURL = location.contains("://")
            if !isURL && !location.hasPrefix("/") {
                location = baseDirectory.hasSuffix("/") ? baseDirectory + location : baseDirectory + "/" + location
            }
            entries.append(Entry(location: location, title: pendingTitle))
            pendingTitle = nil
        }
        return entries
    }
}

