/// Parses playlists: M3U and M3U8 (extended or plain; `#EXTINF` titles kept) and PLS
/// (`FileN=`, `TitleN=`). Relative entries are resolved against the playlist's own
/// location, a folder or a URL.
public enum PlaylistParser {
    public struct Entry: Equatable, Sendable {
        public var location: String
        public var title: String?
        public init(location: String, title: String? = nil) {
            self.location = location
            self.title = title
        }

        /// The titles `entries` carry, by location (the first, when one appears twice).
        public static func titles(_ entries: [Entry]) -> [String: String] {
            var titles: [String: String] = [:]
            for entry in entries { if let t = entry.title, titles[entry.location] == nil { titles[entry.location] = t } }
            return titles
        }
    }

    public enum Format: String, Sendable {
        case m3u, pls

        /// The format a location's extension names (`.m3u`, `.m3u8`, `.pls`), if any.
        public init?(location: String) {
            var path = Substring(location)
            if RemoteLocation.isRemote(location) { path = path.prefix { $0 != "?" && $0 != "#" } }
            guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
            switch path[path.index(after: dot)...].lowercased() {
            case "m3u", "m3u8": self = .m3u
            case "pls": self = .pls
            default: return nil
            }
        }

        /// The format a server's content type names, if it names a playlist.
        public init?(contentType: String) {
            let type = contentType.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() } ?? ""
            switch type {
            case "audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl", "application/vnd.apple.mpegurl": self = .m3u
            case "audio/x-scpls", "application/pls+xml": self = .pls
            default: return nil
            }
        }

        /// The format a playlist's first line gives away (`[playlist]`, `#EXTM3U`), if any.
        public init?(sniffing text: Substring) {
            let first = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }.prefix(16).lowercased()
            if first.hasPrefix("[playlist]") { self = .pls } else if first.hasPrefix("#extm3u") { self = .m3u } else { return nil }
        }
    }

    /// The entries of an M3U playlist whose location is `base` (a folder or a URL).
    public static func parse(_ text: String, baseDirectory base: String) -> [Entry] {
        parse(text, format: .m3u, base: base)
    }

    public static func parse(_ text: String, format: Format, base: String) -> [Entry] {
        switch format {
        case .m3u: parseM3U(text, base: base)
        case .pls: parsePLS(text, base: base)
        }
    }

    static func lines(_ text: String) -> [String] {
        text.split(omittingEmptySubsequences: true, whereSeparator: { $0.isNewline }).map { raw in
            var line = raw.trimmingSpaces()
            if line.hasPrefix("\u{FEFF}") { line.removeFirst() }
            return line
        }.filter { !$0.isEmpty }
    }

    static func parseM3U(_ text: String, base: String) -> [Entry] {
        var entries: [Entry] = []
        var pendingTitle: String?
        for line in lines(text) {
            if line.hasPrefix("#") {
                if line.hasPrefix("#EXTINF:"), let comma = line.firstIndex(of: ",") {
                    let title = line[line.index(after: comma)...].trimmingSpaces()
                    pendingTitle = title.isEmpty ? nil : title
                }
                continue
            }
            entries.append(Entry(location: resolve(line, against: base), title: pendingTitle))
            pendingTitle = nil
        }
        return entries
    }

    /// PLS: `[playlist]`, then `FileN=`, `TitleN=` and `LengthN=` in any order; entries in
    /// the order of N.
    static func parsePLS(_ text: String, base: String) -> [Entry] {
        var files: [Int: String] = [:], titles: [Int: String] = [:]
        for line in lines(text) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces().lowercased()
            let value = line[line.index(after: equals)...].trimmingSpaces()
            if key.hasPrefix("file"), let n = Int(key.dropFirst(4)), !value.isEmpty { files[n] = value }
            if key.hasPrefix("title"), let n = Int(key.dropFirst(5)), !value.isEmpty { titles[n] = value }
        }
        return files.keys.sorted().map { Entry(location: resolve(files[$0]!, against: base), title: titles[$0]) }
    }

    /// An entry as a full location: URLs stay, `file://` becomes a path, and a relative
    /// entry is taken from the playlist's folder or URL.
    public static func resolve(_ entry: String, against base: String) -> String {
        var location = entry
        if location.lowercased().hasPrefix("file://") { location.removeFirst("file://".count) }
        if location.contains("://") || location.hasPrefix("pcm:") { return location }
        if RemoteLocation.isRemote(base) { return resolveURL(location, against: base) }
        if location.hasPrefix("/") { return location }
        return base.hasSuffix("/") ? base + location : base + "/" + location
    }

    /// RFC 3986's reference resolution, for the cases playlists hold: an absolute path
    /// (`/x.mp3`) or a relative one (`x.mp3`, `../x.mp3`) against the playlist's URL.
    static func resolveURL(_ reference: String, against base: String) -> String {
        guard let schemeEnd = base.firstRange(of: "://") else { return reference }
        let afterScheme = base[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let origin = String(base[..<authorityEnd])
        if reference.hasPrefix("//") { return String(base[..<schemeEnd.lowerBound]) + ":" + reference }
        var basePath = String(afterScheme[authorityEnd...].prefix { $0 != "?" && $0 != "#" })
        if basePath.isEmpty { basePath = "/" }
        let (referencePath, suffix): (Substring, Substring) = {
            let cut = reference.firstIndex { $0 == "?" || $0 == "#" } ?? reference.endIndex
            return (reference[..<cut], reference[cut...])
        }()
        let merged = referencePath.hasPrefix("/") ? String(referencePath)
            : String(basePath[...(basePath.lastIndex(of: "/") ?? basePath.startIndex)]) + referencePath
        var segments: [Substring] = []
        let parts = merged.split(separator: "/", omittingEmptySubsequences: false)
        for (i, part) in parts.enumerated() {
            switch part {
            case ".": if i == parts.count - 1 { segments.append("") }
            case "..":
                if segments.count > 1 { segments.removeLast() }
                if i == parts.count - 1 { segments.append("") }
            default: segments.append(part)
            }
        }
        var path = segments.joined(separator: "/")
        if !path.hasPrefix("/") { path = "/" + path }
        return origin + path + suffix
    }
}
