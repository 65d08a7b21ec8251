import Foundation
import Testing
import TuttiNet
import TuttiNode
import TuttiWeb

/// A house that runs itself: a follower set up by its configuration file (and a variable
/// over it), quiet in its log, both roles' metrics scraped and read as Prometheus text,
/// and the configuration tools.
extension IntegrationTests {
@Suite("Operations: configuration files, metrics, a quiet log", .serialized, .timeLimit(.minutes(2)))
struct OperationsTests {
    /// Raw bytes to the follower's metrics listener; the answer's status line.
    static func raw(_ port: UInt16, _ bytes: [UInt8]) -> String {
        guard let connection = try? TCPConnection(host: "127.0.0.1", port: port, timeout: 3) else { return "no connection" }
        try? connection.write(bytes)
        connection.setReadTimeout(3)
        let answer = (try? connection.readToEnd(limit: 1 << 20)) ?? []
        return String(decoding: answer.prefix { $0 != 13 }, as: UTF8.self)
    }

    static func scrape(_ port: UInt16, host: String = "127.0.0.1", _ path: String = "/metrics") throws -> (status: Int, type: String, body: PrometheusText) {
        let response = try HTTPClient(host: host, port: port).request("GET", path)
        let text = String(decoding: response.body, as: UTF8.self)
        return (response.status, response.headers["content-type"] ?? "", try PrometheusText(text))
    }

    @Test func aFollowerFromItsFileIsQuietAndBothRolesServeMetrics() throws {
        let h = try Harness("operations")
        let clock = "127.0.0.1:\(Harness.freePort())"
        let metricsPort = Harness.freePort()
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--loop", "--multicast", "off", "--clock-listen", clock,
                                    "--control-listen", "127.0.0.1:0"])
        // Everything in the file; the room's name overridden by the environment.
        try """
            # the kitchen
            coordinator = "\(clock)"
            unicast = true
            output = "null"
            name = "from-the-file"
            metrics-listen = "127.0.0.1:\(metricsPort)"
            """.write(toFile: h.path("follower.toml"), atomically: true, encoding: .utf8)
        var environment = h.environment
        environment["TUTTI_NAME"] = "Kitchen"
        environment["TUTTI_CONFIG"] = h.path("follower.toml")
        let follower = try ChildProcess([Harness.followerBinary], stdoutPath: h.path("a.out"), stderrPath: h.path("a.log"), environment: environment)
        defer { follower.terminate(grace: 3) }
        #expect(Harness.wait(timeout: 15) { h.log("a").contains("state: playing") }, "\(h.log("a"))")
        let api = try ControlAPI(h)
        #expect(Harness.wait(timeout: 5) { (try? api.rooms.map(\.name)) == ["Kitchen"] }, "\((try? api.rooms.map(\.name)) ?? [])")

        // The follower's metrics, as Prometheus reads them.
        Thread.sleep(forTimeInterval: 6)
        let (status, type, follower1) = try Self.scrape(metricsPort)
        #expect(status == 200 && type.hasPrefix("text/plain; version=0.0.4"))
        #expect((follower1.value("tutti_follower_packets_received_total") ?? 0) > 200, "\(follower1.samples)")
        #expect(follower1.value("tutti_follower_clock_locked") == 1)
        #expect(follower1.value("tutti_follower_playing") == 1)
        #expect(abs(follower1.value("tutti_follower_clock_offset_seconds") ?? 1) < 0.001)
        #expect((follower1.value("tutti_follower_clock_uncertainty_seconds") ?? 1) < 0.001)
        #expect((follower1.value("tutti_follower_output_latency_seconds") ?? 0) > 0)
        for name in ["tutti_follower_packets_lost_total", "tutti_follower_frames_concealed_total", "tutti_follower_packets_late_total",
                     "tutti_follower_timing_error_seconds", "tutti_follower_rate_ppm", "tutti_follower_steps_total",
                     "tutti_follower_buffered_packets", "tutti_follower_packets_retransmitted_total"] {
            #expect(follower1.value(name) != nil, "no \(name)")
            #expect(follower1.help[name] != nil && follower1.types[name] != nil, "\(name) undocumented")
        }
        let received = follower1.value("tutti_follower_packets_received_total") ?? 0
        let (_, _, follower2) = try Self.scrape(metricsPort)
        #expect((follower2.value("tutti_follower_packets_received_total") ?? 0) >= received, "a counter fell")

        // Bad requests are answered and forgotten; the listener goes on.
        #expect(Self.raw(metricsPort, Array("POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) == "HTTP/1.1 405 Method Not Allowed")
        #expect(Self.raw(metricsPort, Array("GET /other HTTP/1.1\r\n\r\n".utf8)) == "HTTP/1.1 404 Not Found")
        #expect(Self.raw(metricsPort, Array("\u{1}\u{2}garbage\r\n\r\n".utf8)) == "HTTP/1.1 400 Bad Request")
        #expect(Self.raw(metricsPort, Array("GET /metrics HTTP/1.1\r\nX: \(String(repeating: "a", count: 20_000))".utf8))
            == "HTTP/1.1 431 Request Header Fields Too Large")
        #expect(try Self.scrape(metricsPort).status == 200)

        // The coordinator's, on its control API: a command counted, the room playing.
        _ = try api.change("POST", "/transport/pause")
        let url = try #require(h.controlURL())
        let port = try #require(UInt16(url.split(separator: ":").last ?? ""))
        let (coordinatorStatus, _, coordinator) = try Self.scrape(port)
        #expect(coordinatorStatus == 200)
        #expect((coordinator.value("tutti_stream_packets_sent_total") ?? 0) > 200, "\(coordinator.samples.map(\.name))")
        #expect(coordinator.value("tutti_commands_total", ["command": "pause"]) == 1)
        #expect(coordinator.value("tutti_rooms") == 1 && coordinator.value("tutti_rooms_connected") == 1)
        #expect(coordinator.value("tutti_stream_subscribers") == 1)
        #expect((coordinator.value("tutti_encode_seconds_count") ?? 0) > 200)
        #expect((coordinator.value("hb_requests", ["http_route": "/api/v1/transport/{command}", "http_request_method": "POST"]) ?? 0) >= 1)
        #expect(coordinator.types["tutti_encode_seconds"] == "histogram")

        // Quiet: no status line while it plays cleanly; the lock and the state were told.
        let log = h.log("a")
        #expect(log.contains("clock locked: ") && log.contains("metrics at http://127.0.0.1:\(metricsPort)/metrics"), "\(log)")
        #expect(!log.contains("received "), "a quiet follower logged its status line: \(log)")
    }

    @Test func configurationFilesAreCheckedLineByLineAndTheExamplesAreCurrent() throws {
        let h = try Harness("config")
        try """
            coordinator = "hall.local"
            latency-ms = 9000
            colour = "blue"
            unicast = "yes"
            """.write(toFile: h.path("follower.toml"), atomically: true, encoding: .utf8)
        let broken = try h.run("check", [Harness.binary, "config", "check", h.path("follower.toml")])
        #expect(broken.code == 1)
        let lines = broken.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(broken.out)")
        #expect(lines.first?.hasSuffix("follower.toml line 2: latency-ms = 9000: --latency-ms must be between 20 and 5000") == true, "\(broken.out)")
        #expect(lines.dropFirst().first?.contains("line 3: colour: not an option of tutti follower") == true)
        #expect(lines.last?.contains("line 4: unicast = \"yes\": a switch: write unicast = true or false") == true)

        // A refused value at start names its line too, before ArgumentParser's message.
        var environment = h.environment
        environment["TUTTI_CONFIG"] = h.path("follower.toml")
        try "coordinator = \"127.0.0.1\"\noutput = \"null\"\nlatency-ms = 9000\n".write(toFile: h.path("follower.toml"), atomically: true, encoding: .utf8)
        let child = try ChildProcess([Harness.followerBinary], stdoutPath: h.path("start.out"), stderrPath: h.path("start.log"), environment: environment)
        #expect(child.wait(timeout: 10) == 64)
        #expect(h.log("start").contains("latency-ms comes from \(h.path("follower.toml")) line 3"), "\(h.log("start"))")

        // Each role's example in deploy/ is `tutti config example ROLE`, and checks clean.
        for role in ["coordinator", "follower", "lyrics", "ctl", "mpris"] {
            let example = try h.run("example-\(role)", [Harness.binary, "config", "example", role])
            #expect(example.code == 0)
            let committed = try String(contentsOfFile: Harness.packageRoot + "/deploy/config/\(role).toml", encoding: .utf8)
            #expect(committed == example.out, "deploy/config/\(role).toml is not `tutti config example \(role)`: run deploy/make-config-examples.sh")
            let check = try h.run("check-\(role)", [Harness.binary, "config", "check", Harness.packageRoot + "/deploy/config/\(role).toml"])
            #expect(check.code == 0, "\(check.out)")
        }
    }
}
}
