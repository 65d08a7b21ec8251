/// Takes the in-band metadata out of an ICY (SHOUTcast/Icecast) stream. A server asked
/// with `Icy-MetaData: 1` answers with `icy-metaint: N` and then interleaves, after every N
/// bytes of audio, one length byte L and L × 16 bytes of text such as
/// `StreamTitle='Artist - Title';StreamUrl='';`, padded with NULs (L = 0: no change).
///
/// Pure: bytes in, audio bytes and metadata out, in any chunking.
public struct IcyDemuxer: Sendable {
    /// Audio bytes between metadata blocks.
    public let interval: Int
    /// Audio bytes left before the next length byte.
    private var audioLeft: Int
    /// The metadata block being read, and how long it is (nil: the length byte is next).
    private var block: [UInt8] = []
    private var blockLength: Int?

    /// `interval` must be positive (servers send a few thousand; at most 1 MB is accepted).
    public init?(interval: Int) {
        guard interval > 0, interval <= 1 << 20 else { return nil }
        self.interval = interval
        audioLeft = interval
    }

    /// Appends the audio bytes of `bytes` to `audio`; returns the metadata blocks completed.
    public mutating func push(_ bytes: some Collection<UInt8>, audio: inout [UInt8]) -> [IcyMetadata] {
        var found: [IcyMetadata] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if audioLeft > 0 {
                let end = bytes.index(index, offsetBy: audioLeft, limitedBy: bytes.endIndex) ?? bytes.endIndex
                audio.append(contentsOf: bytes[index..<end])
                audioLeft -= bytes.distance(from: index, to: end)
                index = end
                continue
            }
            guard let length = blockLength else {
                blockLength = Int(bytes[index]) * 16
                index = bytes.index(after: index)
                if blockLength == 0 { finishBlock(into: &found) }
                continue
            }
            let end = bytes.index(index, offsetBy: length - block.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
            block.append(contentsOf: bytes[index..<end])
            index = end
            if block.count == length { finishBlock(into: &found) }
        }
        return found
    }

    private mutating func finishBlock(into found: inout [IcyMetadata]) {
        if !block.isEmpty { found.append(IcyMetadata(block)) }
        block.removeAll(keepingCapacity: true)
        blockLength = nil
        audioLeft = interval
    }
}

/// One ICY metadata block: `key='value';` pairs, `StreamTitle` the one that matters.
public struct IcyMetadata: Equatable, Sendable {
    public var fields: [String: String]

    public init(fields: [String: String]) { self.fields = fields }

    /// Parses a block's text: values run between `='` and the next `';` (a title may hold
    /// quotes of its own). Trailing NULs are ignored; text that is not UTF-8 is read as
    /// Latin-1, as older servers send it.
    public init(_ bytes: [UInt8]) {
        let trimmed = bytes.prefix { $0 != 0 }
        let text = String(validating: trimmed, as: UTF8.self) ?? String(trimmed.map { Character(Unicode.Scalar($0)) })
        var fields: [String: String] = [:]
        var rest = Substring(text)
        while let equals = rest.firstRange(of: "='") {
            let key = rest[..<equals.lowerBound].trimmingSpaces()
            let valueStart = equals.upperBound
            let close = rest[valueStart...].firstRange(of: "';")
            // An unclosed value runs to the end, less a final quote that is not its opening one
            // (`StreamTitle='` at the very end has an empty value).
            var valueEnd = close?.lowerBound ?? (rest.hasSuffix("'") ? rest.index(before: rest.endIndex) : rest.endIndex)
            if valueEnd < valueStart { valueEnd = valueStart }
            if !key.isEmpty { fields[String(key)] = String(rest[valueStart..<valueEnd]) }
            rest = close.map { rest[$0.upperBound...] } ?? rest[rest.endIndex...]
        }
        self.fields = fields
    }

    /// The live title, as the station sends it (often "Artist - Title"); nil when empty.
    public var streamTitle: String? {
        guard let t = fields["StreamTitle"]?.trimmingSpaces(), !t.isEmpty else { return nil }
        return String(t)
    }

    /// The stream title split into artist and title at the first " - ", when it has one.
    public var artistAndTitle: (artist: String?, title: String)? { streamTitle.flatMap(Self.artistAndTitle) }

    /// A live title split into artist and title at its first " - " (no artist without one);
    /// nil when it is empty.
    public static func artistAndTitle(_ streamTitle: String) -> (artist: String?, title: String)? {
        let t = streamTitle.trimmingSpaces()
        guard !t.isEmpty else { return nil }
        guard let dash = t.firstRange(of: " - ") else { return (nil, t) }
        let artist = t[..<dash.lowerBound].trimmingSpaces(), title = t[dash.upperBound...].trimmingSpaces()
        if artist.isEmpty || title.isEmpty { return (nil, t) }
        return (String(artist), String(title))
    }
}
