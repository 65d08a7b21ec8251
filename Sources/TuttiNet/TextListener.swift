import Glibc

/// A small blocking HTTP/1.x server on one thread of its own, for a follower's metrics:
/// it answers `GET` of the paths its handler knows, one connection at a time, each closed
/// after its answer. A request head must come within 2 s and fit in 8 KB; anything else
/// is answered 400, 404, 405 or 431, or dropped. It never touches the playout thread.
public final class TextListener: Sendable {
    /// An answer: status, content type, body.
    public struct Answer: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public init(status: Int = 200, contentType: String, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    public let port: UInt16
    private let descriptor: Int32
    private let stopFlag = StopFlag()
    private let handler: @Sendable (String) -> Answer?

    /// Listens on `address` (port 0: any free port); `handler` answers a path, or nil (404).
    public init(address: SocketAddress, handler: @escaping @Sendable (String) -> Answer?) throws(SystemError) {
        let fd = try System.check("socket", socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var sa = address.sockaddr
        do {
            try System.check("bind \(address)", withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            })
            try System.check("listen", listen(fd, 16))
            var bound = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            try System.check("getsockname", withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            })
            port = SocketAddress(bound).port
        } catch {
            close(fd)
            throw error
        }
        descriptor = fd
        self.handler = handler
    }

    deinit { close(descriptor) }

    /// Serves on a thread of its own (`name`) until `stop()`.
    public func start(name: String) {
        startThread(name) { [self] in
            while !stopFlag.isSet {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) > 0 else { continue }
                let client = accept(descriptor, nil, nil)
                guard client >= 0 else { continue }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                serve(client)
                close(client)
            }
        }
    }

    public func stop() { stopFlag.set() }

    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while Self.endOfHead(head) == nil {
            guard head.count < 8192 else { return answer(client, Answer(status: 431, contentType: "text/plain", body: Array("request head too large\n".utf8))) }
            let n = recv(client, &chunk, chunk.count, 0)
            guard n > 0 else { return }
            head += chunk[0..<n]
        }
        let line = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self).split(separator: " ")
        guard line.count == 3, line[2].hasPrefix("HTTP/1.") else {
            return answer(client, Answer(status: 400, contentType: "text/plain", body: Array("not an HTTP/1 request\n".utf8)))
        }
        guard line[0] == "GET" || line[0] == "HEAD" else {
            return answer(client, Answer(status: 405, contentType: "text/plain", body: Array("only GET\n".utf8)))
        }
        let path = String(line[1].prefix { $0 != "?" })
        let reply = handler(path) ?? Answer(status: 404, contentType: "text/plain", body: Array("no such page: try /metrics\n".utf8))
        answer(client, reply, body: line[0] == "GET")
    }

    private func answer(_ client: Int32, _ reply: Answer, body: Bool = true) {
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 431: "Request Header Fields Too Large"][reply.status] ?? "Error"
        var bytes = Array("HTTP/1.1 \(reply.status) \(reason)\r\nContent-Type: \(reply.contentType)\r\nContent-Length: \(reply.body.count)\r\nConnection: close\r\n\(reply.status == 405 ? "Allow: GET, HEAD\r\n" : "")\r\n".utf8)
        if body { bytes += reply.body }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            sent += n
        }
        // What the client sent beyond what was read (a head too large) is read and dropped
        // before closing, for a while: closing with it unread would reset the connection
        // and lose the answer.
        shutdown(client, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 4096)
        var drained = 0
        while drained < 1 << 16 {
            let n = recv(client, &sink, sink.count, 0)
            guard n > 0 else { break }
            drained += n
        }
    }

    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i + 4 }
        return nil
    }
}
