import ArgumentParser
import Foundation
import TuttiAPI
import TuttiConfig
import TuttiCore
import TuttiNet
import TuttiNode
import TuttiWeb

/// Options every `tutti ctl` command shares: where the coordinator is, and its token.
struct CtlOptions: ParsableArguments {
    @Option(help: "The coordinator's control API, http://HOST:PORT or https://HOST:PORT (default: $TUTTI_SERVER; else http://127.0.0.1:8485 on the coordinator's own machine; else the coordinator announced on the network).")
    var server: String?

    @OptionGroup var tls: TLSOptions

    @OptionGroup var configFile: ConfigFileOption

    @Option(help: "The house token (default: $TUTTI_TOKEN, else the token file in the coordinator's state folder).")
    var token: String?

    @Option(help: "The coordinator's state folder, to read the token from (default: as the coordinator's).")
    var stateDir: String?

    @Flag(help: "Print JSON, for scripts.")
    var json = false

    @Option(help: "The zone a command is for, by name or id (default: the default zone): `tutti ctl --zone Kitchen play`.")
    var zone: String?

    func client() throws -> CtlClient {
        let environment = ProcessInfo.processInfo.environment
        let folder = stateDir ?? StateStore.defaultDirectory()
        let token = token ?? environment["TUTTI_TOKEN"] ?? StateStore.readToken(directory: folder)
        let url = try Discovered.controlURL(server: server, token: token, stateDirectory: folder, clock: CtlCommand.clock)
        let http = try tls.client(url: url, stateDirectory: folder)
        return CtlClient(http: http, token: token, url: url, zone: zone)
    }
}

/// A refused or failed call, printed as `error: ...` with a non-zero exit.
struct CtlFailure: Error, CustomStringConvertible {
    var description: String
    /// The coordinator's answer, when it refused.
    var status: Int? = nil
}

/// Talks to the control API: JSON in and out, errors turned into messages.
struct CtlClient {
    let http: HTTPClient
    let token: String?
    let url: String
    /// The zone the per-zone calls are for (nil: the default zone, today's paths).
    var zone: String?

    /// What a zone plays: these paths are the zone's, under `/zones/{zone}` (and
    /// `POST /feedback`, on what it plays).
    static let zonePaths = ["/status", "/now-playing", "/queue", "/transport/", "/loop", "/volume", "/lyrics", "/artwork/"]

    /// `path` for the zone this client is for.
    func zoned(_ method: String, _ path: String) -> String {
        guard let zone, Self.zonePaths.contains(where: { path.hasPrefix($0) }) || (method == "POST" && path == "/feedback") else { return path }
        return "/zones/\(percentEncoded(zone))\(path)"
    }

    func get<T: Decodable>(_ path: String, as type: T.Type) throws -> T {
        try decode(T.self, from: call("GET", path))
    }

    @discardableResult
    func send<T: Decodable>(_ method: String, _ path: String, body: (any Encodable)? = nil, as type: T.Type) throws -> T {
        try decode(T.self, from: call(method, path, body: body))
    }

    func send(_ method: String, _ path: String, body: (any Encodable)? = nil) throws {
        _ = try call(method, path, body: body)
    }

    /// `raw`: a body sent as it is (`application/octet-stream`) instead of `body`'s JSON;
    /// `timeout`: seconds to wait for the answer, when the call takes longer than most.
    func call(_ method: String, _ path: String, body: (any Encodable)? = nil, raw: [UInt8]? = nil, timeout: Double? = nil) throws -> [UInt8] {
        var headers: [String: String] = raw == nil ? [:] : ["Content-Type": "application/octet-stream"]
        var http = http
        if let timeout { http.timeout = timeout }
        if method != "GET", token == nil {
            throw CtlFailure(description: "this command changes the house and needs its token: pass --token, set TUTTI_TOKEN, or run where the coordinator keeps its state (--state-dir)")
        }
        // Reads go with the token too when there is one (the members' list needs it).
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let data = try raw ?? body.map { [UInt8](try JSONEncoder().encode($0)) }
        let response: HTTPClient.Response
        do {
            response = try http.request(method, "/api/v1" + zoned(method, path), headers: headers, body: data ?? (method == "GET" ? nil : []))
        } catch {
            let hint = error.tls ? "" : " (is `tutti coordinator` running? see --server)"
            throw CtlFailure(description: "cannot reach the coordinator at \(url): \(error)\(hint)")
        }
        guard (200..<300).contains(response.status) else {
            let message = (try? JSONDecoder().decode([String: String].self, from: Data(response.body)))?["error"]
                ?? String(decoding: response.body, as: UTF8.self)
            throw CtlFailure(description: message.isEmpty ? "the coordinator answered \(response.status)" : message, status: response.status)
        }
        return response.body
    }

    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw CtlFailure(description: "the coordinator's answer was not understood: \(error)")
        }
    }

    /// Follows the event stream, calling `body` with each event until the server closes.
    func follow(_ body: (Event, String) throws -> Void) throws {
        let socket: WebSocketClient
        do {
            // With the token: the house's own budget of event streams, which strangers cannot spend.
            socket = try WebSocketClient(server: http, path: "/api/v1/events" + (zone.map { "?zone=\(percentEncoded($0))" } ?? ""),
                                         headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
        } catch {
            throw CtlFailure(description: "cannot follow the coordinator at \(url): \(error)")
        }
        defer { socket.close() }
        while let text = try socket.nextText() {
            if JSONNesting.isShallow(text), let event = try? JSONDecoder().decode(Event.self, from: Data(text.utf8)) { try body(event, text) }
        }
    }
}

/// Prints JSON as the API sent it, pretty.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// `1:23`, `83`, `1:02:03`, `83.5` → seconds.
func parseClock(_ text: String) throws -> Double {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...3).contains(parts.count) else { throw ValidationError("'\(text)' is not a time: use 83, 1:23 or 1:02:03") }
    var seconds = 0.0
    for (i, part) in parts.enumerated() {
        guard let value = Double(part), value >= 0, value.isFinite, i == parts.count - 1 || value == value.rounded(),
              i == 0 || value < 60 else {
            throw ValidationError("'\(text)' is not a time: use 83, 1:23 or 1:02:03")
        }
        seconds = seconds * 60 + value
    }
    return seconds
}

/// Seconds as `m:ss` (or `h:mm:ss`).
func clockText(_ seconds: Double) -> String {
    let total = Int(max(0, seconds))
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
    return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
}

/// A count and its noun, which takes an s but for one: "1 track", "3 albums".
func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
