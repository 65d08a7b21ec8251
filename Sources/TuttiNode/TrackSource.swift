import Foundation
import TuttiCore

/// Expands what the user named (MP3 files, folders, M3U/M3U8 playlists) into the
/// ordered list of files to play. Folders are walked recursively and sorted.
public enum TrackSource {
    public static let audioExtensions: Set<String> = ["mp3", "mp2", "mpga"]

    public static func expand(_ inputs: [String]) throws -> [String] {
        var tracks: [String] = []
        for input in inputs {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory) else {
                throw SourceError.missing(input)
            }
            let ext = (input as NSString).pathExtension.lowercased()
            if isDirectory.boolValue {
                tracks += folder(input)
            } else if ext == "m3u" || ext == "m3u8" {
                tracks += try playlist(input)
            } else {
                tracks.append(input)
            }
        }
        return tracks
    }

    static func folder(_ path: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return [] }
        var found: [String] = []
        while let item = walker.nextObject() as? String {
            if audioExtensions.contains((item as NSString).pathExtension.lowercased()) {
                found.append((path as NSString).appendingPathComponent(item))
            }
        }
        return found.sorted { $0.localizedStandardCompare($1) == .orderedAscending }
    }

    static func playlist(_ path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw SourceError.unreadable(path) }
        let text = String(decoding: data, as: UTF8.self)
        let base = (path as NSString).deletingLastPathComponent
        return PlaylistParser.parse(text, baseDirectory: base.isEmpty ? "." : base).map(\.location)
    }
}

public enum SourceError: Error, CustomStringConvertible {
    case missing(String)
    case unreadable(String)
    case nothingPlayable
    public var description: String {
        switch self {
        case let .missing(p): "no such file or folder: \(p)"
        case let .unreadable(p): "cannot read playlist \(p)"
        case .nothingPlayable: "none of the tracks could be played"
        }
    }
}
