import TuttiNet
/// A minimal WebSocket client (RFC 6455) for the control API's event stream: it reads text
/// messages, answers pings, and masks what it sends, as clients must.
public final class WebSocketClient {
    private let connection: TCPConnection
    private var random = SystemRandomNumberGenerator()

    /// Opens `path` on `server` (over TLS when the server's client says so), with `headers`
    /// (the token's `Authorization`, say).
    public init(server: HTTPClient, path: String, headers: [String: String] = [:]) throws(SystemError) {
        let host = server.host, port = server.port
        connection = try server.connect()
        let key = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let extra = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\r\n" }.joined()
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Base64.encode(key))\r\nSec-WebSocket-Version: 13\r\n\(extra)\r\n"
        try connection.write(Array(request.utf8))
        guard let status = try connection.read(until: [13, 10]),
              String(decoding: status, as: UTF8.self).split(separator: " ").dropFirst().first == "101" else {
            throw HTTPClient.malformed("the server did not accept the WebSocket upgrade")
        }
        while let line = try connection.read(until: [13, 10]), line.count > 2 {}
        connection.setReadTimeout(0)
    }

    /// The next text message; nil when the server closes the connection.
    public func nextText() throws(SystemError) -> String? {
        var message: [UInt8] = []
        while true {
            let head = try connection.read(2)
            guard head.count == 2 else { return nil }
            let fin = head[0] & 0x80 != 0
            let opcode = head[0] & 0x0F
            var length = Int(head[1] & 0x7F)
            if length == 126 {
                let b = try connection.read(2)
                length = Int(b[0]) << 8 | Int(b[1])
            } else if length == 127 {
                length = try connection.read(8).reduce(0) { $0 << 8 | Int($1) }
            }
            guard length <= 16 * 1024 * 1024 else { throw HTTPClient.malformed("WebSocket frame too large") }
            let mask = head[1] & 0x80 != 0 ? try connection.read(4) : []
            var payload = try connection.read(length)
            if mask.count == 4 { for i in payload.indices { payload[i] ^= mask[i % 4] } }
            switch opcode {
            case 0x8: return nil  // close
            case 0x9: try send(opcode: 0xA, payload: payload)  // ping → pong
            case 0xA: break
            default:
                message += payload
                if fin { return String(decoding: message, as: UTF8.self) }
            }
        }
    }

    /// Sends a text message.
    public func send(text: String) throws(SystemError) {
        try send(opcode: 0x1, payload: Array(text.utf8))
    }

    /// Says goodbye (a close frame).
    public func close() {
        try? send(opcode: 0x8, payload: [0x03, 0xE8])
    }

    private func send(opcode: UInt8, payload: [UInt8]) throws(SystemError) {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255, using: &random) }
        frame += mask
        frame += payload.enumerated().map { $1 ^ mask[$0 % 4] }
        try connection.write(frame)
    }
}

/// Base64, for the WebSocket handshake key.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
