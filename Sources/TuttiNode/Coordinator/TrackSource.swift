import Foundation
import TuttiCore

/// Expands what the user named (MP3 files, folders, M3U/M3U8 playlists, live inputs) into
/// the ordered list of entries to play. Folders are walked recursively and sorted.
public enum TrackSource {
    public static let audioExtensions: Set<String> = ["mp3", "mp2", "mpga"]

    static func isAudio(_ path: String) -> Bool { audioExtensions.contains((path as NSString).pathExtension.lowercased()) }

    /// What a path names, without following it into a read (a FIFO would block one).
    enum Kind { case missing, folder, file, other(String) }

    static func kind(_ path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .folder
        case S_IFREG: return .file
        case S_IFIFO: return .other("a named pipe")
        case S_IFCHR, S_IFBLK: return .other("a device")
        case S_IFSOCK: return .other("a socket")
        default: return .other("not a regular file")
        }
    }

    /// The tracks `inputs` name, in order. Each must be a folder, a playlist or an audio file
    /// (by its extension), and files must be regular files: a named pipe, a device or any
    /// other file is refused with a clear error, never opened. Playlist entries that are not
    /// regular audio files are left out; missing ones are kept (they fail when their turn
    /// comes, with an event).
    public static func expand(_ inputs: [String]) throws -> [String] {
        var tracks: [String] = []
        for input in inputs {
            if LiveInput.isLive(input) {
                do {
                    tracks.append(try LiveInput(parsing: input).entry)
                } catch {
                    throw SourceError.badLiveInput(error)
                }
                continue
            }
            let ext = (input as NSString).pathExtension.lowercased()
            switch kind(input) {
            case .missing: throw SourceError.missing(input)
            case .folder: tracks += folder(input)
            case let .other(what): throw SourceError.notAFile(input, what)
            case .file where ext == "m3u" || ext == "m3u8": tracks += try playlist(input)
            case .file where isAudio(input): tracks.append(input)
            case .file: throw SourceError.notAudio(input)
            }
        }
        return tracks
    }

    static func folder(_ path: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return [] }
        var found: [String] = []
        while let item = walker.nextObject() as? String {
            let full = (path as NSString).appendingPathComponent(item)
            if isAudio(item), case .file = kind(full) {
                found.append(full)
            }
        }
        return found.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
    }

    /// A playlist's entries (at most 1 MB of it is read).
    static func playlist(_ path: String) throws -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.read(upToCount: 1 << 20) else {
            throw SourceError.unreadable(path)
        }
        try? handle.close()
        let text = String(decoding: data, as: UTF8.self)
        let base = (path as NSString).deletingLastPathComponent
        return PlaylistParser.parse(text, baseDirectory: base.isEmpty ? "." : base).map(\.location).filter { entry in
            switch kind(entry) {
            case .missing: true
            case .file: isAudio(entry)
            case .folder, .other: false
            }
        }
    }
}

public enum SourceError: Error, CustomStringConvertible {
    case missing(String)
    case unreadable(String)
    case notAFile(String, String)
    case notAudio(String)
    case nothingPlayable
    case cannotSeek(String)
    case badLiveInput(LiveInputError)
    public var description: String {
        switch self {
        case let .missing(p): "no such file or folder: \(p)"
        case let .unreadable(p): "cannot read playlist \(p)"
        case let .notAFile(p, what): "\(p) is \(what), not a file: only regular files can be played"
        case let .notAudio(p): "\(p) is not an audio file tutti plays (.mp3, .mp2, .mpga) nor a playlist (.m3u, .m3u8)"
        case .nothingPlayable: "none of the tracks could be played"
        case let .cannotSeek(what): "\(what) is live: it cannot seek"
        case let .badLiveInput(error): error.description
        }
    }
}
