import TuttiCore
import TuttiMedia

/// Reads files as the coordinator plays them: decoded by FFmpeg, through the player's chain
/// (ReplayGain, then 48 kHz), one after the other without a seam, as an album plays. For
/// `tutti decode`, and for tests that need what the rooms should hear.
public final class TrackReader {
    private let chain: SourceChain

    public init(replayGain: ReplayGain = ReplayGain()) {
        chain = SourceChain(replayGain: replayGain)
    }

    /// Decodes `paths` in turn, handing each piece of 48 kHz interleaved stereo to `take`
    /// (which may stop the reading by returning false).
    public func read(_ paths: [String], take: ([Float]) throws -> Bool) throws {
        var pcm: [Float] = []
        for path in paths {
            let source = try FileSource(path: path)
            while let n = try chain.read(source, into: &pcm), n > 0 {
                guard try take(pcm) else { return }
                pcm.removeAll(keepingCapacity: true)
            }
        }
        try chain.finish(into: &pcm)
        if !pcm.isEmpty { _ = try take(pcm) }
    }

    /// The whole of `paths`, as one signal.
    public static func decode(_ paths: [String], replayGain: ReplayGain = ReplayGain(), maximumFrames: Int = .max) throws -> [Float] {
        var all: [Float] = []
        try TrackReader(replayGain: replayGain).read(paths) { piece in
            all += piece
            return all.count / 2 < maximumFrames
        }
        return all.count / 2 > maximumFrames ? Array(all.prefix(maximumFrames * 2)) : all
    }
}
