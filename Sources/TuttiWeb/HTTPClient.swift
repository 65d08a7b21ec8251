import TuttiNet
/// A minimal HTTP/1.1 client for the control API: one request per connection
/// (`Connection: close`), bodies by length or chunked; HTTPS when `tls` is set.
public struct HTTPClient: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]
    }

    public let host: String
    public let port: UInt16
    public var timeout: Double = 10
    /// How to trust the server over HTTPS; nil for plain HTTP.
    public var tls: TLSTrust?

    public init(host: String, port: UInt16, tls: TLSTrust? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Parses `http://HOST:PORT` or `https://HOST:PORT` (or `HOST:PORT`, or `HOST`: plain
    /// HTTP), defaulting the port. HTTPS trusts the system's authorities unless told otherwise.
    public init(url: String, defaultPort: UInt16) throws(AddressError) {
        var rest = Substring(url)
        var tls: TLSTrust?
        if rest.lowercased().hasPrefix("http://") {
            rest = rest.dropFirst(7)
        } else if rest.lowercased().hasPrefix("https://") {
            rest = rest.dropFirst(8)
            tls = .system
        }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        let address = try SocketAddress.split(String(rest), defaultPort: defaultPort)
        self.init(host: address.host, port: address.port, tls: tls)
    }

    /// The server's address as a URL (`http://` or `https://`).
    public var url: String { "\(tls == nil ? "http" : "https")://\(host):\(port)" }

    /// A connection to the server (the WebSocket client's too).
    public func connect() throws(SystemError) -> TCPConnection {
        try TCPConnection(host: host, port: port, timeout: timeout, tls: tls)
    }

    public func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws(SystemError) -> Response {
        let connection = try connect()
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\nUser-Agent: tutti-ctl\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body {
            head += "Content-Length: \(body.count)\r\n"
            if headers["Content-Type"] == nil { head += "Content-Type: application/json\r\n" }
        }
        head += "\r\n"
        try connection.write(Array(head.utf8) + (body ?? []))
        guard let statusLine = try connection.read(until: [13, 10]) else {
            throw Self.malformed(tls == nil ? "no response; if the server speaks HTTPS, use https://" : "no response")
        }
        let parts = String(decoding: statusLine, as: UTF8.self).split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Self.malformed("bad status line") }
        var fields: [String: String] = [:]
        while let line = try connection.read(until: [13, 10]), line.count > 2 {
            let text = String(decoding: line.dropLast(2), as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { continue }
            fields[text[..<colon].lowercased()] = String(text[text.index(after: colon)...]).trimmed(" ")
        }
        var content: [UInt8]
        if status == 204 || status == 304 || (100..<200).contains(status) {
            content = []  // no body, whatever the connection does next (RFC 9112, 6.3)
        } else if fields["transfer-encoding"]?.lowercased() == "chunked" {
            content = []
            while let sizeLine = try connection.read(until: [13, 10]) {
                let hex = String(decoding: sizeLine.dropLast(2), as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(String(hex).trimmed(" "), radix: 16) else { throw Self.malformed("bad chunk size") }
                if size == 0 { break }
                content += try connection.read(size)
                _ = try connection.read(2)
            }
        } else if let length = fields["content-length"].flatMap({ Int($0) }) {
            content = try connection.read(length)
        } else {
            content = try connection.readToEnd()
        }
        return Response(status: status, headers: fields, body: content)
    }

    static func malformed(_ why: String) -> SystemError { SystemError(call: "HTTP response (\(why))", errno: 71) }  // EPROTO
}

extension String {
    /// Without `character` at either end.
    func trimmed(_ character: Character) -> String {
        var s = Substring(self)
        while s.first == character { s = s.dropFirst() }
        while s.last == character { s = s.dropLast() }
        return String(s)
    }
}

extension SocketAddress {
    /// Splits `HOST[:PORT]` without resolving the host.
    static func split(_ text: String, defaultPort: UInt16) throws(AddressError) -> (host: String, port: UInt16) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let host = parts.first, !host.isEmpty else { throw .malformed(text) }
        guard parts.count == 2 else { return (String(host), defaultPort) }
        guard let port = UInt16(parts[1]), port > 0 else { throw .malformed(text) }
        return (String(host), port)
    }
}
