/// Entries the queue holds that name something on a web server: `http://` and `https://`
/// URLs (an MP3 file, an internet radio station, or a playlist to expand).
public enum RemoteLocation {
    /// True when a queue entry names a URL rather than a file or a live input.
    public static func isRemote(_ entry: String) -> Bool {
        let lower = entry.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// What now playing calls a URL before anything else is known: its last path component
    /// without its extension (percent escapes decoded), else its host.
    public static func displayName(_ url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.firstRange(of: "://") { rest = rest[scheme.upperBound...] }
        rest = rest.prefix { $0 != "?" && $0 != "#" }
        let parts = rest.split(separator: "/")
        let host = parts.first.map(String.init) ?? url
        guard parts.count > 1, var name = parts.last.map(String.init) else { return host }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        return percentDecoded(name) ?? name
    }

    /// `%XX` escapes decoded (a URL's path); nil when one is malformed or the bytes are not UTF-8.
    public static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let b = iterator.next() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b)  // in a path, "+" is itself
                continue
            }
            guard let h = iterator.next(), let l = iterator.next(), let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(v)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
