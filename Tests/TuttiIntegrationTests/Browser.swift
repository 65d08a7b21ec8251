import Foundation
import Testing
import TuttiNet
import TuttiWeb
import TuttiNode

/// Headless Chromium driven over the Chrome DevTools Protocol: open a page, evaluate
/// JavaScript in it, take screenshots (kept in .build/test-artifacts).
final class Browser {
    private let process: ChildProcess
    private let page: WebSocketClient
    private var nextID = 1
    static let artifacts = Harness.packageRoot + "/.build/test-artifacts"

    /// One Chromium at a time in the whole run: the calibration suite runs beside the
    /// serialized group, and two headless Chromiums on two cores starve each other's frames
    /// (the lyric page drew a line 125 ms late, on a frame that came that late; its own
    /// timing is within a frame).
    private static let oneAtATime = DispatchSemaphore(value: 1)

    static var available: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") }

    /// Opens `url`; over HTTPS, `trusting` is the pin (SHA256:…) of a certificate the
    /// browser accepts though no authority signed it (Chromium's SPKI list).
    /// `arguments`: Chromium's own, added (`--use-fake-ui-for-media-stream`: the microphone
    /// allowed without asking).
    init(_ harness: Harness, url: String, width: Int = 1280, height: Int = 720, trusting pin: String? = nil, arguments: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: Self.artifacts, withIntermediateDirectories: true)
        // One Chromium at a time in the whole run (see `oneAtATime`).
        guard Self.oneAtATime.wait(timeout: .now() + 300) == .success else {
            throw BrowserError(description: "another test held the browser for 5 minutes")
        }
        do {
            let trust = pin.map { pin -> [String] in
                var hash = String(pin.dropFirst("SHA256:".count))
                while hash.count % 4 != 0 { hash += "=" }
                return ["--ignore-certificate-errors-spki-list=\(hash)"]
            } ?? []
            process = try harness.start("chromium", [
                "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--mute-audio",
                // Port 0: Chromium takes a free one and names it in DevToolsActivePort (a port
                // that was free for UDP a moment ago may be taken for TCP).
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                "--user-data-dir=\(harness.path("chromium-profile"))", "--window-size=\(width),\(height)",
            ] + trust + arguments + ["about:blank"])
            var port: UInt16 = 0
            _ = Harness.wait(timeout: 20) {
                let text = (try? String(contentsOfFile: harness.path("chromium-profile/DevToolsActivePort"), encoding: .utf8)) ?? ""
                port = text.split(separator: "\n").first.flatMap { UInt16($0) } ?? 0
                return port != 0
            }
            try #require(port != 0, "Chromium named no DevTools port: \(harness.log("chromium"))")
            let http = HTTPClient(host: "127.0.0.1", port: port)
            var target: [String: Any]?
            _ = Harness.wait(timeout: 20) {
                guard let r = try? http.request("PUT", "/json/new?" + url), r.status == 200 else { return false }
                target = try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
                return target != nil
            }
            let socketURL = try #require(target?["webSocketDebuggerUrl"] as? String, "Chromium did not open the page: \(harness.log("chromium"))")
            let path = try #require(URL(string: socketURL)?.path)
            page = try WebSocketClient(server: HTTPClient(host: "127.0.0.1", port: port), path: path)
        } catch {
            Self.oneAtATime.signal()
            throw error
        }
    }

    deinit {
        page.close()
        process.terminate(grace: 2)
        Self.oneAtATime.signal()
    }

    /// Sends a DevTools command and returns its result.
    @discardableResult
    func command(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        let message = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        try page.send(text: String(decoding: message, as: UTF8.self))
        while let text = try page.nextText() {
            guard let reply = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], reply["id"] as? Int == id else { continue }
            if let error = reply["error"] { throw BrowserError(description: "\(method): \(error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
        throw BrowserError(description: "\(method): the page closed")
    }

    /// Evaluates JavaScript in the page; its value (JSON-compatible).
    func evaluate(_ expression: String) throws -> Any? {
        let result = try command("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] { throw BrowserError(description: "\(expression): \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Saves a screenshot as .build/test-artifacts/NAME.png.
    func screenshot(_ name: String) throws {
        let result = try command("Page.captureScreenshot", ["format": "png"])
        guard let data = (result["data"] as? String).flatMap({ Data(base64Encoded: $0) }) else { return }
        try data.write(to: URL(fileURLWithPath: "\(Self.artifacts)/\(name).png"))
    }
}

struct BrowserError: Error, CustomStringConvertible {
    var description: String
}
