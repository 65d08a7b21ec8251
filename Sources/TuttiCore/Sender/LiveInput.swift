/// A live input named in the queue: raw PCM read from a named pipe, a file or standard
/// input, as `pcm:PATH` with optional settings, for example
/// `pcm:/run/tutti/mpd.fifo?format=s16le&rate=48000` or `pcm:-` (standard input).
/// Stereo, interleaved; `format` is `s16le` (the default) or `f32le`; `rate` is 48000 (the
/// default) or 44100 (converted to 48 kHz as it is read).
public struct LiveInput: Equatable, Sendable {
    public enum SampleFormat: String, Sendable, CaseIterable {
        case s16le, f32le

        public var bytesPerSample: Int { self == .s16le ? 2 : 4 }
    }

    public static let scheme = "pcm:"
    /// The sample rates an input may have.
    public static let rates = [48_000, 44_100]

    public var path: String
    public var format: SampleFormat
    public var rate: Int

    public init(path: String, format: SampleFormat = .s16le, rate: Int = AudioFormat.sampleRate) {
        self.path = path
        self.format = format
        self.rate = rate
    }

    /// True when a queue entry names a live input rather than a file: raw PCM (`pcm:`) or a
    /// receiver (`ReceiverEntry`).
    public static func isLive(_ entry: String) -> Bool { entry.hasPrefix(scheme) || ReceiverEntry.isReceiver(entry) }

    /// Reads `pcm:PATH[?format=F&rate=R]`.
    public init(parsing entry: String) throws(LiveInputError) {
        guard entry.hasPrefix(Self.scheme) else { throw .notLive(entry) }
        let rest = entry.dropFirst(Self.scheme.count)
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let path = parts.first, !path.isEmpty else { throw .noPath(entry) }
        self.init(path: String(path))
        guard parts.count == 2 else { return }
        for setting in parts[1].split(separator: "&") {
            let pair = setting.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = pair.count == 2 ? String(pair[1]) : ""
            switch pair[0] {
            case "format":
                guard let f = SampleFormat(rawValue: value) else { throw .badFormat(value) }
                format = f
            case "rate":
                guard let r = Int(value), Self.rates.contains(r) else { throw .badRate(value) }
                rate = r
            default:
                throw .unknownSetting(String(pair[0]))
            }
        }
    }

    /// The entry as the queue keeps it (settings left at their defaults are left out).
    public var entry: String {
        var settings: [String] = []
        if format != .s16le { settings.append("format=\(format.rawValue)") }
        if rate != AudioFormat.sampleRate { settings.append("rate=\(rate)") }
        return Self.scheme + path + (settings.isEmpty ? "" : "?" + settings.joined(separator: "&"))
    }

    /// What now playing calls it.
    public var title: String { path == "-" ? "PCM input (standard input)" : "PCM input \(path)" }

    /// Bytes per frame (two channels).
    public var bytesPerFrame: Int { format.bytesPerSample * 2 }
}

/// Why a `pcm:` entry could not be read.
public enum LiveInputError: Error, Equatable, Sendable, CustomStringConvertible {
    case notLive(String)
    case noPath(String)
    case badFormat(String)
    case badRate(String)
    case unknownSetting(String)
    case badReceiverName(String)

    public var description: String {
        switch self {
        case let .notLive(e): "'\(e)' is not a live input (pcm:PATH)"
        case let .noPath(e): "'\(e)' names no input: write pcm:PATH, or pcm:- for standard input"
        case let .badFormat(f):
            "unknown PCM format '\(f)': use \(LiveInput.SampleFormat.allCases.map(\.rawValue).joined(separator: " or "))"
        case let .badRate(r): "PCM rate '\(r)' is not supported: use rate=48000 or rate=44100"
        case let .unknownSetting(s): "unknown PCM input setting '\(s)': use format= and rate="
        case let .badReceiverName(n): "'\(n)' cannot name a receiver: use 1 to 63 bytes on one line"
        }
    }
}

/// A receiver that senders of another protocol play to, run by the coordinator as a child
/// process that writes into a pipe of its own: `librespot:NAME` makes the house a Spotify
/// Connect speaker named NAME (with librespot, which Debian does not package), `airplay:NAME`
/// an AirPlay receiver (with shairport-sync). Live, as a `pcm:` input is: no length, no
/// seeking.
public struct ReceiverEntry: Equatable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case librespot, airplay

        /// What now playing calls its audio.
        public var service: String {
            switch self {
            case .librespot: "Spotify Connect"
            case .airplay: "AirPlay"
            }
        }

        /// The program that receives.
        public var program: String {
            switch self {
            case .librespot: "librespot"
            case .airplay: "shairport-sync"
            }
        }
    }

    public var kind: Kind
    /// The name senders see.
    public var name: String

    public static let defaultName = "tutti"

    public init(kind: Kind, name: String = ReceiverEntry.defaultName) {
        self.kind = kind
        self.name = name
    }

    /// True when a queue entry names a receiver (`librespot:`, `airplay:NAME`...).
    public static func isReceiver(_ entry: String) -> Bool {
        Kind.allCases.contains { entry == $0.rawValue || entry.hasPrefix($0.rawValue + ":") }
    }

    /// Reads `librespot[:NAME]` or `airplay[:NAME]`; a name is 1 to 63 bytes with no control
    /// characters.
    public init(parsing entry: String) throws(LiveInputError) {
        guard let kind = Kind.allCases.first(where: { entry == $0.rawValue || entry.hasPrefix($0.rawValue + ":") }) else {
            throw .notLive(entry)
        }
        let rest = entry.dropFirst(kind.rawValue.count).drop { $0 == ":" }
        let name = rest.isEmpty ? Self.defaultName : String(rest)
        guard name.utf8.count <= 63, !name.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }),
              !name.trimmingSpaces().isEmpty else { throw .badReceiverName(String(rest)) }
        self.init(kind: kind, name: name)
    }

    /// The entry as the queue keeps it.
    public var entry: String { kind.rawValue + ":" + name }

    /// What now playing calls it until its sender says what plays.
    public var title: String { "\(kind.service): \(name)" }
}
