import TuttiCore

/// A test codec whose samples are their own stream positions: frame `k` of the stream
/// decodes to the value `k` (relative to `base`) in both channels. What a follower
/// outputs therefore says exactly which stream position it played, to a fraction of a
/// sample after resampling. Concealment continues the count (perfect concealment).
public final class IndexCodec: FrameDecoder {
    public let base: Int64
    private var next: Int64?
    public private(set) var resets = 0

    public init(base: Int64 = 0) { self.base = base }

    /// A payload for `frames` frames starting at stream position `first`.
    public static func payload(first: Int64, frames: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.appendBigEndianForTests(UInt64(bitPattern: first))
        out.appendBigEndianForTests(UInt64(frames))
        return out
    }

    /// The stream position of a payload's first frame, and how many frames it holds.
    public static func contents(of payload: ArraySlice<UInt8>) -> (first: Int64, frames: Int)? {
        guard payload.count == 16 else { return nil }
        let s = payload.startIndex
        return (Int64(bitPattern: payload[s..<(s + 8)].reduce(0) { $0 << 8 | UInt64($1) }), Int(payload[(s + 8)..<(s + 16)].reduce(0) { $0 << 8 | UInt64($1) }))
    }

    public func decode(_ payload: ArraySlice<UInt8>, into output: inout [Float]) throws -> Int {
        guard let (first, frames) = Self.contents(of: payload) else { throw IndexCodecError.malformed }
        emit(from: first, frames: frames, into: &output)
        return frames
    }

    public func decodeFEC(from nextPayload: ArraySlice<UInt8>, frames: Int, into output: inout [Float]) throws -> Int { 0 }

    public func conceal(frames: Int, into output: inout [Float]) throws -> Int {
        guard let next else { return 0 }
        emit(from: next, frames: frames, into: &output)
        return frames
    }

    public func reset() {
        next = nil
        resets += 1
    }

    private func emit(from first: Int64, frames: Int, into output: inout [Float]) {
        for i in 0..<Int64(frames) {
            let v = Float(first + i - base)
            output.append(v)
            output.append(v)
        }
        next = first + Int64(frames)
    }
}

enum IndexCodecError: Error { case malformed }

extension Array where Element == UInt8 {
    mutating func appendBigEndianForTests(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8((v >> UInt64(shift)) & 0xFF)) }
    }
}
