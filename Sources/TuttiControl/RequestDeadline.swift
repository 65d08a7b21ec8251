import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import TuttiAPI

/// Wraps the server's connections so that one whose first request head has not arrived
/// whole within `deadline` is closed: a client that connects and sends nothing (or dribbles
/// a byte now and then) cannot hold a socket open. Hummingbird's idle timeout starts only
/// after a first request, and its connection limit only stops accepting new ones.
struct RequestDeadlineChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let deadline: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let deadline = self.deadline
        return channel.eventLoop.makeCompletedFuture {
            // Last so far: after TLS (it reads plain text), before HTTP's handlers, added next.
            try channel.pipeline.syncOperations.addHandler(FirstRequestDeadline(deadline: deadline))
        }.flatMap { inner.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with the WebSocket upgrade (`webSocketRouter`), each connection closed unless
    /// its first request head arrives within `deadline`.
    static func http1WebSocketUpgrade(
        webSocketRouter: Router<EventSocketContext>, configuration: HTTP1WebSocketUpgradeChannel.Configuration,
        requestDeadline deadline: TimeAmount
    ) -> HTTPServerBuilder {
        let webSocketResponder = webSocketRouter.buildResponder()
        return HTTPServerBuilder { responder in
            RequestDeadlineChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
                deadline: deadline)
        }
    }
}

/// Closes the connection at `deadline` after it opened unless the bytes so far hold a blank
/// line (the end of a request head); then steps out of the pipeline.
final class FirstRequestDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let deadline: TimeAmount
    private var timer: Scheduled<Void>?
    /// The last three bytes read, to find a "\r\n\r\n" split between reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount) {
        self.deadline = deadline
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
        guard timer == nil else { return }
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = tail + Array(unwrapInboundIn(data).readableBytesView)
        let headEnded = bytes.count >= 4 && (0...(bytes.count - 4)).contains { i in
            bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10
        }
        tail = Array(bytes.suffix(3))
        context.fireChannelRead(data)
        if headEnded {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
