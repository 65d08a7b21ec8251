/// What shairport-sync's metadata pipe says an AirPlay sender plays. The pipe carries items,
/// each `<item><type>HEX</type><code>HEX</code><length>N</length>` with, when N > 0,
/// `<data encoding="base64">…</data>`, then `</item>`: type and code are four ASCII letters in
/// hex (`core` for the sender's DMAP fields, `ssnc` for shairport-sync's own). This reads the
/// pipe in whatever pieces it comes and keeps the track (title `minm`, artist `asar`, album
/// `asal`, cover art `PICT`), whether it plays (`pbeg`/`prsm` play, `pfls`/`pend` stop) and
/// where the sender takes commands back (`SenderRemote`, from `clip`, `daid`, `acre`, `dapo`).
///
/// A sender sends a track's fields one by one between `mdst` and `mden`: they are gathered
/// and shown together at `mden`. Bad input never grows it: an item longer than
/// `maximumItem` bytes (cover art included) is dropped, as is one it cannot read. Pure.
public struct AirPlayMetadata: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var type: String
        public var code: String
        public var data: [UInt8]
    }

    /// What the sender plays, as its last complete set of fields said (pictures included).
    public private(set) var track = TrackTags()
    /// Whether the sender plays (nil until it said).
    public private(set) var playing: Bool?
    /// The sender's name (`snam`), once it said.
    public private(set) var sender: String?
    /// Where the sender takes commands back, once it said (nil for a sender without a
    /// remote, such as PulseAudio's RAOP sink, and after its session ended).
    public private(set) var remote: SenderRemote?
    public private(set) var read = 0
    public private(set) var dropped = 0

    public static let maximumItem = 4 << 20

    private var pending: [UInt8] = []
    private var gathering: TrackTags?
    /// The play session's fields from shairport-sync (`clip`, `daid`, `acre`, `dapo`).
    private var session: [String: String] = [:] {
        didSet { remote = SenderRemote(host: session["clip"], port: session["dapo"], dacpID: session["daid"], activeRemote: session["acre"]) }
    }

    public init() {}

    /// Reads the next bytes of the pipe; returns the items they completed, after taking
    /// what they say.
    @discardableResult
    public mutating func take(_ bytes: some Sequence<UInt8>) -> [Item] {
        pending.append(contentsOf: bytes)
        var items: [Item] = []
        while let end = Self.find(Self.close, in: pending) {
            let text = pending[..<end]
            pending.removeFirst(end + Self.close.count)
            if let item = Self.item(text) {
                read += 1
                apply(item)
                items.append(item)
            } else {
                dropped += 1
            }
        }
        if pending.count > Self.maximumItem {
            // An item too long to be real: dropped up to the next one.
            dropped += 1
            if let next = Self.find(Self.open, in: pending.dropFirst()) { pending.removeFirst(next + 1) } else { pending.removeAll() }
        }
        return items
    }

    private mutating func apply(_ item: Item) {
        let text = String(decoding: item.data, as: UTF8.self)
        switch (item.type, item.code) {
        case ("ssnc", "mdst"):
            gathering = TrackTags()
        case ("ssnc", "mden"):
            if let gathering { track = gathering }
            gathering = nil
        case ("core", "minm"):
            set { $0.title = text.isEmpty ? nil : text }
        case ("core", "asar"):
            set { $0.artist = text.isEmpty ? nil : text }
        case ("core", "asal"):
            set { $0.album = text.isEmpty ? nil : text }
        case ("core", "asgn"):
            set { $0.genre = text.isEmpty ? nil : text }
        case ("ssnc", "PICT"):
            // Cover art comes on its own, after the fields: it goes with the track shown.
            let mime = item.data.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? "image/png" : "image/jpeg"
            track.pictures = item.data.isEmpty ? [] : [TrackTags.Picture(mimeType: mime, kind: 3, description: "", data: item.data)]
        case ("ssnc", "pbeg"), ("ssnc", "prsm"):
            playing = true
        case ("ssnc", "pfls"):
            playing = false
        case ("ssnc", "pend"):
            playing = false
            session = [:]
        case ("ssnc", "clip"), ("ssnc", "daid"), ("ssnc", "acre"), ("ssnc", "dapo"):
            // A sender's session, field by field; a new sender's replace the last one's.
            session[item.code] = text.count <= 64 ? text : nil
        case ("ssnc", "snam"):
            sender = text.isEmpty ? nil : text
        default:
            break
        }
    }

    /// A field of the track: into the set being gathered, or straight into the track when
    /// the sender sent it on its own.
    private mutating func set(_ change: (inout TrackTags) -> Void) {
        if gathering != nil {
            change(&gathering!)
        } else {
            change(&track)
        }
    }

    // MARK: - Reading items

    private static let open = Array("<item>".utf8)
    private static let close = Array("</item>".utf8)

    private static func item(_ text: ArraySlice<UInt8>) -> Item? {
        guard let type = field("type", in: text).flatMap(fourCC), let code = field("code", in: text).flatMap(fourCC),
              let length = field("length", in: text).flatMap({ Int(String(decoding: $0, as: UTF8.self)) }), length >= 0 else { return nil }
        guard length > 0 else { return Item(type: type, code: code, data: []) }
        guard let start = find(Array("<data encoding=\"base64\">".utf8), in: text),
              let end = find(Array("</data>".utf8), in: text), end > start,
              let data = base64(text[(text.startIndex + start + 24)..<(text.startIndex + end)]), data.count == length else { return nil }
        return Item(type: type, code: code, data: data)
    }

    /// What lies between `<name>` and `</name>`.
    private static func field(_ name: String, in text: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        guard let start = find(open, in: text) else { return nil }
        let from = text.startIndex + start + open.count
        guard let length = find(close, in: text[from...]) else { return nil }
        return text[from..<(from + length)]
    }

    /// Eight hex digits as their four ASCII letters.
    private static func fourCC(_ hex: ArraySlice<UInt8>) -> String? {
        guard hex.count == 8, let value = UInt32(String(decoding: hex, as: UTF8.self), radix: 16) else { return nil }
        let bytes = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Where `needle` starts in `haystack` (an offset from its start).
    static func find(_ needle: [UInt8], in haystack: some Collection<UInt8>) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var offset = 0
        var index = haystack.startIndex
        while haystack.distance(from: index, to: haystack.endIndex) >= needle.count {
            if haystack[index] == needle[0], haystack[index...].starts(with: needle) { return offset }
            index = haystack.index(after: index)
            offset += 1
        }
        return nil
    }

    /// Base64 (line breaks and spaces ignored); nil when it is not.
    static func base64(_ text: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var bits: UInt32 = 0, count = 0, padding = 0
        for c in text {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            case 0x0A, 0x0D, 0x20, 0x09: continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            bits = bits << 6 | value
            count += 1
            if count == 4 {
                out += [UInt8(bits >> 16 & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits & 0xFF)]
                bits = 0
                count = 0
            }
        }
        switch count {
        case 0: break
        case 2: out.append(UInt8(bits >> 4 & 0xFF))
        case 3: out += [UInt8(bits >> 10 & 0xFF), UInt8(bits >> 2 & 0xFF)]
        default: return nil
        }
        return out
    }
}
