import FoundationEssentials

/// A player's audio chunk, as Sendspin sends it (binary type 4): a 13-byte big-endian header,
/// the type, the server-clock microsecond at which the chunk's first sample is to be heard,
/// and `send_ahead` (microseconds from sending to that instant, saturated to 32 bits: a
/// player's view of how much lead the path leaves), then the encoded audio. The header as the
/// reference implementation packs it (aiosendspin's `>BqI`).
public struct SendspinAudioChunk: Equatable, Sendable {
    public static let type: UInt8 = 4
    public static let headerSize = 13

    /// Server-clock microseconds at which the first sample is heard.
    public var timestamp: Int64
    /// Microseconds from sending to `timestamp` (0 when late, 2³² − 1 at most).
    public var sendAhead: UInt32
    public var payload: [UInt8]

    public init(timestamp: Int64, sendAhead: UInt32, payload: [UInt8]) {
        self.timestamp = timestamp
        self.sendAhead = sendAhead
        self.payload = payload
    }

    /// The chunk for `timestamp` sent at `now` (both server-clock microseconds).
    public init(timestamp: Int64, sentAt now: Int64, payload: [UInt8]) {
        self.init(timestamp: timestamp, sendAhead: UInt32(clamping: max(0, timestamp - now)), payload: payload)
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.type]
        out.reserveCapacity(Self.headerSize + payload.count)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: timestamp) >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: sendAhead >> UInt32(shift))) }
        return out + payload
    }

    /// Nil for anything but an audio chunk with its whole header.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= Self.headerSize, bytes[0] == Self.type else { return nil }
        timestamp = Int64(bitPattern: bytes[1..<9].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        sendAhead = bytes[9..<13].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        payload = Array(bytes[13...])
    }
}

/// Sendspin's `pcm` codec: little-endian two's-complement integers, interleaved, 24-bit
/// samples packed in 3 bytes (the spec's convention). Floats are clipped to [-1, 1) and
/// rounded to the nearest step.
public enum SendspinPCM {
    /// The bit depths a player may ask for.
    public static let depths = [16, 24, 32]

    public static func encode(_ samples: [Float], bitDepth: Int) -> [UInt8] {
        precondition(depths.contains(bitDepth))
        let width = bitDepth / 8
        let scale = Double(1 << (bitDepth - 1))
        let top = scale - 1
        var out = [UInt8](repeating: 0, count: samples.count * width)
        for (i, sample) in samples.enumerated() {
            let value = Int64(min(max((Double(sample) * scale).rounded(), -scale), top))
            for byte in 0..<width { out[i * width + byte] = UInt8(truncatingIfNeeded: value >> Int64(8 * byte)) }
        }
        return out
    }

    /// Samples back from `bytes` (a trailing part sample is ignored).
    public static func decode(_ bytes: [UInt8], bitDepth: Int) -> [Float] {
        precondition(depths.contains(bitDepth))
        let width = bitDepth / 8
        let scale = Float(Double(1 << (bitDepth - 1)))
        return (0..<(bytes.count / width)).map { i in
            var value: Int64 = 0
            for byte in 0..<width { value |= Int64(bytes[i * width + byte]) << Int64(8 * byte) }
            let shift = Int64(64 - bitDepth)
            return Float((value << shift) >> shift) / scale
        }
    }
}

/// The server's side of Sendspin's clock exchange: a `client/time` answered with the client's
/// stamp and the server's receive and send instants, in microseconds of the server's clock
/// (for tutti, the house's coordinator clock).
public enum SendspinTime {
    public static func reply(clientTransmitted: Int64, received: Int64, transmitted: Int64) -> String {
        #"{"payload":{"client_transmitted":\#(clientTransmitted),"server_received":\#(received),"server_transmitted":\#(transmitted)},"type":"server/time"}"#
    }

    /// The client's stamp of a `client/time` text, or nil for anything else.
    public static func clientTransmitted(in text: String) -> Int64? {
        struct Payload: Decodable { let client_transmitted: Int64 }
        struct Message: Decodable { let type: String; let payload: Payload }
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)), message.type == "client/time" else { return nil }
        return message.payload.client_transmitted
    }
}
