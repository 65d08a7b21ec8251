/// The parts of PulseAudio's native protocol a playback client speaks (the protocol
/// PulseAudio and pipewire-pulse serve on their socket; docs/architecture.md, "Sound
/// servers"). A frame is a 20-byte descriptor, five big-endian words (length, channel,
/// offset high, offset low, flags), then its payload: a command, as a tag structure, on
/// channel 0xFFFFFFFF; audio on the stream's channel.
enum PulseProtocol {
    /// The version this client speaks: 32 (PulseAudio 10), without shared memory.
    static let version: UInt32 = 32
    static let commandChannel: UInt32 = 0xFFFF_FFFF
    static let descriptorSize = 20
    /// The largest frame accepted from the server (its own limit is 16 MB; a playback
    /// client receives only commands, a few hundred bytes each).
    static let largestFrame = 1 << 20
    /// The audio a data frame carries at most (the server's memory blocks are 64 kB).
    static let largestBlock = 65_536
    static let cookieLength = 256

    /// The commands used here, with the protocol's numbers.
    enum Command: UInt32 {
        case error = 0, reply = 2
        case createPlaybackStream = 3, deletePlaybackStream = 4, auth = 8, setClientName = 9
        case getPlaybackLatency = 14, corkPlaybackStream = 41, flushPlaybackStream = 42
        case request = 61, overflow = 62, underflow = 63, playbackStreamKilled = 64
        case playbackStreamSuspended = 76, playbackStreamMoved = 78, started = 86
        case playbackStreamEvent = 92, playbackBufferAttrChanged = 94
    }

    /// The server's error codes (`pa_error_code_t`), in words.
    static func describe(error code: UInt32) -> String {
        let words = ["OK", "Access denied", "Unknown command", "Invalid argument", "Entity exists", "No such entity",
                     "Connection refused", "Protocol error", "Timeout", "No authentication key", "Internal error",
                     "Connection terminated", "Entity killed", "Invalid server", "Module initialization failed",
                     "Bad state", "No data", "Incompatible protocol version", "Too large", "Not supported",
                     "Unknown error code", "No such extension", "Obsolete functionality", "Missing implementation",
                     "Client forked", "Input/Output error", "Device or resource busy"]
        return Int(code) < words.count ? words[Int(code)] : "error \(code)"
    }
}

/// A malformed frame or tag structure from the server: the connection cannot go on.
struct PulseProtocolError: Error, CustomStringConvertible {
    var description: String
}

/// Writes a tag structure: each value after a one-byte tag naming its type.
struct PulseTagWriter {
    private(set) var bytes: [UInt8] = []

    init(command: PulseProtocol.Command, tag: UInt32) {
        u32(command.rawValue)
        u32(tag)
    }

    mutating func u32(_ v: UInt32) {
        bytes.append(UInt8(ascii: "L"))
        raw32(v)
    }

    mutating func bool(_ v: Bool) { bytes.append(UInt8(ascii: v ? "1" : "0")) }

    mutating func u8(_ v: UInt8) { bytes += [UInt8(ascii: "B"), v] }

    /// A string, or the null string.
    mutating func string(_ s: String?) {
        guard let s else { return bytes.append(UInt8(ascii: "N")) }
        bytes.append(UInt8(ascii: "t"))
        bytes += s.utf8
        bytes.append(0)
    }

    mutating func arbitrary(_ data: [UInt8]) {
        bytes.append(UInt8(ascii: "x"))
        raw32(UInt32(data.count))
        bytes += data
    }

    /// Format (5: 32-bit float, little-endian), channels and rate.
    mutating func sampleSpec(format: UInt8, channels: UInt8, rate: UInt32) {
        bytes += [UInt8(ascii: "a"), format, channels]
        raw32(rate)
    }

    mutating func channelMap(_ positions: [UInt8]) {
        bytes += [UInt8(ascii: "m"), UInt8(positions.count)] + positions
    }

    mutating func volumes(_ values: [UInt32]) {
        bytes += [UInt8(ascii: "v"), UInt8(values.count)]
        for v in values { raw32(v) }
    }

    /// Properties with string values (each stored with its terminating NUL, as the
    /// server's own do).
    mutating func properties(_ entries: [(String, String)]) {
        bytes.append(UInt8(ascii: "P"))
        for (key, value) in entries {
            string(key)
            let data = Array(value.utf8) + [0]
            u32(UInt32(data.count))
            arbitrary(data)
        }
        string(nil)
    }

    mutating func timeval(seconds: UInt32, microseconds: UInt32) {
        bytes.append(UInt8(ascii: "T"))
        raw32(seconds)
        raw32(microseconds)
    }

    private mutating func raw32(_ v: UInt32) {
        bytes += [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
}

/// Reads a tag structure, checking every tag and length against what is left.
struct PulseTagReader {
    private let bytes: [UInt8]
    private var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { at == bytes.count }

    mutating func u32() throws(PulseProtocolError) -> UInt32 {
        try expect("L")
        return try raw32()
    }

    mutating func u64() throws(PulseProtocolError) -> UInt64 {
        try expect("R", or: "U")
        return try raw64()
    }

    mutating func s64() throws(PulseProtocolError) -> Int64 {
        try expect("r")
        return Int64(bitPattern: try raw64())
    }

    mutating func bool() throws(PulseProtocolError) -> Bool {
        let tag = try byte()
        guard tag == UInt8(ascii: "1") || tag == UInt8(ascii: "0") else { throw mismatch("boolean", tag) }
        return tag == UInt8(ascii: "1")
    }

    /// A string, or nil for the null string.
    mutating func string() throws(PulseProtocolError) -> String? {
        let tag = try byte()
        if tag == UInt8(ascii: "N") { return nil }
        guard tag == UInt8(ascii: "t") else { throw mismatch("string", tag) }
        guard let end = bytes[at...].firstIndex(of: 0) else { throw PulseProtocolError(description: "an unterminated string") }
        defer { at = end + 1 }
        return String(decoding: bytes[at..<end], as: UTF8.self)
    }

    /// Seconds and microseconds.
    mutating func timeval() throws(PulseProtocolError) -> (seconds: UInt32, microseconds: UInt32) {
        try expect("T")
        return (try raw32(), try raw32())
    }

    /// Properties, with their values as text (values that are not text are left out).
    mutating func properties() throws(PulseProtocolError) -> [String: String] {
        try expect("P")
        var entries: [String: String] = [:]
        while let key = try string() {
            let length = try u32()
            try expect("x")
            let count = try raw32()
            guard count == length else { throw PulseProtocolError(description: "a property's lengths disagree") }
            let data = try take(Int(clamping: count))
            entries[key] = String(decoding: data.last == 0 ? data.dropLast() : data[...], as: UTF8.self)
        }
        return entries
    }

    /// Steps over the next value, whatever its type (for fields this client does not use).
    mutating func skip() throws(PulseProtocolError) {
        let tag = try byte()
        switch UnicodeScalar(tag) {
        case "L", "V": _ = try take(4)
        case "B": _ = try take(1)
        case "R", "r", "U", "T": _ = try take(8)
        case "1", "0", "N": break
        case "a": _ = try take(6)
        case "t":
            at -= 1
            _ = try string()
        case "x": _ = try take(Int(clamping: try raw32()))
        case "m": _ = try take(Int(try byte()))
        case "v": _ = try take(Int(try byte()) * 4)
        case "P":
            at -= 1
            _ = try properties()
        case "f":
            try expect("B")
            _ = try take(1)
            _ = try properties()
        default: throw PulseProtocolError(description: "an unknown tag \(tag)")
        }
    }

    private mutating func expect(_ tag: UnicodeScalar, or other: UnicodeScalar? = nil) throws(PulseProtocolError) {
        let got = try byte()
        guard got == UInt8(tag.value) || other.map({ got == UInt8($0.value) }) == true else { throw mismatch(String(tag), got) }
    }

    private func mismatch(_ wanted: String, _ got: UInt8) -> PulseProtocolError {
        PulseProtocolError(description: "expected a \(wanted) tag, found \(got)")
    }

    private mutating func take(_ n: Int) throws(PulseProtocolError) -> ArraySlice<UInt8> {
        guard n >= 0, n <= bytes.count - at else { throw PulseProtocolError(description: "a tag structure ends early") }
        defer { at += n }
        return bytes[at..<at + n]
    }

    private mutating func byte() throws(PulseProtocolError) -> UInt8 {
        guard at < bytes.count else { throw PulseProtocolError(description: "a tag structure ends early") }
        defer { at += 1 }
        return bytes[at]
    }

    private mutating func raw32() throws(PulseProtocolError) -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    private mutating func raw64() throws(PulseProtocolError) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// Cuts the bytes arriving from the server into frames; holds an incomplete one until the
/// rest comes.
struct PulseFrameReader {
    struct Frame {
        var channel: UInt32
        var payload: [UInt8]
    }

    private var pending: [UInt8] = []
    private var start = 0

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 {  // what is left is part of one frame at most
            pending.removeSubrange(0..<start)
            start = 0
        }
        pending.append(contentsOf: bytes)
    }

    /// The next whole frame, nil until one has arrived. Throws on a frame no server sends
    /// (larger than `PulseProtocol.largestFrame`).
    mutating func next() throws(PulseProtocolError) -> Frame? {
        let available = pending.count - start
        guard available >= PulseProtocol.descriptorSize else { return nil }
        let length = Int(word(0))
        guard length <= PulseProtocol.largestFrame else {
            throw PulseProtocolError(description: "a frame of \(length) bytes (at most \(PulseProtocol.largestFrame) are accepted)")
        }
        guard available >= PulseProtocol.descriptorSize + length else { return nil }
        let body = start + PulseProtocol.descriptorSize
        let frame = Frame(channel: word(1), payload: Array(pending[body..<body + length]))
        start = body + length
        if start == pending.count {
            pending.removeAll(keepingCapacity: true)
            start = 0
        }
        return frame
    }

    private func word(_ i: Int) -> UInt32 {
        let o = start + 4 * i
        return UInt32(pending[o]) << 24 | UInt32(pending[o + 1]) << 16 | UInt32(pending[o + 2]) << 8 | UInt32(pending[o + 3])
    }

    /// Appends the descriptor of a frame of `length` payload bytes on `channel` (offset 0,
    /// flags 0: for audio, a write relative to the last).
    static func appendDescriptor(length: Int, channel: UInt32, to out: inout [UInt8]) {
        func word(_ v: UInt32) {
            out.append(UInt8(v >> 24))
            out.append(UInt8(truncatingIfNeeded: v >> 16))
            out.append(UInt8(truncatingIfNeeded: v >> 8))
            out.append(UInt8(truncatingIfNeeded: v))
        }
        word(UInt32(length))
        word(channel)
        out.append(contentsOf: repeatElement(0, count: 12))
    }
}

/// Where a client finds its sound server and the key it proves itself with, as
/// PulseAudio's own client library looks for them (its client.conf and the X11 root
/// window's properties are not read).
struct PulseServerLocation {
    /// The sockets to try, in order: `PULSE_SERVER`'s local entries ("unix:PATH" or
    /// "PATH"; network servers are left out) when it is set, else the user's server
    /// (`PULSE_RUNTIME_PATH`, or `XDG_RUNTIME_DIR`/pulse) and then the system-wide one.
    static func sockets(environment: (String) -> String?) -> [String] {
        if let servers = environment("PULSE_SERVER"), !servers.allSatisfy(\.isWhitespace) {
            return servers.split(whereSeparator: \.isWhitespace).compactMap { entry in
                // "{machine-id}unix:..." names the machine the entry is for; this one is assumed.
                var s = Substring(entry)
                if s.hasPrefix("{"), let close = s.firstIndex(of: "}") { s = s[s.index(after: close)...] }
                if s.hasPrefix("unix:") { return String(s.dropFirst(5)) }
                return s.hasPrefix("/") ? String(s) : nil
            }
        }
        var found: [String] = []
        if let runtime = environment("PULSE_RUNTIME_PATH") {
            found.append(runtime + "/native")
        } else if let runtime = environment("XDG_RUNTIME_DIR") {
            found.append(runtime + "/pulse/native")
        }
        found.append("/var/run/pulse/native")
        return found
    }

    /// The files that may hold the authentication cookie, in order.
    static func cookieFiles(environment: (String) -> String?, home: String) -> [String] {
        if let file = environment("PULSE_COOKIE") { return [file] }
        let config = environment("XDG_CONFIG_HOME") ?? home + "/.config"
        return [config + "/pulse/cookie", home + "/.config/pulse/cookie", home + "/.pulse-cookie"]
    }
}
