import Foundation
import Glibc
import TuttiCodecs
import TuttiCore

/// Produces 48 kHz interleaved stereo float for the coordinator.
public protocol AudioSource: AnyObject {
    /// Appends frames to `output`; returns how many, 0 when the source has ended, nil when
    /// nothing came within a short wait (a live source that paused: the caller may stop).
    func read(into output: inout [Float]) throws -> Int?
    /// True when the source produces audio in real time itself (a pipe): the coordinator
    /// stamps its frames on arrival instead of pacing them.
    var isLive: Bool { get }
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

    public func read(into output: inout [Float]) throws -> Int? {
        var pfd = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, 100)
        if ready == 0 || (ready < 0 && errno == EINTR) { return nil }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { Glibc.read(handle.fileDescriptor, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR || errno == EAGAIN { return nil }
            throw SourceError.unreadable("the PCM input: \(String(cString: strerror(errno)))")
        }
        if n == 0 { return 0 }
        carry += chunk[0..<n]
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
