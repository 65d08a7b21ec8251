/// The receiver's decode stage: the jitter buffer's slots in order, into the sample queue.
/// A packet is decoded into its slot (from its timestamp to the next packet's); a missing
/// one is rebuilt from the next packet's in-band FEC where it carried it, else concealed
/// (Opus PLC), at most `maximumConcealment` frames in a row before silence; with nothing
/// buffered at all (the stream stopped coming) the first missing frame is concealed and
/// faded out, then silence, counted in `dryFrames` until the engine calls it an outage.
/// Each packet is decoded by its payload type's decoder (a zone's codec, `StreamCodec`);
/// the one that decoded last conceals what is missing.
struct FrameDecoding {
    /// The decoders, by payload type.
    let decoders: [UInt8: any FrameDecoder]
    /// The one that decoded last, and its payload type.
    private(set) var decoder: any FrameDecoder
    private var decoderType: UInt8
    let maximumConcealment: Int
    /// Frames of the last packet decoded: what a missing one is taken to hold.
    var lastFrameCount = 960
    var concealedInARow = 0
    /// Frames since the jitter buffer ran dry (the stream stopped coming).
    var dryFrames = 0

    /// `decoders`: one at least.
    init(decoders: [UInt8: any FrameDecoder], maximumConcealment: Int) {
        precondition(!decoders.isEmpty, "a receiver decodes some payload type")
        self.decoders = decoders
        let first = decoders.keys.min()!
        decoderType = first
        decoder = decoders[first]!
        self.maximumConcealment = maximumConcealment
    }

    /// A new start (or a stop): the decoders' state and the counts of what was missing.
    mutating func reset() {
        for decoder in decoders.values { decoder.reset() }
        concealedInARow = 0
        dryFrames = 0
    }

    /// Decodes from `jitter` until `queue` reaches `timestamp`.
    mutating func fill(until timestamp: Int64, from jitter: inout JitterBuffer, into queue: inout SampleQueue,
                       statistics: inout PlayoutStatistics) {
        while queue.end < timestamp {
            switch jitter.pop() {
            case let .packet(p):
                if p.timestamp > queue.end {  // a gap the jitter buffer could not see
                    conceal(Int(min(p.timestamp - queue.end, Int64(maximumConcealment))), into: &queue, statistics: &statistics)
                }
                let from = queue.end
                decode(p, next: jitter.packet(p.sequence + 1), into: &queue, statistics: &statistics)
                if dryFrames > 0 { queue.fadeIn(from: from) }  // back after a faded-out gap
                dryFrames = 0
            case let .missing(_, following):
                dryFrames = 0
                statistics.lost += 1
                if let following, recoverFEC(following, into: &queue, statistics: &statistics) { continue }
                conceal(lastFrameCount, into: &queue, statistics: &statistics)
            case .empty:
                // Nothing buffered at all: the stream has stopped coming. The first missing
                // frame is concealed and faded out; after that, silence, until playback stops.
                if dryFrames == 0 {
                    let from = queue.end
                    conceal(lastFrameCount, into: &queue, statistics: &statistics)
                    queue.fadeOut(from: from)
                } else {
                    queue.appendSilence(frames: lastFrameCount)
                }
                dryFrames += lastFrameCount
            }
        }
    }

    /// Decodes a packet into its slot of the stream: from its timestamp to the next packet's.
    /// A frame that decodes longer (one packet may carry 120 ms) is cut there and counted as
    /// malformed: kept whole, it pushed everything after it later (a forged 46-byte packet
    /// left a room 101.6 ms behind while it measured no error at all).
    private mutating func decode(_ p: BufferedPacket, next: BufferedPacket?, into queue: inout SampleQueue,
                                 statistics: inout PlayoutStatistics) {
        if queue.end > p.timestamp, p.timestamp >= queue.start { queue.truncate(from: p.timestamp) }
        if p.payloadType != decoderType, let other = decoders[p.payloadType] {
            // The stream changed codec (a room moved to a zone of another): that codec's
            // decoder, from a clean state.
            decoder = other
            decoderType = p.payloadType
            other.reset()
        }
        do {
            let from = queue.end
            var n = try queue.append { try decoder.decode(p.payload, into: &$0) }
            if let next, next.timestamp > p.timestamp, n > Int(next.timestamp - p.timestamp) {
                n = Int(next.timestamp - p.timestamp)
                queue.truncate(from: from + Int64(n))
                statistics.malformed += 1
            }
            if n > 0 { lastFrameCount = n }
            concealedInARow = 0
        } catch {
            statistics.decodeErrors += 1
            conceal(lastFrameCount, into: &queue, statistics: &statistics)
        }
    }

    private mutating func recoverFEC(_ following: BufferedPacket, into queue: inout SampleQueue, statistics: inout PlayoutStatistics) -> Bool {
        guard following.payloadType == decoderType else { return false }
        let frames = lastFrameCount
        let n = (try? queue.append { try decoder.decodeFEC(from: following.payload, frames: frames, into: &$0) }) ?? 0
        if n > 0 {
            statistics.recoveredByFEC += 1
            concealedInARow = 0
            return true
        }
        return false
    }

    private mutating func conceal(_ frames: Int, into queue: inout SampleQueue, statistics: inout PlayoutStatistics) {
        statistics.concealments += 1
        if concealedInARow < maximumConcealment,
           let n = try? queue.append({ try decoder.conceal(frames: frames, into: &$0) }), n > 0 {
            statistics.concealedFrames += n
            concealedInARow += n
        } else {
            queue.appendSilence(frames: frames)
            statistics.silenceFrames += frames
        }
    }
}
