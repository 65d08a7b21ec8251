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

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let (deadline, maximumSize) = (self.deadline, self.maximumSize)
        return channel.eventLoop.makeCompletedFuture {
            // Last so far: after TLS (it reads plain text), before HTTP's handlers, added next
            // (`RequestParts`, among them, tells it where each head ends and each request does).
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
        requestDeadline deadline: TimeAmount, maximumHeadSize: Int
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            RequestDeadlineChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                deadline: deadline, maximumSize: maximumHeadSize)
        }
    }
}

/// Counts the bytes of the request head in progress, from its first byte: past
/// `maximumSize` it answers 431 and closes the connection, and at `deadline` it answers 408
/// and closes it. Between a head's end and its request's end (a body) it counts nothing;
/// `RequestParts`, after HTTP's decoder, tells it where those are.
final class RequestHeadLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let deadline: TimeAmount
    let maximumSize: Int
    private var timer: Scheduled<Void>?
    private var inHead = true
    private var size = 0
    private var refused = false

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
        guard timer == nil, !refused else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) {
            let (handler, context) = loopBound.value
            handler.refuse(context, status: "408 Request Timeout")
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if inHead {
            arm(context)
            size += unwrapInboundIn(data).readableBytes
            if size > maximumSize {
                refuse(context, status: "431 Request Header Fields Too Large")
                return
            }
        }
        context.fireChannelRead(data)
    }

    /// The head in progress ended (HTTP's decoder made it a request).
    func headEnded() {
        inHead = false
        size = 0
        timer?.cancel()
        timer = nil
    }

    /// The request ended: the next byte begins a head.
    func requestEnded() {
        inHead = true
        size = 0
    }

    private func refuse(_ context: ChannelHandlerContext, status: String) {
        guard !refused else { return }
        refused = true
        timer?.cancel()
        timer = nil
        let answer = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: answer))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

/// After HTTP's decoder: tells the connection's `RequestHeadLimit` where each request's head
/// ends and where the request does.
final class RequestParts: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    private var limit: RequestHeadLimit?

    func handlerAdded(context: ChannelHandlerContext) {
        limit = try? context.pipeline.syncOperations.handler(type: RequestHeadLimit.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: limit?.headEnded()
        case .end: limit?.requestEnded()
        case .body: break
        }
        context.fireChannelRead(data)
    }
}
