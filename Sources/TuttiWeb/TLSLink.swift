import TuttiNet
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// How a client checks the control API's certificate over HTTPS.
public enum TLSTrust: Sendable {
    /// The system's certificate authorities, and the server's name or address.
    case system
    /// The certificates in this PEM file as the only authorities (the server's self-signed
    /// certificate itself will do), and the server's name or address.
    case authorities(file: String)
    /// The server's public key, whoever signed its certificate: `matches` gets the key as a
    /// DER SubjectPublicKeyInfo; `pin` names the key that is expected, for messages.
    case publicKey(pin: String, matches: @Sendable ([UInt8]) -> Bool)
    /// Any certificate: only for an exchange that authenticates itself (pairing, whose
    /// messages are proved with the code), where TLS adds only privacy.
    case any
}

/// One TLS connection over a connected TCP socket, for the blocking clients: NIOSSL runs
/// the handshake and the records on NIO's event loop, and the caller's thread waits for
/// bytes in an `Inbox`.
final class TLSLink: @unchecked Sendable {
    private let channel: any Channel
    private let inbox: TLSInbox

    /// Takes over `socket`'s descriptor (closed with the link) and completes the
    /// handshake within `timeout` seconds.
    init(socket: TCPSocket, host: String, port: UInt16, trust: TLSTrust, timeout: Double) throws(SystemError) {
        let inbox = TLSInbox(trust: trust)
        let (configuration, verify) = Self.configuration(trust, inbox: inbox)
        let sslContext: NIOSSLContext
        do {
            sslContext = try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSLink.failure("cannot set up TLS (\(error))")
        }
        let serverName = TLSLink.isAddress(host) ? nil : host
        do {
            channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = if let verify {
                            try NIOSSLClientHandler(context: sslContext, serverHostname: serverName, customVerificationCallback: verify)
                        } else {
                            try NIOSSLClientHandler(context: sslContext, serverHostname: serverName)
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                        try channel.pipeline.syncOperations.addHandler(inbox)
                    }
                }
                .withConnectedSocket(socket.release()).wait()
        } catch {
            // Not closed here: NIO may own the descriptor already (and have closed it), and a
            // second close could hit one the event loop opened since. A failing client exits.
            throw TLSLink.failure("cannot start TLS with \(host):\(port) (\(error))")
        }
        self.inbox = inbox
        do throws(SystemError) {
            try inbox.waitForHandshake(timeout: timeout, peer: "\(host):\(port)")
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    deinit { channel.close(promise: nil) }

    /// NIOSSL's settings for `trust`, and the check of a pinned key (which tells `inbox` why
    /// it refused).
    private static func configuration(_ trust: TLSTrust, inbox: TLSInbox)
        -> (TLSConfiguration, (@Sendable ([NIOSSLCertificate], EventLoopPromise<NIOSSLVerificationResult>) -> Void)?) {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch trust {
        case .system:
            return (configuration, nil)
        case let .authorities(file):
            configuration.trustRoots = .file(file)
            return (configuration, nil)
        case let .publicKey(pin, matches):
            configuration.certificateVerification = .noHostnameVerification
            return (configuration, { certificates, promise in
                let key = try? certificates.first?.extractPublicKey().toSPKIBytes()
                if let key, matches(key) {
                    promise.succeed(.certificateVerified)
                } else {
                    inbox.refuse("the server's certificate is not the pinned one (\(pin)); check --tls-pin")
                    promise.succeed(.failed)
                }
            })
        case .any:
            configuration.certificateVerification = .none
            return (configuration, nil)
        }
    }

    func send(_ bytes: [UInt8]) throws(SystemError) {
        do {
            try channel.writeAndFlush(ByteBuffer(bytes: bytes)).wait()
        } catch {
            throw inbox.failure ?? TLSLink.failure("TLS send failed (\(error))")
        }
    }

    /// The next bytes that arrived; empty at the end of the stream.
    func receive(timeout: Double) throws(SystemError) -> [UInt8] {
        try inbox.next(timeout: timeout)
    }

    static func failure(_ what: String) -> SystemError { .tls(what) }

    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// The end of the pipeline: decrypted bytes, the handshake's completion and any error,
/// handed from the event loop to the waiting thread.
final class TLSInbox: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private struct Received {
        var chunks: [[UInt8]] = []
        var handshaken = false
        var ended = false
        var refusal: String?
        var error: (any Error)?
    }
    private let received = Inbox(Received())
    private let trust: TLSTrust

    init(trust: TLSTrust) {
        self.trust = trust
    }

    /// Why the connection failed, in words, if it did.
    var failure: SystemError? {
        received.withLock { describeFailure($0) }
    }

    func refuse(_ why: String) {
        received.withLock { $0.refusal = why }
    }

    func waitForHandshake(timeout: Double, peer: String) throws(SystemError) {
        let failure = received.wait(timeout: Int64(timeout * 1e9), until: { $0.handshaken || $0.ended }) { r, ready -> SystemError? in
            if !ready { return .timedOut("TLS handshake with \(peer)") }
            if !r.handshaken { return describeFailure(r) ?? TLSLink.failure("TLS handshake with \(peer) (the server closed the connection)") }
            return nil
        }
        if let failure { throw failure }
    }

    func next(timeout: Double) throws(SystemError) -> [UInt8] {
        let taken = received.wait(timeout: timeout > 0 ? Int64(timeout * 1e9) : nil, until: { !$0.chunks.isEmpty || $0.ended }) {
            r, ready -> Result<[UInt8], SystemError> in
            if !ready { return .failure(.timedOut("read")) }
            if !r.chunks.isEmpty { return .success(r.chunks.removeFirst()) }
            if let failure = describeFailure(r) { return .failure(failure) }
            return .success([])
        }
        return try taken.get()
    }

    private func describeFailure(_ received: Received) -> SystemError? {
        if let refusal = received.refusal { return TLSLink.failure(refusal) }
        if let error = received.error {
            if case NIOSSLError.uncleanShutdown = error { return nil }
            if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
                let whose = if case let .authorities(file) = trust { "the certificates in \(file)" } else { "this machine's certificate authorities" }
                return TLSLink.failure("the server's certificate is not signed by \(whose), or not for this name or address; "
                                       + "pass --tls-pin with the pin the coordinator logs, or --tls-ca with its certificate")
            }
            return TLSLink.failure("TLS failed (\(error))")
        }
        return nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(unwrapInboundIn(data).readableBytesView)
        received.post { $0.chunks.append(bytes) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            received.post { $0.handshaken = true }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        received.post { if $0.error == nil { $0.error = error } }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.post { $0.ended = true }
        context.fireChannelInactive()
    }
}
