import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes
import TuttiAPI

/// Wraps the server's connections so that every request head must arrive whole within
/// `deadline` of its first byte (the first one within `deadline` of the connection's
/// opening) and within `maximumSize` bytes: a client that connects and sends nothing,
/// dribbles a byte now and then, or sends a head without end, cannot hold a socket open.
/// Hummingbird's idle timeout runs only between requests, and its connection limit only
/// stops accepting new ones.
struct RequestDeadlineChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let deadline: TimeAmount
    let maximumSize: Int
    let shares: ConnectionShares

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let (deadline, maximumSize, shares) = (self.deadline, self.maximumSize, self.shares)
        return channel.eventLoop.makeCompletedFuture {
            // As the connection opens (the HTTP handlers' own additions come only with its
            // first request head, when it is not a WebSocket upgrade): its address's share
            // first, then its heads, last so far: after TLS (they read plain text), before
            // HTTP's handlers, added next (`RequestParts`, among them, tells where each request
            // after the first ends).
            try channel.pipeline.syncOperations.addHandler(PeerLimitHandler(shares: shares))
            try channel.pipeline.syncOperations.addHandler(RequestHeadLimit(deadline: deadline, maximumSize: maximumSize))
        }.flatMap { inner.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with the WebSocket upgrade (`webSocketRouter`), each request head within
    /// `deadline` and `maximumSize` (`RequestHeadLimit`). `configuration`'s additional
    /// handlers must include a `RequestParts`.
    static func http1WebSocketUpgrade(
        webSocketRouter: Router<EventSocketContext>, configuration: HTTP1WebSocketUpgradeChannel.Configuration,
        requestDeadline deadline: TimeAmount, maximumHeadSize: Int, shares: ConnectionShares
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            RequestDeadlineChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                deadline: deadline, maximumSize: maximumHeadSize, shares: shares)
        }
    }
}

/// Counts the bytes of the request head in progress, from its first byte, and finds its end
/// (a blank line): past `maximumSize` it answers 431 and closes the connection, and at
/// `deadline` it answers 408 and closes it. After a head it counts nothing until
/// `RequestParts`, after HTTP's decoder, says the request ended (a body is not a head); a
/// connection upgraded to a WebSocket never says so, and is its own from then on.
final class RequestHeadLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let deadline: TimeAmount
    let maximumSize: Int
    private var timer: Scheduled<Void>?
    private var inHead = true
    private var size = 0
    private var refused = false
    /// The last three bytes of the head so far, to find a "\r\n\r\n" split between reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount, maximumSize: Int) {
        self.deadline = deadline
        self.maximumSize = maximumSize
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard timer == nil, inHead, !refused else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) {
            let (handler, context) = loopBound.value
            handler.refuse(context, status: "408 Request Timeout")
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard inHead else {
            context.fireChannelRead(data)
            return
        }
        arm(context)
        let buffer = unwrapInboundIn(data)
        let bytes = tail + Array(buffer.readableBytesView)
        let end = bytes.count >= 4 ? (0...(bytes.count - 4)).first { i in
            bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10
        } : nil
        // The head's bytes in this read: up to its blank line, or all of them.
        size += end.map { $0 + 4 - tail.count } ?? buffer.readableBytes
        if size > maximumSize {
            refuse(context, status: "431 Request Header Fields Too Large")
            return
        }
        if end != nil {
            inHead = false
            size = 0
            tail = []
            timer?.cancel()
            timer = nil
        } else {
            tail = Array(bytes.suffix(3))
        }
        context.fireChannelRead(data)
    }

    /// The request ended: the next byte begins a head.
    func requestEnded() {
        inHead = true
        size = 0
        tail = []
    }

    private func refuse(_ context: ChannelHandlerContext, status: String) {
        guard !refused else { return }
        refused = true
        timer?.cancel()
        timer = nil
        let channel = context.channel
        // Nothing of a head came (a silent client, or one that never finished its TLS
        // handshake, where an answer would wait for ever): closed at once.
        guard size > 0 else {
            channel.close(promise: nil)
            return
        }
        // Else answered first (closed with the client's bytes unread, the connection would be
        // reset before the answer is read), and closed in a second whatever the write does.
        let answer = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        context.writeAndFlush(NIOAny(channel.allocator.buffer(string: answer))).whenComplete { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }
}

/// After HTTP's decoder: tells the connection's `RequestHeadLimit` where each request ends.
final class RequestParts: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    private var limit: RequestHeadLimit?

    func handlerAdded(context: ChannelHandlerContext) {
        limit = try? context.pipeline.syncOperations.handler(type: RequestHeadLimit.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { limit?.requestEnded() }
        context.fireChannelRead(data)
    }
}
