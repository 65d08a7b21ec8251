import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOSSL
import ServiceLifecycle
import TuttiAPI
import TuttiCore

/// The coordinator's control API: HTTP + JSON under `/api/v1`, the WebSocket event stream
/// at `/api/v1/events`, and the web pages. Reads are open; changes need the house token
/// (`Authorization: Bearer TOKEN`). Every endpoint is in docs/api.md.
public final class ControlServer: Sendable {
    public struct Configuration: Sendable {
        public var host = "0.0.0.0"
        public var port = 8485
        /// Web pages served as they are: path → (content type, bytes).
        public var pages: [String: Page] = [:]
        /// Connections open at once; when all are held, a newcomer takes one from the address
        /// holding the most (`ConnectionShares`).
        public var maximumConnections = 128
        /// Connections one address (an IPv6 /64) may hold open at once; more are closed as they open.
        public var connectionsPerAddress = 16
        /// The names it answers to (its addresses, localhost, this machine's names, and those
        /// given): any other is refused, so a rebound DNS name reads nothing.
        public var hostNames = HostNames()
        /// Event streams (WebSockets) open at once, and from one address.
        public var maximumEventStreams = 64
        public var eventStreamsPerAddress = 8
        /// Event streams opened with the token or a ticket: a budget of their own.
        public var maximumOwnerEventStreams = 32
        /// HTTPS (and WSS) with this certificate chain and private key (PEM), when set.
        public var tls: TLSIdentity?
        /// `/metrics`: the Prometheus exposition and its content type, when set.
        public var metrics: (@Sendable () async -> (contentType: String, body: [UInt8]))?
        /// The music library (`/api/v1/library`, queueing by id), when the coordinator has one.
        public var library: (any LibraryService)?
        public init() {}
    }

    /// A certificate chain and its private key, PEM.
    public struct TLSIdentity: Sendable {
        public var certificateChainPEM: String
        public var privateKeyPEM: String
        public init(certificateChainPEM: String, privateKeyPEM: String) {
            self.certificateChainPEM = certificateChainPEM
            self.privateKeyPEM = privateKeyPEM
        }

        func serverConfiguration() throws -> TLSConfiguration {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8)).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            return configuration
        }
    }

    public struct Page: Sendable {
        public var contentType: String
        public var body: [UInt8]
        public init(contentType: String, body: [UInt8]) {
            self.contentType = contentType
            self.body = body
        }
    }

    let service: any ControlService
    let configuration: Configuration
    let gate: TokenGate
    /// Each address's share of the connections, and of the event streams.
    let connections: ConnectionShares
    let eventStreams: PeerLimits
    /// Those opened with the token or a ticket (`EventTickets`).
    let ownerStreams: PeerLimits
    let tickets = EventTickets()

    public init(service: any ControlService, configuration: Configuration) {
        self.service = service
        self.configuration = configuration
        gate = TokenGate(service: service)
        connections = ConnectionShares(perAddress: configuration.connectionsPerAddress, total: configuration.maximumConnections)
        eventStreams = PeerLimits(perAddress: configuration.eventStreamsPerAddress, total: configuration.maximumEventStreams)
        ownerStreams = PeerLimits(perAddress: configuration.eventStreamsPerAddress, total: configuration.maximumOwnerEventStreams)
    }

    /// The server as a ServiceLifecycle service, for the caller's service group (whose
    /// graceful shutdown stops it: open connections finish, the listener closes). Calls
    /// `onStarted` with the bound port once listening.
    public func service(onStarted: @escaping @Sendable (Int) -> Void = { _ in }) throws -> any Service {
        // Bounded: at most `maximumConnections` open at once (file descriptors are the house's,
        // for its files and sockets too), shared fairly among addresses (`ConnectionShares`:
        // at most `connectionsPerAddress` from one, and a newcomer takes the oldest of the
        // address holding the most when all are held); every request head within 10 s of its
        // first byte and 16 KiB (`RequestHeadLimit`); an idle keep-alive connection closed
        // after 30 s. (With TLS the handshake counts towards the first request's deadline.)
        let shares = self.connections
        let http: HTTPServerBuilder = .http1WebSocketUpgrade(
            webSocketRouter: makeEventRouter(),
            configuration: .init(http1: .init(additionalChannelHandlers: [RequestParts()], idleTimeout: .seconds(30))),
            requestDeadline: .seconds(10), maximumHeadSize: 16 << 10, shares: shares)
        return Application(
            router: makeRouter(),
            server: try configuration.tls.map { try .tls(http, tlsConfiguration: try $0.serverConfiguration()) } ?? http,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "tutti",
                                 // Room beyond the shares for connections evicted and still closing.
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maximumConnections + 64)),
            onServerRunning: { channel in onStarted(channel.localAddress?.port ?? 0) },
            logger: Self.logger)
    }

    /// Hummingbird's own messages, only with TUTTI_DEBUG=1.
    static var logger: Logger {
        var logger = Logger(label: "tutti.control")
        logger.logLevel = ProcessInfo.processInfo.environment["TUTTI_DEBUG"] == "1" ? .debug : .critical
        return logger
    }

    // MARK: - Routes

    func makeRouter() -> Router<ControlContext> {
        let router = Router(context: ControlContext.self)
        // Requests, errors and durations by route, to swift-metrics (docs/metrics.md); the
        // errors are counted as answered (the error middleware inside turns them into answers).
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: OriginHeadersMiddleware())
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: HostNamesMiddleware(names: configuration.hostNames))
        let service = self.service
        if let metrics = configuration.metrics {
            router.get("/metrics") { _, _ in
                let (type, body) = await metrics()
                return Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
                                body: .init(byteBuffer: ByteBuffer(bytes: body)))
            }
        }
        var pages = WebPages.all
        pages.merge(configuration.pages) { _, given in given }
        for (path, page) in pages {
            router.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: [.contentType: page.contentType, .cacheControl: "no-cache"],
                         body: .init(byteBuffer: ByteBuffer(bytes: page.body)))
            }
        }
        let api = router.group("api/v1")
        let gate = self.gate
        // What plays is per zone: today's paths are the default zone's, the same under
        // /zones/{zone}/ a zone's.
        for group in [api, api.group("zones/:zone")] {
            ZoneReadRoutes.add(to: group, service: service, gate: gate)
            TransportRoutes.add(to: group, service: service, gate: gate)
            QueueRoutes.add(to: group, service: service, library: configuration.library, gate: gate)
        }
        // Open to read; whole file paths only with the token (`Redaction`).
        api.get("rooms") { _, _ in await service.rooms() }
        api.get("feedback") { request, context in gate.shown(await service.feedback(), request, context) }
        api.get("replaygain") { _, _ in await service.replayGain() }
        HouseRoutes.add(to: api, service: service, gate: gate)
        let tickets = self.tickets
        api.post("events/ticket") { request, context -> EventTicket in
            try gate.authorize(request, context)
            return EventTicket(ticket: tickets.issue(), expiresInSeconds: Int(EventTickets.lifetime / 1_000_000_000))
        }
        ZoneRoutes.add(to: api, service: service, gate: gate)
        LibraryRoutes.add(to: api, library: configuration.library, gate: gate)
        return router
    }

    /// The token of an `Authorization: Bearer TOKEN` header.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst(7))
    }

    func makeEventRouter() -> Router<EventSocketContext> {
        let router = Router(context: EventSocketContext.self)
        let service = self.service
        let streams = eventStreams, owners = ownerStreams, tickets = self.tickets
        let names = configuration.hostNames
        for path in ["/api/v1/events", "/api/v1/zones/:zone/events"] {
        router.ws(RouterPath(path), shouldUpgrade: { request, context in
            // Only the coordinator's own pages (or clients that are not browsers), by one of its
            // own names, and only while the address has event streams to spare in its budget:
            // the house's own (the token, or a ticket) or the open one.
            let owner = Self.bearer(request.headers[.authorization]).map(service.authorizes) ?? false
                || tickets.isValid(request.uri.queryParameters.get("ticket"))
            let budget = owner ? owners : streams
            guard names.allows(request.head.authority),
                  SameOrigin.allows(origin: request.headers[.origin], host: request.head.authority),
                  budget.held(by: context.peer) < budget.perAddress else { return .dontUpgrade }
            return .upgrade([:])
        }) { inbound, outbound, context in
            // Counted while it is open: one address holds at most its share, all of them the total.
            let request = context.request
            let owner = Self.bearer(request.headers[.authorization]).map(service.authorizes) ?? false
                || tickets.take(request.uri.queryParameters.get("ticket"))
            let budget = owner ? owners : streams
            let peer = context.requestContext.peer
            guard budget.admit(peer) else { return }
            defer { budget.release(peer) }
            // A zone's events: /zones/{zone}/events, or ?zone=NAME; else the default zone's.
            let zone = context.requestContext.parameters.get("zone")?.removingPercentEncoding
                ?? context.request.uri.queryParameters.get("zone")
            guard let events = try? await service.subscribe(zone: zone) else { return }
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    // Until the client goes away; it may ask the time (screens lock their clocks).
                    for try await message in inbound.messages(maxSize: 4_096) {
                        guard case let .text(text) = message, JSONNesting.isShallow(text),
                              var exchange = try? JSONDecoder().decode(TimeExchange.self, from: Data(text.utf8)),
                              exchange.type == "time" else { continue }
                        exchange.t2 = service.coordinatorTime()
                        exchange.t3 = service.coordinatorTime()
                        try await outbound.write(.text(String(decoding: try JSONEncoder().encode(exchange), as: UTF8.self)))
                    }
                }
                tasks.addTask {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = .sortedKeys
                    for await event in events {
                        // Browsers cannot send the token on a WebSocket: file names only.
                        try await outbound.write(.text(String(decoding: try encoder.encode(event.withoutFolders), as: UTF8.self)))
                    }
                }
                try await tasks.next()
                tasks.cancelAll()
            }
        }
        }
        return router
    }
}

/// The request context: bodies are small JSON documents, so anything over 64 KiB is refused.
public struct ControlContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Whom the request comes from, for the token gate and pairing: its address (no port),
    /// an IPv6 address's /64 (`NetworkAddress.sender`).
    public let peer: String
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let address = source.channel.remoteAddress?.ipAddress ?? "?"
        peer = NetworkAddress(parsing: address)?.sender ?? address
    }
    public var maxUploadSize: Int { 64 * 1024 }
}
