import Foundation
import TuttiCodecs
import TuttiCore

/// Produces 48 kHz interleaved stereo float for the coordinator.
public protocol AudioSource: AnyObject {
    /// Appends frames to `output`; returns how many, 0 when the source has ended.
    func read(into output: inout [Float]) throws -> Int
    /// True when the source produces audio in real time itself (a pipe): the coordinator
    /// stamps its frames on arrival instead of pacing them.
    var isLive: Bool { get }
}

/// Plays MP3 files in order (looping when asked). A file that cannot be opened or
/// decoded is reported by name and skipped; the next one plays.
public final class PlaylistSource: AudioSource {
    private let tracks: [String]
    private let loop: Bool
    private var index = 0
    private var decoder: MP3Decoder?
    private var failuresInARow = 0
    private let log = Log("coordinator")
    public var isLive: Bool { false }
    /// Called with the track's path whenever a new track starts.
    public var onTrackStart: ((String) -> Void)?

    public init(tracks: [String], loop: Bool) {
        self.tracks = tracks
        self.loop = loop
    }

    public func read(into output: inout [Float]) throws -> Int {
        while true {
            if decoder == nil {
                if index >= tracks.count {
                    guard loop, !tracks.isEmpty else { return 0 }
                    index = 0
                }
                if failuresInARow >= tracks.count { throw SourceError.nothingPlayable }
                let path = tracks[index]
                index += 1
                do {
                    decoder = try MP3Decoder(path: path)
                    log.info("playing \(path)")
                    onTrackStart?(path)
                } catch {
                    log.error("\(error); skipping to the next track")
                    failuresInARow += 1
                    continue
                }
            }
            do {
                let n = try decoder!.read(into: &output)
                if n > 0 {
                    failuresInARow = 0
                    return n
                }
            } catch {
                log.error("\(error); skipping to the next track")
                if decoder!.framesDecoded == 0 { failuresInARow += 1 }
            }
            decoder = nil
        }
    }
}

/// Raw PCM from a pipe or file: signed 16-bit little-endian, 48 kHz, stereo.
public final class RawPCMSource: AudioSource {
    private let handle: FileHandle
    private var carry: [UInt8] = []
    public var isLive: Bool { true }

    public init(path: String) throws {
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let h = FileHandle(forReadingAtPath: path) else { throw SourceError.missing(path) }
            handle = h
        }
    }

    public func read(into output: inout [Float]) throws -> Int {
        let data = handle.availableData
        if data.isEmpty { return 0 }
        carry += data
        let frames = carry.count / 4
        carry.withUnsafeBytes { raw in
            for i in 0..<(frames * 2) {
                let v = Int16(bitPattern: UInt16(raw[i * 2]) | UInt16(raw[i * 2 + 1]) << 8)
                output.append(Float(v) / 32768)
            }
        }
        carry.removeFirst(frames * 4)
        return frames
    }
}
