/// A WebSocket frame (RFC 6455 §5.2): what a client sends (masked) and reads (unmasked).
/// Pure: `encode` makes one, `parse` reads one off the front of what arrived so far.
public struct WebSocketFrame: Equatable, Sendable {
    public static let continuation: UInt8 = 0x0
    public static let text: UInt8 = 0x1
    public static let binary: UInt8 = 0x2
    public static let close: UInt8 = 0x8
    public static let ping: UInt8 = 0x9
    public static let pong: UInt8 = 0xA

    public var fin: Bool
    public var opcode: UInt8
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: UInt8, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }

    /// Why a frame was refused: the connection ends.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case tooLarge(UInt64)
        case masked
        case reserved(UInt8)
        case badControl

        public var description: String {
            switch self {
            case let .tooLarge(size): "a WebSocket frame of \(size) bytes"
            case .masked: "a masked WebSocket frame from the server"
            case let .reserved(bits): "a WebSocket frame with reserved bits or opcode \(bits)"
            case .badControl: "a fragmented or oversized WebSocket control frame"
            }
        }
    }

    /// The frame's bytes; a client's are masked with `mask` (4 bytes), a server's not (nil).
    public func encode(mask: [UInt8]?) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out += [maskBit | 126, UInt8(count >> 8), UInt8(count & 0xFF)]
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift))) }
        }
        guard let mask, mask.count == 4 else { return out + payload }
        out += mask
        out.reserveCapacity(out.count + count)
        for (i, byte) in payload.enumerated() { out.append(byte ^ mask[i & 3]) }
        return out
    }

    /// The first frame of `bytes` and how many bytes it took, or nil when it has not all
    /// arrived. A server's frames are unmasked; none may be larger than `limit`.
    public static func parse(_ bytes: ArraySlice<UInt8>, limit: Int) throws(Failure) -> (frame: WebSocketFrame, length: Int)? {
        guard bytes.count >= 2 else { return nil }
        let start = bytes.startIndex
        let first = bytes[start], second = bytes[start + 1]
        guard first & 0x70 == 0 else { throw .reserved(first & 0x70) }
        let opcode = first & 0x0F
        guard [continuation, text, binary, close, ping, pong].contains(opcode) else { throw .reserved(opcode) }
        guard second & 0x80 == 0 else { throw .masked }
        var size = UInt64(second & 0x7F)
        var header = 2
        if size == 126 {
            guard bytes.count >= 4 else { return nil }
            size = UInt64(bytes[start + 2]) << 8 | UInt64(bytes[start + 3])
            header = 4
        } else if size == 127 {
            guard bytes.count >= 10 else { return nil }
            size = bytes[(start + 2)..<(start + 10)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            header = 10
        }
        let fin = first & 0x80 != 0
        if opcode >= close, !fin || size > 125 { throw .badControl }
        guard size <= UInt64(limit) else { throw .tooLarge(size) }
        guard bytes.count >= header + Int(size) else { return nil }
        let payload = Array(bytes[(start + header)..<(start + header + Int(size))])
        return (WebSocketFrame(fin: fin, opcode: opcode, payload: payload), header + Int(size))
    }
}
