import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import HummingbirdWSClient
import Logging
import NIOCore
import ServiceLifecycle

/// The coordinator's Sendspin endpoint: WebSockets upgraded at one path (`/sendspin`), each
/// handed to `handler` as a `WebSocketSession` until either side ends it. Bounded like the
/// control API: at most `maximumConnections` at once, `perAddress` from one address, every
/// request head within 10 s and 16 KiB; a message larger than a sealed Noise frame ends the
/// connection (the WebSocket layer refuses it). What the session says is the handler's
/// (TuttiSendspin); this is only its wire.
public struct SendspinListener: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var path = "/sendspin"
        public var maximumConnections = 64
        public var perAddress = 8
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The largest WebSocket message taken: a Noise frame (65,535 bytes) with room for the
    /// handshake's base64 texts.
    public static let maximumMessage = 96 << 10

    let configuration: Configuration
    let handler: @Sendable (WebSocketSession) async -> Void

    public init(configuration: Configuration, handler: @escaping @Sendable (WebSocketSession) async -> Void) {
        self.configuration = configuration
        self.handler = handler
    }

    /// The endpoint as a ServiceLifecycle service; `onStarted` gets the bound port.
    public func service(onStarted: @escaping @Sendable (Int) -> Void = { _ in }) throws -> any Service {
        let shares = ConnectionShares(perAddress: configuration.perAddress, total: configuration.maximumConnections)
        let router = Router(context: EventSocketContext.self)
        let handler = self.handler
        router.ws(RouterPath(configuration.path)) { _, _ in .upgrade([:]) } onUpgrade: { inbound, outbound, context in
            let messages = inbound.messages(maxSize: Self.maximumMessage).makeAsyncIterator()
            let session = WebSocketSession(peer: context.requestContext.peer, inbound: InboundBox(messages), outbound: outbound)
            await handler(session)
        }
        let http: HTTPServerBuilder = .http1WebSocketUpgrade(
            webSocketRouter: router,
            configuration: .init(http1: .init(additionalChannelHandlers: [RequestParts()], idleTimeout: .seconds(30))),
            requestDeadline: .seconds(10), maximumHeadSize: 16 << 10, shares: shares)
        // Plain HTTP requests to the port get 404: only the WebSocket path is served.
        return Application(
            router: Router(context: ControlContext.self),
            server: http,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "tutti",
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maximumConnections + 16)),
            onServerRunning: { channel in onStarted(channel.localAddress?.port ?? 0) },
            logger: ControlServer.logger)
    }
}

extension SendspinListener {
    /// Connects to a Sendspin player that waits for servers (one that announces
    /// `_sendspin._tcp`) at `url` (`ws://HOST:PORT/PATH`) and hands the connection to
    /// `handler` until it ends; throws when it cannot connect.
    public static func connect(url: String, peer: String, handler: @escaping @Sendable (WebSocketSession) async -> Void) async throws {
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = maximumMessage
        try await WebSocketClient.connect(url: url, configuration: configuration, logger: ControlServer.logger) { inbound, outbound, _ in
            let messages = inbound.messages(maxSize: Self.maximumMessage).makeAsyncIterator()
            await handler(WebSocketSession(peer: peer, inbound: InboundBox(messages), outbound: outbound))
        }
    }
}

/// One WebSocket connection, for a protocol's handler: its peer's address, the messages
/// coming in (`next`: nil once the peer closed), and a writer.
public struct WebSocketSession: Sendable {
    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
    }

    public let peer: String
    let inbound: InboundBox
    let outbound: WebSocketOutboundWriter

    /// The next message; nil when the connection closed. Throws when the peer broke the
    /// WebSocket's rules (a message too large, a bad frame).
    public func next() async throws -> Message? {
        guard let message = try await inbound.next() else { return nil }
        switch message {
        case let .text(text): return .text(text)
        case let .binary(buffer): return .binary(Array(buffer.readableBytesView))
        }
    }

    public func send(_ message: Message) async throws {
        switch message {
        case let .text(text): try await outbound.write(.text(text))
        case let .binary(bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
        }
    }

    /// Ends the connection with a close frame (1000: normal, 1008: policy).
    public func close(code: UInt16 = 1000, reason: String? = nil) async {
        try? await outbound.close(code == 1000 ? .normalClosure : .policyViolation, reason: reason)
    }
}

/// The inbound iterator, used by one task at a time (the session's reader).
final class InboundBox: @unchecked Sendable {
    private var iterator: WebSocketInboundMessageStream.AsyncIterator
    init(_ iterator: WebSocketInboundMessageStream.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> WebSocketMessage? { try await iterator.next() }
}
