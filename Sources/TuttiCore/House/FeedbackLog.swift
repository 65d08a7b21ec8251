/// Like, dislike and bookmark, as people leave them on the current track.
public enum FeedbackKind: String, Codable, CaseIterable, Sendable {
    case like, dislike, bookmark
}

public struct FeedbackEntry: Codable, Equatable, Sendable {
    public var id: Int
    public var kind: FeedbackKind
    public var path: String
    public var title: String?
    public var artist: String?
    /// Where in the track (frames), for bookmarks.
    public var position: MediaFrames?
    /// When, in seconds since 1970.
    public var date: Double
}

/// Every like, dislike and bookmark. A track is liked or disliked, not both: a new rating
/// replaces the old one. Bookmarks accumulate.
public struct FeedbackLog: Codable, Equatable, Sendable {
    public private(set) var entries: [FeedbackEntry] = []
    private var nextID = 1

    public init() {}

    @discardableResult
    public mutating func record(_ kind: FeedbackKind, path: String, title: String?, artist: String?,
                                position: MediaFrames?, date: Double) -> FeedbackEntry {
        if kind != .bookmark {
            entries.removeAll { $0.path == path && $0.kind != .bookmark }
        }
        let entry = FeedbackEntry(id: nextID, kind: kind, path: path, title: title, artist: artist,
                                  position: kind == .bookmark ? position : nil, date: date)
        nextID += 1
        entries.append(entry)
        return entry
    }

    public mutating func remove(id: Int) -> Bool {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// The track's rating: like, dislike or none.
    public func rating(path: String) -> FeedbackKind? {
        entries.last { $0.path == path && $0.kind != .bookmark }?.kind
    }
}
