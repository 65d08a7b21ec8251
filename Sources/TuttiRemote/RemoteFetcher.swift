import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import TuttiCore

/// Asks web servers for audio and playlists: one HTTP client for the process (connection
/// pool, TLS, redirects followed up to 5 times, connect and read timeouts), and errors
/// that say what went wrong in words a user can act on. Where it may ask is its scope
/// (`FetchScope`): before each request, and each redirect, the host's addresses are
/// resolved and checked, a host with one outside the scope is not asked at all, and the
/// request goes to the address checked (`request(for:connectingTo:)`).
public final class RemoteFetcher: Sendable {
    public struct Configuration: Sendable {
        /// From asking to the server's answer (its status line and headers).
        public var answerTimeout: Int64 = 10
        /// Connecting (TCP and TLS), seconds.
        public var connectTimeout: Int64 = 5
        /// Silence from a server in the middle of a body before the connection is given up.
        public var readTimeout: Int64 = 10
        public var maximumRedirects = 5
        public init() {}
    }

    public static let shared = RemoteFetcher(configuration: Configuration())

    let configuration: Configuration
    let client: HTTPClient
    /// Where it may fetch from, and how a host name is resolved to check it (nil: no check,
    /// until the coordinator sets one: `restrict`).
    private let scope = Mutex<(scope: FetchScope, resolve: (@Sendable (String) -> [NetworkAddress]?)?)>((.lan, nil))

    public init(configuration: Configuration) {
        self.configuration = configuration
        var settings = HTTPClient.Configuration(
            // Followed here, each checked against the scope as the URL asked for was.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(configuration.connectTimeout), read: .seconds(configuration.readTimeout)))
        settings.connectionPool.idleTimeout = .seconds(30)
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: settings)
    }

    /// The server's answer to a GET of `url`: its head, its body still to be read.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        /// Where the answer came from, after redirects.
        public var url: String
        public var body: HTTPClientResponse.Body

        public func header(_ name: String) -> String? {
            headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
        }

        public var contentType: String? { header("Content-Type") }
        /// The length the server states, when it is one (`OutsideNumber.bytes`: a length past
        /// a petabyte is none).
        public var contentLength: Int64? { header("Content-Length").flatMap { OutsideNumber.integer($0, in: OutsideNumber.bytes) } }
        /// A range's whole size (`Content-Range: bytes 100-199/5000`), when it is one.
        public var rangeTotal: Int64? {
            header("Content-Range")?.split(separator: "/").last.flatMap { OutsideNumber.integer($0, in: OutsideNumber.bytes) }
        }
    }

    /// From now on, fetches only within `scope`, resolving host names with `resolve` to
    /// check them (the coordinator's `--remote-sources`).
    public func restrict(to scope: FetchScope, resolve: @escaping @Sendable (String) -> [NetworkAddress]?) {
        self.scope.withLock { $0 = (scope, resolve) }
    }

    /// Refuses a URL whose host resolves to an address outside the scope (or not at all);
    /// returns the address checked to connect to (nil: no check, the scope is `any`).
    func admit(_ url: String) async throws(RemoteError) -> NetworkAddress? {
        let (scope, resolve) = self.scope.withLock { $0 }
        guard let resolve, scope != .any else { return nil }
        guard let host = URL(string: url)?.host, !host.isEmpty else { throw .badURL(url) }
        // The system's resolver waits: not on the cooperative pool.
        let addresses = await withCheckedContinuation { (done: CheckedContinuation<[NetworkAddress]?, Never>) in
            DispatchQueue.global().async { done.resume(returning: resolve(host)) }
        }
        guard let addresses, let first = addresses.first else { throw .unreachable(url: url, reason: "unknown host") }
        for address in addresses {
            guard let refusal = scope.refusal(address) else { continue }
            let what = "\(address)" == host ? host : "\(host) (\(address))"
            throw .refused(url: url, reason: "\(what) is \(refusal)", scope: scope)
        }
        return first
    }

    /// The request for `url`, made to connect to `address` (the one checked) and no other: a
    /// name whose answers change between the check and the connection (DNS rebinding)
    /// cannot lead the request elsewhere. For `http://` the URL names the address and the
    /// Host header the name; `https://` keeps the name (TLS checks it in the server's
    /// certificate, which a server the name was rebound to does not have for it).
    static func request(for url: String, connectingTo address: NetworkAddress?) -> HTTPClientRequest {
        guard let address, url.lowercased().hasPrefix("http://"), var parts = URLComponents(string: url),
              let host = parts.host, !host.isEmpty else { return HTTPClientRequest(url: url) }
        let literal = switch address {
        case .v4: "\(address)"
        case .v6: "[\(address)]"
        }
        guard "\(address)" != host, literal != host else { return HTTPClientRequest(url: url) }
        parts.percentEncodedHost = literal
        guard let pinned = parts.string else { return HTTPClientRequest(url: url) }
        var request = HTTPClientRequest(url: pinned)
        request.headers.replaceOrAdd(name: "Host", value: parts.port.map { "\(host):\($0)" } ?? host)
        return request
    }

    /// GETs `url` (bytes from `offset` on, when given), with ICY metadata asked for when
    /// `icy`, following redirects (each one checked against the scope). Throws for a status
    /// that is not a success, naming it.
    public func get(_ url: String, from offset: Int64? = nil, icy: Bool = false) async throws(RemoteError) -> Answer {
        var target = url
        for _ in 0...configuration.maximumRedirects {
            var request = Self.request(for: target, connectingTo: try await admit(target))
            request.headers.add(name: "User-Agent", value: "tutti")
            request.headers.add(name: "Accept", value: "audio/*, application/ogg;q=0.9, */*;q=0.5")
            if icy { request.headers.add(name: "Icy-MetaData", value: "1") }
            if let offset, offset > 0 { request.headers.add(name: "Range", value: "bytes=\(offset)-") }
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: .seconds(configuration.answerTimeout))
            } catch {
                throw RemoteError(error, url: url)
            }
            if [301, 302, 303, 307, 308].contains(response.status.code), let location = response.headers.first(name: "Location") {
                guard let next = URL(string: location, relativeTo: URL(string: target))?.absoluteURL.absoluteString,
                      next.hasPrefix("http://") || next.hasPrefix("https://") else {
                    throw .status(url: url, code: Int(response.status.code), reason: "a redirect to what is not a web address")
                }
                target = next
                continue
            }
            let answer = Answer(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                                url: target, body: response.body)
            guard (200..<300).contains(answer.status) else {
                throw .status(url: url, code: answer.status, reason: response.status.reasonPhrase)
            }
            return answer
        }
        throw .status(url: url, code: 310, reason: "too many redirects")
    }

    /// The text at `url` (a playlist), at most `limit` bytes, with its content type and where
    /// it came from after redirects.
    public func text(_ url: String, limit: Int = 1 << 20) async throws(RemoteError) -> (text: String, contentType: String?, url: String) {
        let answer = try await get(url)
        if let length = answer.contentLength, length > limit { throw .tooLarge(url: url, limit: limit) }
        do {
            let buffer = try await answer.body.collect(upTo: limit)
            return (String(decoding: buffer.readableBytesView, as: UTF8.self), answer.contentType, answer.url)
        } catch let error as NIOTooManyBytesError {
            _ = error
            throw .tooLarge(url: url, limit: limit)
        } catch {
            throw RemoteError(error, url: url)
        }
    }
}

/// Why a remote source could not be had.
public enum RemoteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with a status that is not a success (404 and the like).
    case status(url: String, code: Int, reason: String)
    /// No connection: the host is unknown, refuses, or does not answer.
    case unreachable(url: String, reason: String)
    /// TLS failed (a certificate not trusted, a handshake refused).
    case tls(url: String, reason: String)
    /// The server went silent.
    case timedOut(url: String)
    /// The server says it sends something that is not audio tutti plays.
    case notAudio(url: String, contentType: String)
    /// A playlist queued as a track: its URL does not say it is one.
    case playlistAsTrack(url: String, contentType: String)
    /// A playlist larger than tutti reads.
    case tooLarge(url: String, limit: Int)
    /// The URL cannot be asked for.
    case badURL(String)
    /// The connection kept dropping: given up after so many tries.
    case gaveUp(url: String, attempts: Int, last: String)
    /// A stream of a kind tutti does not play (encrypted HLS, an HLS playlist with nothing in it).
    case unsupported(url: String, reason: String)
    /// Its host is outside where the coordinator fetches from (`FetchScope`).
    case refused(url: String, reason: String, scope: FetchScope)

    public var description: String {
        switch self {
        case let .status(url, code, reason): "\(url): the server answered \(code) \(reason)"
        case let .unreachable(url, reason): "\(url): cannot connect: \(reason)"
        case let .tls(url, reason): "\(url): TLS failed: \(reason)"
        case let .timedOut(url): "\(url): the server did not answer in time"
        case let .notAudio(url, type): "\(url) is \(type), not audio tutti plays nor a playlist"
        case let .playlistAsTrack(url, type):
            "\(url) is a playlist (\(type)): tutti expands playlists whose URL ends in .m3u, .m3u8 or .pls"
        case let .tooLarge(url, limit): "\(url) is larger than \(limit / 1024) kB: not a playlist tutti reads"
        case let .badURL(url): "\(url) is not a URL tutti can ask for (http:// or https://)"
        case let .gaveUp(url, attempts, last): "\(url): lost the connection and could not get it back in \(attempts) tries (\(last))"
        case let .unsupported(url, reason): "\(url) cannot be played: \(reason)"
        case let .refused(url, reason, scope):
            "\(url): not fetched: \(reason), outside where this coordinator fetches from (--remote-sources \(scope.rawValue))"
        }
    }

    /// Whether asking again could help (a dropped or refused connection, a server error,
    /// silence), as opposed to an answer that will not change (404, not audio, TLS).
    public var isTransient: Bool {
        switch self {
        case .unreachable, .timedOut, .gaveUp: true
        case let .status(_, code, _): code >= 500 || code == 408 || code == 429
        case .tls, .notAudio, .playlistAsTrack, .tooLarge, .badURL, .unsupported, .refused: false
        }
    }

    init(_ error: any Error, url: String) {
        if let known = error as? RemoteError {
            self = known
            return
        }
        let text = String(describing: error)
        if let client = error as? HTTPClientError {
            if [.connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout].contains(client) {
                self = .timedOut(url: url)
            } else if [.invalidURL, .emptyHost, .emptyScheme].contains(client) || text.contains("unsupportedScheme") {
                self = .badURL(url)
            } else if [.redirectCycleDetected, .redirectLimitReached].contains(client) {
                self = .status(url: url, code: 310, reason: "too many redirects")
            } else {
                self = .unreachable(url: url, reason: text)
            }
            return
        }
        if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") || text.contains("handshake") {
            self = .tls(url: url, reason: text)
        } else if text.localizedCaseInsensitiveContains("timeout") || text.localizedCaseInsensitiveContains("timed out") {
            self = .timedOut(url: url)
        } else {
            self = .unreachable(url: url, reason: Self.plain(text))
        }
    }

    /// NIO's errors in fewer words: "connection refused", "unknown host".
    static func plain(_ text: String) -> String {
        if text.contains("ECONNREFUSED") || text.localizedCaseInsensitiveContains("connection refused") { return "connection refused" }
        if text.contains("NXDOMAIN") || text.localizedCaseInsensitiveContains("lookup") || text.contains("getaddrinfo") {
            return "unknown host"
        }
        if text.contains("ENETUNREACH") || text.contains("EHOSTUNREACH") { return "no route to host" }
        return text
    }
}
