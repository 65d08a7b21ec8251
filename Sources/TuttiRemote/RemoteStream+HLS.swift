import AsyncHTTPClient
import Foundation
import NIOCore
import TuttiCore

/// HTTP Live Streaming (RFC 8216): a station served as a playlist of short segments. The
/// download follows the playlist (down from a multivariant playlist to one variant, the
/// best of audio only), appends each segment's bytes to the buffer in order (an
/// initialization section before the first, and again after a discontinuity, where the
/// decoder starts afresh), reloads a live playlist every target duration, and ends a
/// recording with its last segment.
extension RemoteStream {
    /// The answer's playlist text, when the answer is an HLS playlist; nil when it is not one
    /// (a playlist of tracks is refused as a track, as before).
    static func hlsPlaylist(_ answer: RemoteFetcher.Answer, url: String) async throws(RemoteError) -> (text: String, base: String)? {
        let type = answer.contentType
        let path = url.prefix { $0 != "?" && $0 != "#" }.lowercased()
        guard PlaylistParser.Format(contentType: type ?? "") == .m3u || (path.hasSuffix(".m3u8") && RemoteFormats.demuxer(forContentType: type) == nil)
        else { return nil }
        let text: String
        do {
            let body = try await answer.body.collect(upTo: 1 << 20)
            text = String(decoding: body.readableBytesView, as: UTF8.self)
        } catch {
            throw .tooLarge(url: url, limit: 1 << 20)
        }
        guard HLSPlaylist.isHLS(text[...]) else {
            throw .playlistAsTrack(url: url, contentType: type ?? "an M3U playlist")
        }
        return (text, answer.url)
    }

    /// The content type the segment at `url` has, by its extension.
    static func segmentType(_ url: String) -> String {
        let path = url.prefix { $0 != "?" && $0 != "#" }.lowercased()
        if path.hasSuffix(".aac") || path.hasSuffix(".adts") { return "audio/aac" }
        if path.hasSuffix(".mp3") { return "audio/mpeg" }
        if path.hasSuffix(".m4s") || path.hasSuffix(".mp4") || path.hasSuffix(".m4a") || path.hasSuffix(".cmfa") { return "audio/mp4" }
        return "video/mp2t"
    }

    func hls(generation g: Int, playlist first: String, base firstBase: String) async throws(RemoteError) {
        var text = first, base = firstBase
        var media: HLSPlaylist.Media?
        for _ in 0..<4 {
            switch try Self.parse(text, base: base, url: url) {
            case let .multivariant(variants)?:
                guard let next = HLSPlaylist.choose(variants) else { throw .unsupported(url: url, reason: "its HLS playlist names no stream") }
                (text, _, base) = try await fetcher.text(next)
            case let .media(found)?:
                media = found
            case nil:
                throw .unsupported(url: url, reason: "its HLS playlist cannot be read")
            }
            if media != nil { break }
        }
        guard var playlist = media, let firstSegment = playlist.segments.first else {
            throw .unsupported(url: url, reason: "its HLS playlist names no segments")
        }
        if let method = playlist.encryption { throw .unsupported(url: url, reason: "its HLS segments are encrypted (\(method))") }
        let mediaURL = base
        let facts = Facts(size: nil, isLive: !playlist.ended, canSeek: false, station: nil, genre: nil,
                          contentType: Self.segmentType(firstSegment.url), announcedBitRate: nil)
        guard shared.withLock({ s -> Bool in
            guard g == s.generation else { return false }
            s.facts = facts
            s.phase = .buffering
            return true
        }) else { return }
        var next = playlist.segments[playlist.startIndex].sequence
        var mapSent: String?
        while current(g), !Task.isCancelled {
            var fresh = false
            for segment in playlist.segments where segment.sequence >= next {
                guard current(g) else { return }
                let restart = segment.discontinuity || (segment.sequence > next && next > 0)
                if restart {
                    // The decoder starts afresh here (with the initialization section again).
                    shared.withLock { s in if !s.buffer.isEmpty || s.start > 0 { s.junctions.append(s.loadedOffset) } }
                    mapSent = nil
                }
                if let map = segment.map, map != mapSent {
                    try await fetchSegment(map, generation: g)
                    mapSent = map
                }
                do {
                    try await fetchSegment(segment.url, generation: g)
                } catch where !error.isTransient {
                    // A segment the server lost: the next one goes on.
                    if case .status = error {} else { throw error }
                }
                if let title = segment.title {
                    shared.withLock { if g == $0.generation { $0.title = title } }
                }
                next = segment.sequence + 1
                fresh = true
            }
            if playlist.ended {
                finished(g)
                return
            }
            // A live playlist is asked for again after a target duration (`reloadWait`).
            try? await Task.sleep(for: .seconds(playlist.reloadWait(fresh: fresh)))
            guard current(g) else { return }
            let (reloaded, _, reloadedBase) = try await fetcher.text(mediaURL)
            guard case let .media(found)? = try Self.parse(reloaded, base: reloadedBase, url: url) else {
                throw .unsupported(url: url, reason: "its HLS playlist cannot be read")
            }
            playlist = found
            // Fallen behind the window (or the stream started over): from its live edge.
            if let oldest = playlist.segments.first?.sequence, next < oldest || next > (playlist.segments.last?.sequence ?? 0) + 1 {
                next = playlist.segments[playlist.startIndex].sequence
                shared.withLock { $0.junctions.append($0.loadedOffset) }
                mapSent = nil
            }
        }
    }

    /// The playlist `text` says, served at `base` for the stream at `url`; a number in it out
    /// of its range refuses the stream.
    static func parse(_ text: String, base: String, url: String) throws(RemoteError) -> HLSPlaylist? {
        do {
            return try HLSPlaylist.parse(text, base: base)
        } catch {
            throw .unsupported(url: url, reason: error.reason)
        }
    }

    /// Appends a segment's bytes to the buffer as they come.
    private func fetchSegment(_ segment: String, generation g: Int) async throws(RemoteError) {
        let answer = try await fetcher.get(segment)
        do {
            for try await chunk in answer.body {
                guard append(Array(chunk.readableBytesView), metadata: [], generation: g) else { return }
                await waitForSpace(g)
            }
        } catch {
            if Task.isCancelled || !current(g) { return }
            throw RemoteError(error, url: segment)
        }
    }
}
