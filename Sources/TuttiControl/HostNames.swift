import Foundation
import Hummingbird
import TuttiAPI
import TuttiNet

/// The names the control API answers to: its addresses (any IP literal), `localhost`, this
/// machine's host name (as the system gives it, alone, with `.local` as mDNS names it, and
/// under the suffixes no public DNS serves, which home routers give theirs: `.lan`, `.home`,
/// `.internal`, `.home.arpa`) and the names its owner gives (`--allow-host`, for a router's
/// own domain such as `.fritz.box`: `.box` is a public top-level domain, where anyone may
/// register `kitchen.box` and point it at the house). A request for any other name is refused: a page of another site
/// whose name an attacker points at the coordinator's address (DNS rebinding) reaches it
/// by that name, and must learn nothing.
public struct HostNames: Sendable {
    private let names: Set<String>

    /// - Parameter extra: names the coordinator is reached by besides its own (a DNS name).
    public init(hostName: String = ProcessInfo.processInfo.hostName, extra: [String] = []) {
        var names: Set<String> = ["localhost", "localhost.localdomain"]
        let short = hostName.lowercased().split(separator: ".").first.map(String.init) ?? ""
        let local = Self.localSuffixes.map { short + "." + $0 }
        for name in [hostName.lowercased(), short] + local + extra.map({ $0.lowercased() }) where !name.isEmpty && !name.hasPrefix(".") {
            names.insert(Self.trimmed(name))
        }
        self.names = names
    }

    /// The domains of a house's own network: mDNS's, and those home routers serve.
    static let localSuffixes = ["local", "lan", "home", "home.arpa", "internal"]

    /// Whether a request's `Host` (name or address, with or without its port) is one of
    /// this coordinator's; a request without one (HTTP/1.0) is let in.
    public func allows(_ host: String?) -> Bool {
        guard let host, !host.isEmpty else { return true }
        let name = Self.name(of: host)
        return SocketAddress.isLiteral(name) || names.contains(Self.trimmed(name))
    }

    /// The host part of a `Host` value: `[::1]:8485` → `::1`, `Kitchen.local:8485` → `kitchen.local`.
    static func name(of host: String) -> String {
        let lower = host.lowercased()
        if lower.hasPrefix("["), let end = lower.firstIndex(of: "]") { return String(lower[lower.index(after: lower.startIndex)..<end]) }
        if lower.filter({ $0 == ":" }).count == 1, let colon = lower.firstIndex(of: ":") { return String(lower[..<colon]) }
        return lower
    }

    static func trimmed(_ name: String) -> String { name.hasSuffix(".") ? String(name.dropLast()) : name }
}

/// Refuses requests for a name that is not the coordinator's (`421 Misdirected Request`).
struct HostNamesMiddleware: RouterMiddleware {
    let names: HostNames

    func handle(_ request: Request, context: ControlContext,
                next: (Request, ControlContext) async throws -> Response) async throws -> Response {
        guard names.allows(request.head.authority) else {
            throw ControlError(status: 421, "this coordinator does not answer to the name '\(request.head.authority ?? "")': "
                               + "use its address, its host name, or start it with --allow-host NAME")
        }
        return try await next(request, context)
    }
}
