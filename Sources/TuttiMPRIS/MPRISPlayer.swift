import TuttiAPI
import TuttiCore

/// What MPRIS (the Media Player Remote Interfacing Specification 2.2) shows of the house
/// and asks of it: its properties, made of the coordinator's now-playing card and the
/// current lyric line, and the command each method call or property change stands for.
/// Pure: `MPRISBridge` does the talking.
public enum MPRISPlayer {
    public static let busName = "org.mpris.MediaPlayer2.tutti"
    public static let path = "/org/mpris/MediaPlayer2"
    public static let rootInterface = "org.mpris.MediaPlayer2"
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    /// What the house is asked to do.
    public enum Command: Equatable, Sendable {
        case transport(String)
        /// Forward or back by seconds.
        case skip(Double)
        /// To a position in the current track, seconds.
        case seek(Double)
        case volume(Double)
        case loop(LoopMode)
        /// Play this file or URL next, now.
        case open(String)
    }

    /// What the bridge knows: the last card, when it came (local ns), the lyric line now.
    public struct State: Sendable {
        public var nowPlaying: NowPlaying?
        public var receivedAt: Int64 = 0
        public var lyricLine: String?
        /// The control API's address, for artwork URLs.
        public var baseURL: String

        public init(baseURL: String) { self.baseURL = baseURL }

        /// Where the track is heard now, seconds.
        public func elapsed(now: Int64) -> Double {
            guard let np = nowPlaying else { return 0 }
            guard np.state == .playing else { return np.elapsed }
            let position = np.elapsed + Double(now - receivedAt) / 1e9 * np.rate
            return np.duration.map { min(position, $0) } ?? position
        }
    }

    public static func trackID(_ np: NowPlaying?) -> String { np?.itemID.map { "/org/tutti/track/\($0)" } ?? noTrack }

    /// The root interface's properties; `identity`: the player's name on the desktop.
    public static func rootProperties(identity: String = "tutti") -> [(String, DBusValue)] {
        [("CanQuit", .bool(false)), ("CanRaise", .bool(false)), ("HasTrackList", .bool(false)), ("Identity", .string(identity)),
         ("SupportedUriSchemes", .strings(["file", "http", "https"])), ("SupportedMimeTypes", .strings(["audio/mpeg"]))]
    }

    /// The bus name of a zone's player: the default zone's is `busName`, another's
    /// `busName.ID`, its id as a bus name's element (letters, digits and underscores, not
    /// starting with a digit).
    public static func busName(zone: String) -> String {
        guard zone != "default" else { return busName }
        var element = String(zone.unicodeScalars.map { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) ? Character($0) : "_" })
        if element.first.map({ $0.isNumber }) ?? true { element = "z" + element }
        return busName + "." + element.prefix(200)
    }

    /// The player interface's properties (Position last).
    public static func playerProperties(_ state: State, now: Int64) -> [(String, DBusValue)] {
        let np = state.nowPlaying
        let status: String
        switch np?.state {
        case .playing, .loading, .buffering: status = "Playing"
        case .paused: status = "Paused"
        default: status = "Stopped"
        }
        let loop: String
        switch np?.loopMode {
        case .one: loop = "Track"
        case .all, .shuffle: loop = "Playlist"
        default: loop = "None"
        }
        let hasTrack = np?.itemID != nil
        let seekable = hasTrack && np?.duration != nil && np?.isLiveStream != true
        return [
            ("PlaybackStatus", .string(status)), ("LoopStatus", .string(loop)), ("Rate", .double(1)), ("Shuffle", .bool(np?.loopMode == .shuffle)),
            ("Metadata", .dictionary(metadata(state))), ("Volume", .double(((np?.muted ?? false) ? 0 : (np?.volume ?? 100)) / 100)),
            ("MinimumRate", .double(1)), ("MaximumRate", .double(1)),
            ("CanGoNext", .bool((np?.queueCount ?? 0) > 0)), ("CanGoPrevious", .bool((np?.queueCount ?? 0) > 0)),
            ("CanPlay", .bool(hasTrack || (np?.queueCount ?? 0) > 0)), ("CanPause", .bool(hasTrack)), ("CanSeek", .bool(seekable)),
            ("CanControl", .bool(true)), ("Position", .int64(Int64(state.elapsed(now: now) * 1e6))),
        ]
    }

    /// The track's metadata (xesam and mpris keys), with the lyric line being sung as `xesam:asText`.
    public static func metadata(_ state: State) -> [(String, DBusValue)] {
        guard let np = state.nowPlaying, np.itemID != nil else { return [("mpris:trackid", .objectPath(noTrack))] }
        var entries: [(String, DBusValue)] = [("mpris:trackid", .objectPath(trackID(np)))]
        if let duration = np.duration, np.isLiveStream != true { entries.append(("mpris:length", .int64(Int64(duration * 1e6)))) }
        if let title = np.title ?? np.path?.split(separator: "/").last.map(String.init) { entries.append(("xesam:title", .string(title))) }
        if let artist = np.artist { entries.append(("xesam:artist", .strings([artist]))) }
        if let album = np.album ?? np.station { entries.append(("xesam:album", .string(album))) }
        if let albumArtist = np.albumArtist { entries.append(("xesam:albumArtist", .strings([albumArtist]))) }
        if let track = np.trackNumber { entries.append(("xesam:trackNumber", .int32(Int32(clamping: track)))) }
        if let genre = np.genre { entries.append(("xesam:genre", .strings([genre]))) }
        if let art = np.artworkURL {
            let base = state.baseURL.hasSuffix("/") ? String(state.baseURL.dropLast()) : state.baseURL
            entries.append(("mpris:artUrl", .string(art.hasPrefix("/") ? base + art : art)))
        }
        if let line = state.lyricLine { entries.append(("xesam:asText", .string(line))) }
        return entries
    }

    public enum Refusal: Error, Equatable {
        case unknownMethod(String)
        case badArguments(String)
        case readOnly(String)

        public var name: String {
            switch self {
            case .unknownMethod: "org.freedesktop.DBus.Error.UnknownMethod"
            case .badArguments: "org.freedesktop.DBus.Error.InvalidArgs"
            case .readOnly: "org.freedesktop.DBus.Error.PropertyReadOnly"
            }
        }

        public var message: String {
            switch self {
            case let .unknownMethod(m), let .badArguments(m), let .readOnly(m): m
            }
        }
    }

    /// The command a player method stands for; nil for one that asks nothing of the house.
    public static func command(method: String, _ arguments: [DBusValue?], state: State) throws(Refusal) -> Command? {
        switch method {
        case "Play": return .transport("play")
        case "Pause": return .transport("pause")
        case "PlayPause": return .transport("toggle")
        case "Stop": return .transport("stop")
        case "Next": return .transport("next")
        case "Previous": return .transport("previous")
        case "Seek":
            guard case let .int64(offset)? = arguments.first ?? nil else { throw .badArguments("Seek takes an offset in microseconds (x)") }
            return .skip(Double(offset) / 1e6)
        case "SetPosition":
            guard arguments.count == 2, case let .objectPath(track)? = arguments[0], case let .int64(position)? = arguments[1] else {
                throw .badArguments("SetPosition takes a track id (o) and a position in microseconds (x)")
            }
            // As the specification says: a stale track id, or a position outside the track, is ignored.
            guard track == trackID(state.nowPlaying), position >= 0,
                  Double(position) / 1e6 <= (state.nowPlaying?.duration ?? .infinity) else { return nil }
            return .seek(Double(position) / 1e6)
        case "OpenUri":
            guard case let .string(uri)? = arguments.first ?? nil, !uri.isEmpty else { throw .badArguments("OpenUri takes a URI (s)") }
            // Only the schemes it says it supports: any program on the session bus may call
            // this, and a bare path, `pcm:` or anything else is not for it to queue.
            let lower = uri.lowercased()
            if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return .open(uri) }
            guard lower.hasPrefix("file:///") else {
                throw .badArguments("OpenUri takes a file://, http:// or https:// URI, not \(uri.prefix(64))")
            }
            let path = String(uri.dropFirst(7))
            return .open(RemoteLocation.percentDecoded(path) ?? path)
        default:
            throw .unknownMethod("no method \(method) on \(playerInterface)")
        }
    }

    /// The command setting a property stands for.
    public static func set(_ property: String, _ value: DBusValue, state: State) throws(Refusal) -> Command? {
        switch (property, value.plain) {
        case let ("Volume", .double(volume)): return .volume(min(max(volume, 0), 1) * 100)
        case let ("LoopStatus", .string(loop)):
            switch loop {
            case "None": return .loop(.once)
            case "Track": return .loop(.one)
            case "Playlist": return .loop(state.nowPlaying?.loopMode == .shuffle ? .shuffle : .all)
            default: throw .badArguments("LoopStatus is None, Track or Playlist, not \(loop)")
            }
        case let ("Shuffle", .bool(on)):
            if on { return .loop(.shuffle) }
            return state.nowPlaying?.loopMode == .shuffle ? .loop(.all) : nil
        case ("Rate", .double): return nil
        case ("Volume", _), ("LoopStatus", _), ("Shuffle", _), ("Rate", _):
            throw .badArguments("\(property) does not take a value of type \(value.plain.signature)")
        default:
            throw .readOnly("\(property) cannot be set")
        }
    }

    /// Introspection data for the object.
    public static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
         <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="data" type="s" direction="out"/></method></interface>
         <interface name="org.freedesktop.DBus.Properties">
          <method name="Get"><arg name="interface" type="s" direction="in"/><arg name="property" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
          <method name="GetAll"><arg name="interface" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
          <method name="Set"><arg name="interface" type="s" direction="in"/><arg name="property" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
          <signal name="PropertiesChanged"><arg name="interface" type="s"/><arg name="changed" type="a{sv}"/><arg name="invalidated" type="as"/></signal>
         </interface>
         <interface name="org.mpris.MediaPlayer2">
          <method name="Raise"/><method name="Quit"/>
          <property name="CanQuit" type="b" access="read"/><property name="CanRaise" type="b" access="read"/>
          <property name="HasTrackList" type="b" access="read"/><property name="Identity" type="s" access="read"/>
          <property name="SupportedUriSchemes" type="as" access="read"/><property name="SupportedMimeTypes" type="as" access="read"/>
         </interface>
         <interface name="org.mpris.MediaPlayer2.Player">
          <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/><method name="Stop"/><method name="Play"/>
          <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
          <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
          <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
          <signal name="Seeked"><arg name="Position" type="x"/></signal>
          <property name="PlaybackStatus" type="s" access="read"/><property name="LoopStatus" type="s" access="readwrite"/>
          <property name="Rate" type="d" access="readwrite"/><property name="Shuffle" type="b" access="readwrite"/>
          <property name="Metadata" type="a{sv}" access="read"/><property name="Volume" type="d" access="readwrite"/>
          <property name="Position" type="x" access="read"/><property name="MinimumRate" type="d" access="read"/>
          <property name="MaximumRate" type="d" access="read"/><property name="CanGoNext" type="b" access="read"/>
          <property name="CanGoPrevious" type="b" access="read"/><property name="CanPlay" type="b" access="read"/>
          <property name="CanPause" type="b" access="read"/><property name="CanSeek" type="b" access="read"/>
          <property name="CanControl" type="b" access="read"/>
         </interface>
        </node>
        """
}
