import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Synchronization

/// How many of something one address, and all addresses together, may hold open at once:
/// the connections a stranger opens cost their own share, not the house's.
final class PeerLimits: Sendable {
    let perAddress: Int
    let total: Int
    private let open = Mutex<(byAddress: [String: Int], total: Int)>(([:], 0))

    init(perAddress: Int, total: Int = .max) {
        self.perAddress = perAddress
        self.total = total
    }

    /// Takes one for `address`: false when it (or everyone) holds as many as it may.
    func admit(_ address: String) -> Bool {
        open.withLock { open in
            let held = open.byAddress[address, default: 0]
            guard held < perAddress, open.total < total else { return false }
            open.byAddress[address] = held + 1
            open.total += 1
            return true
        }
    }

    func release(_ address: String) {
        open.withLock { open in
            guard let held = open.byAddress[address] else { return }
            open.byAddress[address] = held > 1 ? held - 1 : nil
            open.total -= 1
        }
    }

    func held(by address: String) -> Int { open.withLock { $0.byAddress[address, default: 0] } }
}

/// Closes a connection as it opens when its address already holds as many as it may.
final class PeerLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let limits: PeerLimits
    private var address: String?

    init(limits: PeerLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { register(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        register(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        forget()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forget()
    }

    private func register(_ context: ChannelHandlerContext) {
        guard address == nil else { return }
        let peer = context.channel.remoteAddress?.ipAddress ?? "?"
        if limits.admit(peer) {
            address = peer
        } else {
            context.close(promise: nil)
        }
    }

    private func forget() {
        if let address { limits.release(address) }
        address = nil
    }
}

/// The event stream's request context: the WebSocket's address, for its share of sockets.
struct EventSocketContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let peer: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        peer = source.channel.remoteAddress?.ipAddress ?? "?"
    }
}
