/// What a receiver's event hook tells the coordinator (librespot's `--onevent` program,
/// run with the event in its environment). The hook writes each event to a pipe as its
/// fields, `KEY=VALUE`, each ended by a NUL, and the event ended by one more NUL: values may
/// hold anything but a NUL (librespot's artists are one per line). This reads that stream
/// in whatever pieces it comes, and keeps what the events say is playing.
///
/// Bad input never grows it: an event longer than `maximumEvent` bytes is dropped, and so
/// is a field without `=`. Pure.
public struct ReceiverEvents: Sendable, Equatable {
    /// What the sender plays now, as its events said.
    public private(set) var track = TrackTags()
    /// Whether the sender plays (nil until an event said).
    public private(set) var playing: Bool?
    /// Events read, and events dropped as malformed or too long.
    public private(set) var read = 0
    public private(set) var dropped = 0

    public static let maximumEvent = 16_384

    private var fields: [String: String] = [:]
    private var field: [UInt8] = []
    private var size = 0
    private var skipping = false

    public init() {}

    /// Reads the next bytes of the stream; returns the events they completed (as fields),
    /// after taking what they say.
    @discardableResult
    public mutating func take(_ bytes: some Sequence<UInt8>) -> [[String: String]] {
        var events: [[String: String]] = []
        for byte in bytes {
            size += 1
            if byte != 0 {
                if size > Self.maximumEvent { skipping = true }
                if !skipping { field.append(byte) }
                continue
            }
            if !field.isEmpty {
                // The end of a field.
                if !skipping {
                    let text = String(decoding: field, as: UTF8.self)
                    if let equals = text.firstIndex(of: "=") {
                        fields[String(text[..<equals])] = String(text[text.index(after: equals)...])
                    } else {
                        skipping = true
                    }
                }
                field.removeAll(keepingCapacity: true)
                continue
            }
            // An empty field: the end of an event.
            if skipping || fields.isEmpty {
                if skipping { dropped += 1 }
            } else {
                read += 1
                apply(fields)
                events.append(fields)
            }
            fields = [:]
            size = 0
            skipping = false
        }
        return events
    }

    /// librespot's events: `track_changed` names the track (NAME, ARTISTS one per line,
    /// ALBUM); `playing`, `paused`, `stopped` say whether it plays; a sender that goes
    /// (`session_disconnected`) leaves nothing playing.
    private mutating func apply(_ event: [String: String]) {
        switch event["PLAYER_EVENT"] {
        case "track_changed", "changed", "started":
            guard let name = event["NAME"], !name.isEmpty else { return }
            var tags = TrackTags()
            tags.title = name
            tags.artist = event["ARTISTS"].map { $0.split(whereSeparator: \.isNewline).joined(separator: ", ") }.flatMap { $0.isEmpty ? nil : $0 }
            tags.album = event["ALBUM"].flatMap { $0.isEmpty ? nil : $0 }
            track = tags
        case "playing":
            playing = true
        case "paused":
            playing = false
        case "stopped", "session_disconnected":
            playing = false
            if event["PLAYER_EVENT"] == "session_disconnected" { track = TrackTags() }
        default:
            break
        }
    }
}
