/// What an MP4 (M4A) file says about where its audio starts and ends, read from its boxes:
/// the audio track's edit list (the encoder's priming, and the length of the edit) and the
/// time scales it is counted in. FFmpeg applies the edit list itself but counts its length
/// in the movie's time scale (milliseconds, as FFmpeg writes it), which loses frames; the
/// decoder uses this instead, with the last packet's own duration.
public struct MP4Timing: Equatable, Sendable {
    /// Frames (of the track's media time scale) to drop at the start: the encoder's priming.
    public var priming: Int64
    /// The edit's length in the media's time scale, rounded as the movie's scale rounds it;
    /// nil without an edit list.
    public var editLength: Int64?
    /// How far `editLength` may be off by rounding (one tick of the movie's time scale, in
    /// the media's).
    public var editRounding: Int64
    public var mediaTimeScale: Int64

    /// Reads a byte range of the file: nil when it cannot.
    public typealias Reader = (_ offset: Int64, _ count: Int) -> [UInt8]?

    /// The timing of the first audio track, when the file is an MP4 whose edit list is one
    /// edit of the media (after empty ones, which are ignored) or none; nil for anything else
    /// (not an MP4, no audio track, an edit list that cuts the media into pieces).
    public static func read(size: Int64, reader: Reader) -> MP4Timing? {
        guard let moov = children(of: 0..<size, reader: reader).first(where: { $0.type == "moov" }),
              moov.body.count <= 64 << 20 else { return nil }
        var movieScale: Int64?
        for box in children(of: moov.body, reader: reader) {
            if box.type == "mvhd", let bytes = reader(box.body.lowerBound, 32) { movieScale = timeScale(header: bytes) }
        }
        for trak in children(of: moov.body, reader: reader) where trak.type == "trak" {
            guard let timing = track(trak.body, movieScale: movieScale ?? 1_000, reader: reader) else { continue }
            return timing
        }
        return nil
    }

    struct Box {
        var type: String
        var body: Range<Int64>
    }

    /// The boxes within `range`, at most 4096 of them.
    static func children(of range: Range<Int64>, reader: Reader) -> [Box] {
        var boxes: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound, boxes.count < 4_096 {
            guard let head = reader(offset, 16), head.count >= 8 else { break }
            var size = Int64(be32(head, 0))
            let type = String(decoding: head[4..<8], as: UTF8.self)
            var header: Int64 = 8
            if size == 1 {
                guard head.count >= 16 else { break }
                size = Int64(bitPattern: UInt64(be32(head, 8)) << 32 | UInt64(be32(head, 12)))
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, size <= range.upperBound - offset else { break }
            boxes.append(Box(type: type, body: offset + header..<offset + size))
            offset += size
        }
        return boxes
    }

    /// An audio track's timing; nil when the track is not audio or its edits are not simple.
    static func track(_ body: Range<Int64>, movieScale: Int64, reader: Reader) -> MP4Timing? {
        let boxes = children(of: body, reader: reader)
        guard let mdia = boxes.first(where: { $0.type == "mdia" }) else { return nil }
        let media = children(of: mdia.body, reader: reader)
        guard let hdlr = media.first(where: { $0.type == "hdlr" }), let h = reader(hdlr.body.lowerBound, 12), h.count >= 12,
              String(decoding: h[8..<12], as: UTF8.self) == "soun" else { return nil }
        guard let mdhd = media.first(where: { $0.type == "mdhd" }), let m = reader(mdhd.body.lowerBound, 32),
              let mediaScale = timeScale(header: m), mediaScale > 0, movieScale > 0 else { return nil }
        var timing = MP4Timing(priming: 0, editLength: nil, editRounding: 0, mediaTimeScale: mediaScale)
        guard let edts = boxes.first(where: { $0.type == "edts" }),
              let elst = children(of: edts.body, reader: reader).first(where: { $0.type == "elst" }) else { return timing }
        let length = Int(min(elst.body.count, 1 << 16))
        guard let e = reader(elst.body.lowerBound, length), e.count >= 8 else { return nil }
        let version = e[0]
        let count = Int(be32(e, 4))
        let entrySize = version == 1 ? 20 : 12
        guard count >= 1, 8 + count * entrySize <= e.count else { return nil }
        var edits: [(duration: Int64, time: Int64)] = []
        for i in 0..<count {
            let at = 8 + i * entrySize
            let duration = version == 1 ? Int64(bitPattern: UInt64(be32(e, at)) << 32 | UInt64(be32(e, at + 4))) : Int64(be32(e, at))
            let time = version == 1 ? Int64(bitPattern: UInt64(be32(e, at + 8)) << 32 | UInt64(be32(e, at + 12)))
                : Int64(Int32(bitPattern: be32(e, at + 4)))
            if time == -1 { continue }  // an empty edit
            edits.append((duration, time))
        }
        guard edits.count == 1, edits[0].time >= 0 else { return nil }
        timing.priming = edits[0].time
        // An edit of length 0 runs to the end of the media.
        if edits[0].duration > 0 {
            let (scaled, overflow) = edits[0].duration.multipliedReportingOverflow(by: mediaScale)
            guard !overflow else { return timing }
            timing.editLength = scaled / movieScale
            timing.editRounding = (mediaScale + movieScale - 1) / movieScale
        }
        return timing
    }

    /// The time scale in a full box's header (mvhd, mdhd), version 0 or 1.
    static func timeScale(header b: [UInt8]) -> Int64? {
        guard let version = b.first else { return nil }
        let at = version == 1 ? 20 : 12
        guard b.count >= at + 4 else { return nil }
        return Int64(be32(b, at))
    }

    /// Where the track ends, in media frames after the priming: the packets' own length
    /// (`mediaLength`, the sum of their durations), unless the edit says it ends sooner by
    /// more than its rounding.
    public func end(mediaLength: Int64) -> Int64 {
        let packets = mediaLength - priming
        guard let edit = editLength else { return max(0, packets) }
        return max(0, edit + editRounding < packets ? edit : packets)
    }

    static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard i >= 0, i + 4 <= b.count else { return 0 }
        return UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
}
