import FoundationEssentials
import Glibc
import Synchronization
import TuttiCore

/// A WebSocket client (RFC 6455) on a blocking TCP socket, for one reader thread and one
/// writer at a time: the opening handshake, masked frames out, frames in with pings
/// answered and fragments joined. `ws://` only (a Sendspin session is sealed by Noise).
public final class BlockingWebSocket: @unchecked Sendable {
    /// A `ws://HOST:PORT/PATH` address.
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: UInt16
        public var path: String

        public init?(_ text: String, defaultPort: UInt16 = 80) {
            guard text.hasPrefix("ws://") else { return nil }
            let rest = text.dropFirst(5)
            let authority = rest.prefix { $0 != "/" }
            path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
            if let colon = authority.lastIndex(of: ":") {
                guard let port = UInt16(authority[authority.index(after: colon)...]) else { return nil }
                host = String(authority[..<colon])
                self.port = port
            } else {
                host = String(authority)
                port = defaultPort
            }
            guard !host.isEmpty, path.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        }

        public var description: String { "ws://\(host):\(port)\(path)" }
    }

    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
    }

    private let socket: TCPSocket
    private var buffered: [UInt8] = []
    /// A fragmented message on its way in: its opcode and what came of it.
    private var assembling: (opcode: UInt8, bytes: [UInt8])?
    private let limit: Int
    private let sending = Mutex(())

    /// Connects and upgrades within `timeout` seconds; messages larger than `limit` end it.
    public init(_ address: Address, timeout: Double, limit: Int = 1 << 20) throws(SystemError) {
        let target: SocketAddress
        do {
            target = try SocketAddress(host: address.host, port: address.port)
        } catch {
            throw .unresolved(address.host)
        }
        socket = try TCPSocket(connectingTo: target, timeout: timeout)
        self.limit = limit
        var key = [UInt8](repeating: 0, count: 16)
        for i in key.indices { key[i] = UInt8.random(in: 0...255) }
        let request = "GET \(address.path) HTTP/1.1\r\nHost: \(address.host):\(address.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Data(key).base64EncodedString())\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try socket.sendAll(Array(request.utf8))
        // The answer's head: 101, with the upgrade (what follows it is the first frames').
        var head: [UInt8] = []
        while true {
            let more = try socket.receive()
            if more.isEmpty { throw SystemError(call: "WebSocket upgrade at \(address) (the server closed the connection)", errno: ECONNRESET) }
            head += more
            if let end = Self.endOfHead(head) {
                buffered = Array(head[end...])
                head = Array(head[..<end])
                break
            }
            if head.count > 16 << 10 { throw .tooLarge("WebSocket upgrade at \(address)") }
        }
        let text = String(decoding: head, as: UTF8.self)
        let status = text.prefix { $0 != "\r" }
        guard status.hasPrefix("HTTP/1.1 101"), text.lowercased().contains("upgrade: websocket") else {
            throw SystemError(call: "WebSocket upgrade at \(address) (answered \(status.prefix(80)))", errno: EPROTO)
        }
    }

    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i - 3] == 13 && bytes[i - 2] == 10 && bytes[i - 1] == 13 && bytes[i] == 10 { return i + 1 }
        return nil
    }

    /// Reads wait up to this long (seconds; 0: for ever).
    public func setReadTimeout(_ seconds: Double) { socket.setReadTimeout(seconds) }

    /// Sends one message (any thread; one at a time).
    public func send(_ message: Message) throws(SystemError) {
        let frame: WebSocketFrame = switch message {
        case let .text(text): WebSocketFrame(opcode: WebSocketFrame.text, payload: Array(text.utf8))
        case let .binary(bytes): WebSocketFrame(opcode: WebSocketFrame.binary, payload: bytes)
        }
        try write(frame)
    }

    private func write(_ frame: WebSocketFrame) throws(SystemError) {
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        let bytes = frame.encode(mask: mask)
        let result: Result<Void, SystemError> = sending.withLock { _ in
            do throws(SystemError) { try socket.sendAll(bytes); return .success(()) } catch { return .failure(error) }
        }
        try result.get()
    }

    /// The next message; nil once the server closed. Pings are answered on the way.
    public func receive() throws(SystemError) -> Message? {
        while true {
            let parsed: (frame: WebSocketFrame, length: Int)?
            do {
                parsed = try WebSocketFrame.parse(buffered[...], limit: limit)
            } catch {
                throw SystemError(call: "WebSocket: \(error)", errno: EPROTO)
            }
            guard let (frame, length) = parsed else {
                let more = try socket.receive(limit: 64 << 10)
                if more.isEmpty { return nil }
                buffered += more
                continue
            }
            buffered.removeFirst(length)
            switch frame.opcode {
            case WebSocketFrame.ping:
                try write(WebSocketFrame(opcode: WebSocketFrame.pong, payload: frame.payload))
            case WebSocketFrame.pong:
                break
            case WebSocketFrame.close:
                try? write(WebSocketFrame(opcode: WebSocketFrame.close, payload: Array(frame.payload.prefix(2))))
                return nil
            case WebSocketFrame.continuation:
                guard var whole = assembling else { throw SystemError(call: "WebSocket: a continuation with nothing to continue", errno: EPROTO) }
                whole.bytes += frame.payload
                guard whole.bytes.count <= limit else { throw .tooLarge("WebSocket message") }
                if frame.fin {
                    assembling = nil
                    return Self.message(whole.opcode, whole.bytes)
                }
                assembling = whole
            default:
                guard assembling == nil else { throw SystemError(call: "WebSocket: a new message inside a fragmented one", errno: EPROTO) }
                if frame.fin { return Self.message(frame.opcode, frame.payload) }
                assembling = (frame.opcode, frame.payload)
            }
        }
    }

    private static func message(_ opcode: UInt8, _ bytes: [UInt8]) -> Message {
        opcode == WebSocketFrame.text ? .text(String(decoding: bytes, as: UTF8.self)) : .binary(bytes)
    }

    /// Says goodbye (a close frame) and shuts the connection.
    public func close() {
        try? write(WebSocketFrame(opcode: WebSocketFrame.close, payload: [0x03, 0xE8]))
        shutdown(socket.descriptor, Int32(SHUT_RDWR))
    }
}
