import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Synchronization
import TuttiCore

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

/// The server's connections, shared fairly among the addresses that hold them: one address
/// holds at most `perAddress`, and when all `total` are held a newcomer takes the oldest
/// connection of the address that holds the most (more than one, and more than the
/// newcomer would), which is closed. So strangers that hold every connection they may (8
/// addresses of 16) cannot keep the owner out: the owner's first connection closes one of
/// theirs at once.
final class ConnectionShares: Sendable {
    let perAddress: Int
    let total: Int
    private struct Held {
        var address: String
        var opened: UInt64
        var channel: any Channel
    }
    private let state = Mutex<(held: [ObjectIdentifier: Held], byAddress: [String: Int], next: UInt64)>(([:], [:], 0))

    init(perAddress: Int, total: Int) {
        self.perAddress = perAddress
        self.total = total
    }

    /// Takes a share for `channel` from `address`: false when the address holds its most
    /// already, or every connection is held by addresses holding one each. May close
    /// another address's oldest connection to make room.
    func admit(_ channel: any Channel, from address: String) -> Bool {
        let victim: (any Channel)? = state.withLock { state in
            let mine = state.byAddress[address, default: 0]
            guard mine < perAddress else { return nil as (any Channel)? }
            var evicted: (any Channel)?
            if state.held.count >= total {
                guard let (richest, count) = state.byAddress.max(by: { $0.value < $1.value }), count > max(1, mine + 1),
                      let (key, oldest) = state.held.filter({ $0.value.address == richest }).min(by: { $0.value.opened < $1.value.opened })
                else { return nil }
                state.held[key] = nil
                state.byAddress[richest] = count > 1 ? count - 1 : nil
                evicted = oldest.channel
            }
            state.held[ObjectIdentifier(channel)] = Held(address: address, opened: state.next, channel: channel)
            state.next += 1
            state.byAddress[address] = mine + 1
            return evicted ?? channel  // the channel itself: admitted, nothing to close
        }
        guard let victim else { return false }
        if victim !== channel { victim.close(promise: nil) }
        return true
    }

    func release(_ channel: any Channel) {
        state.withLock { state in
            guard let held = state.held.removeValue(forKey: ObjectIdentifier(channel)) else { return }
            let count = state.byAddress[held.address, default: 1]
            state.byAddress[held.address] = count > 1 ? count - 1 : nil
        }
    }
}

/// Takes a connection's share as it opens (`ConnectionShares`), closing it when its address
/// holds as many as it may; gives it back as it closes.
final class PeerLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let shares: ConnectionShares
    private var channel: (any Channel)?

    init(shares: ConnectionShares) {
        self.shares = shares
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
        guard channel == nil else { return }
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        if shares.admit(context.channel, from: NetworkAddress(parsing: address)?.sender ?? address) {
            channel = context.channel
        } else {
            context.close(promise: nil)
        }
    }

    private func forget() {
        if let channel { shares.release(channel) }
        channel = nil
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
        let address = source.channel.remoteAddress?.ipAddress ?? "?"
        peer = NetworkAddress(parsing: address)?.sender ?? address
    }
}
