import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
    /// The control channel against a running house: the API, `tutti ctl`, the event stream,
    /// bad input, and the saved state.
    @Suite("Control: transport, queue, volumes, rooms, state")
    struct ControlTests {
        func coordinator(_ h: Harness, _ inputs: [String] = [Harness.demoSong], _ extra: [String] = []) throws -> String {
            let clock = "127.0.0.1:\(Harness.freePort())"
            try h.tutti("coordinator", ["coordinator"] + inputs + ["--multicast", "off", "--clock-listen", clock] + extra)
            #expect(Harness.wait(timeout: 5) { h.log("coordinator").contains("clock service") })
            return clock
        }

        func follower(_ h: Harness, _ name: String, clock: String, output: String) throws {
            try h.tutti(name, ["follower", "--coordinator", clock, "--unicast", "--output", output, "--name", name, "--status-interval", "1"])
        }

        /// Pause, resume and seek with two rooms writing WAV files on this host's clock: the
        /// sound stops within 100 ms of the command, in both rooms at the same sample; resume
        /// goes on from the paused sample; after a seek nothing of the old position is heard.
        @Test func pauseResumeAndSeekTakeEffectInEveryRoomTogether() throws {
            let h = try Harness("pause")
            let noise = try h.noiseSong()
            let source = try TrackAudio.mono(noise)
            let clock = try coordinator(h, [noise])
            try follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            try follower(h, "b", clock: clock, output: "wav:" + h.path("b.wav"))
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.filter { $0.report?.state == .playing }.count) == 2 })
            Thread.sleep(forTimeInterval: 1.5)

            let monotonic = SystemClock()
            let pausedAt = monotonic.nanosecondsNow()
            let paused = try #require(try api.change("POST", "/transport/pause"))
            #expect(paused.state == .paused)
            Thread.sleep(forTimeInterval: 1.5)
            let resumedAt = monotonic.nanosecondsNow()
            let resumed = try #require(try api.change("POST", "/transport/play"))
            Thread.sleep(forTimeInterval: 2)
            let seek = try #require(try api.change("POST", "/transport/seek", #"{"position": 25}"#))
            Thread.sleep(forTimeInterval: 1.5)
            for name in ["a", "b"] { h.stop(name) }

            let a = try wav(h.path("a.wav")), b = try wav(h.path("b.wav"))
            // Pause: the last sound before the resume, per room, on the monotonic clock.
            let stopA = try #require(a.lastSound(before: resumedAt)), stopB = try #require(b.lastSound(before: resumedAt))
            #expect(stopA - pausedAt < 100_000_000, "room A fell silent \((stopA - pausedAt) / 1_000_000) ms after the pause")
            // The same sample: the rooms' audio over the 100 ms before the fade lines up (the
            // fade's last audible sample crosses the threshold a few samples apart as the pink
            // noise passes near zero, so the crossing times only bound it loosely).
            #expect(abs(stopA - stopB) < 1_000_000, "the rooms stopped \(abs(stopA - stopB) / 1000) µs apart")
            let beforeStop = stopA - 150_000_000
            let stopLag = try #require(a.lag(against: b.samples, at: beforeStop, sourceFrame: b.frame(at: beforeStop)))
            #expect(abs(stopLag) < 3, "just before the pause the rooms were \(stopLag) samples apart")
            // Resume: from the paused sample on, heard where the answer said (media position 0
            // "heard" at trackOrigin; coordinator time is this host's monotonic clock).
            // The coordinator starts the stream again where the answer says: its command lead
            // after it takes the command (the slowest room's output latency and round trip, and
            // 8 ms: about 90 ms here), and the room is heard from then (in one CI run the first
            // sound came 163 ms after the command, against a bound of 150 ms from it).
            let startA = try #require(a.firstSound(after: resumedAt))
            let resumeOrigin = try #require(resumed.trackOrigin)
            let resumesAt = resumeOrigin + Int64(paused.elapsed * 1e9)
            #expect(resumesAt - resumedAt >= 40_000_000 && resumesAt - resumedAt < 250_000_000,
                    "the resume was heard from \((resumesAt - resumedAt) / 1_000_000) ms after the command")
            #expect(abs(startA - resumesAt) < 10_000_000, "room A's first sound came \((startA - resumesAt) / 1_000) µs from the resume's time")
            #expect(abs(resumed.elapsed - paused.elapsed) < 0.001, "resumed at \(resumed.elapsed) s, paused at \(paused.elapsed) s")
            let afterResume = resumesAt + 200_000_000
            let lagAfterResume = try #require(a.lag(against: source, at: afterResume,
                                                    sourceFrame: Int((afterResume - resumeOrigin) * 48_000 / 1_000_000_000)))
            #expect(abs(lagAfterResume) < 8, "after the resume room A is \(lagAfterResume) samples off where it should be")
            // Seek: from the cut on, the audio is the track at 25 s, heard where the answer said
            // (media position 0 "heard" at trackOrigin, coordinator time = this host's clock).
            let origin = try #require(seek.trackOrigin)
            let probe = origin + 25_300_000_000
            let lagAfterSeek = try #require(a.lag(against: source, at: probe, sourceFrame: Int((probe - origin) * 48_000 / 1_000_000_000)))
            #expect(abs(lagAfterSeek) < 8, "after the seek room A is \(lagAfterSeek) samples off where it should be")
            let lagB = try #require(b.lag(against: source, at: probe, sourceFrame: Int((probe - origin) * 48_000 / 1_000_000_000)))
            #expect(abs(lagB) < 8, "after the seek room B is \(lagB) samples off where it should be")
        }

        /// Every endpoint the remote uses, and the WebSocket event stream.
        @Test func apiAndEventStreamDriveTheHouse() throws {
            let h = try Harness("api")
            let sweep = try h.sweepSong(artwork: true)
            _ = try coordinator(h, [Harness.demoSong, sweep])
            let api = try ControlAPI(h)
            let server = try #require(h.controlURL())
            let follow = try h.start("follow", [Harness.binary, "ctl", "status", "--follow", "--json", "--server", server])
            // Listening once its first event (hello) is out: a debug build takes half a second to start.
            #expect(Harness.wait(timeout: 10) { ((try? String(contentsOfFile: h.path("follow.out"), encoding: .utf8)) ?? "").contains("hello") })

            var np = try api.nowPlaying
            #expect(np.title == "Tutti" && np.artist == "The tutti band" && np.queueCount == 2)
            #expect(np.artworkURL == nil && np.duration.map { abs($0 - 32) < 1 } == true)
            try api.change("PUT", "/loop", #"{"mode": "shuffle"}"#)
            #expect(try api.queue.loopMode == .shuffle)
            try api.change("PUT", "/loop", #"{"mode": "all"}"#)
            np = try #require(try api.change("POST", "/transport/next"))
            #expect(np.title == "Sweep" && np.artist == "The Testers" && np.queueIndex == 1)
            let artwork = try #require(np.artworkURL, "the sweep's cover was not found")
            let image = try api.client.request("GET", artwork)
            #expect(image.status == 200 && image.headers["content-type"] == "image/png" && image.body == Harness.tinyPNG)
            let added = try JSONDecoder().decode([QueueEntry].self, from: Data(try api.call("POST", "/queue", json: #"{"paths": ["\#(sweep)"], "placement": "next"}"#).body.utf8))
            #expect(added.count == 1 && added[0].index == 2)
            try api.change("POST", "/queue/\(added[0].id)/move", #"{"index": 0}"#)
            #expect(try api.queue.items.first?.id == added[0].id)
            try api.change("DELETE", "/queue/\(added[0].id)")
            #expect(try api.queue.items.count == 2)
            try api.change("POST", "/feedback", #"{"kind": "like"}"#)
            #expect(try api.nowPlaying.rating == .like)
            try api.change("POST", "/feedback", #"{"kind": "bookmark"}"#)
            #expect(try api.get("/feedback", as: [FeedbackEntry].self).count == 2)
            try api.change("PUT", "/volume", #"{"volume": 50}"#)
            try api.change("POST", "/transport/stop")
            #expect(try api.nowPlaying.state == .stopped)
            try api.change("DELETE", "/queue")
            #expect(try api.queue.items.isEmpty)
            Thread.sleep(forTimeInterval: 0.5)
            follow.terminate(grace: 1)

            let kinds = Set((try String(contentsOfFile: h.path("follow.out"), encoding: .utf8))
                .split(separator: "\n").compactMap { try? JSONDecoder().decode(Event.self, from: Data($0.utf8)).kind })
            for kind: Event.Kind in [.hello, .nowPlaying, .state, .trackChanged, .queue, .volume, .feedback] {
                #expect(kinds.contains(kind), "no \(kind.rawValue) event: \(kinds)")
            }
        }

        /// Malformed, unknown, out of range, unauthorized, oversized: a 4xx that says what was
        /// wrong, and the house unchanged.
        @Test func badRequestsAreRefusedAndChangeNothing() throws {
            let h = try Harness("bad")
            _ = try coordinator(h)
            let api = try ControlAPI(h)
            Thread.sleep(forTimeInterval: 0.5)
            let queueBefore = try api.queue
            let epochBefore = try api.nowPlaying.epoch
            let cases: [(String, String, String?, String??, Int, String)] = [
                ("POST", "/transport/seek", #"{"position": "#, nil, 400, "malformed"),
                ("POST", "/transport/seek", #"{"where": 3}"#, nil, 400, "missing field 'position'"),
                ("POST", "/transport/seek", #"{"position": 999}"#, nil, 400, "cannot seek to 16:39.0"),
                ("POST", "/transport/seek", #"{"position": -1}"#, nil, 400, "0 to 1000000"),
                ("POST", "/transport/seek", #"{"position": 1e300}"#, nil, 400, "0 to 1000000"),
                ("POST", "/transport/seek", String(repeating: "[", count: 513), nil, 400, "nested more than 32 levels"),
                ("POST", "/transport/jump", nil, nil, 404, "unknown transport command 'jump'"),
                ("POST", "/queue/play", #"{"index": 7}"#, nil, 400, "out of range"),
                ("POST", "/queue/12345/move", #"{"index": 0}"#, nil, 404, "no queue item with id 12345"),
                ("DELETE", "/queue/999", nil, nil, 404, "no queue item"),
                ("PUT", "/loop", #"{"mode": "sometimes"}"#, nil, 400, "malformed"),
                ("PUT", "/volume", #"{"volume": 150}"#, nil, 400, "out of range"),
                ("PUT", "/rooms/Garage", #"{"volume": 10}"#, nil, 404, "no room named 'Garage'"),
                ("POST", "/queue", #"{"paths": ["/no/such/file.mp3"]}"#, nil, 400, "no such file"),
                ("POST", "/transport/pause", nil, .some(nil), 401, "needs its token"),
                ("POST", "/transport/pause", nil, .some("0123456789abcdef"), 403, "wrong token"),
                ("GET", "/no-such-thing", nil, nil, 404, "no such endpoint"),
                ("POST", "/queue", "{\"paths\": [\"" + String(repeating: "x", count: 70_000) + "\"]}", nil, 413, "too large"),
            ]
            for (method, path, json, token, status, message) in cases {
                let response = try api.call(method, path, json: json, token: token)
                #expect(response.status == status, "\(method) \(path): \(response.status) \(response.body)")
                let error = (try? JSONDecoder().decode([String: String].self, from: Data(response.body.utf8)))?["error"] ?? ""
                #expect(error.contains(message), "\(method) \(path): '\(error)' does not say '\(message)'")
            }
            // Numbers past any integer are refused with their range, never a crash.
            for (path, json) in [("/rooms/Garage", #"{"outputDelayMs": 1e19}"#), ("/volume", #"{"volume": 1e300}"#),
                                 ("/volume", #"{"volume": -1e300}"#)] {
                let response = try api.call("PUT", path, json: json)
                #expect([400, 404].contains(response.status), "PUT \(path) \(json): \(response.status) \(response.body)")
            }
            // A page of another site whose name was pointed at the coordinator (DNS rebinding)
            // reads nothing; its own names and addresses are answered.
            let url = try #require(h.controlURL())
            for (host, status) in [("evil.example", "421"), ("localhost", "200"), ("127.0.0.1", "200")] {
                let curl = try h.run("curl-\(host)", ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                                                       "-H", "Host: \(host)", url + "/api/v1/status"])
                #expect(curl.out == status, "GET /status as \(host): \(curl.out) \(curl.err)")
            }
            #expect(try api.queue == queueBefore)
            #expect(try api.nowPlaying.epoch == epochBefore)
            #expect(h.log("coordinator").contains("Fatal") == false)
        }

        /// A stranger without the token: guessing it is cut off after 10 failures a minute (the
        /// right token from elsewhere still works), and 1,100 connections that never finish a
        /// request neither exhaust the coordinator's file descriptors nor stop the house: it
        /// plays on, saves, and answers again once they are gone. The token is never logged.
        @Test func tokenGuessersAreCutOffAndIdleConnectionsCannotStarveTheHouse() throws {
            let h = try Harness("worn")
            let coordinator = try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--loop", "--multicast", "off", "--clock-listen",
                                                          "127.0.0.1:\(Harness.freePort())"])
            let api = try ControlAPI(h)
            let port = try #require(h.controlURL().flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
            let token = try #require(h.token)
            #expect(!h.log("coordinator").contains(token), "the token is in the coordinator's log")

            // Reads are open, but without the token they show file names, not the folders.
            for path in ["/now-playing", "/queue", "/status", "/lyrics"] {
                let open = try api.call("GET", path, token: .some(nil))
                let body = open.body.replacingOccurrences(of: "\\/", with: "/")
                #expect(open.status == 200 && body.contains("tutti-demo") && !body.contains(Harness.packageRoot),
                        "GET \(path) without the token: \(body.prefix(300))")
            }
            #expect(try api.queue.items.first?.path == Harness.demoSong, "with the token, whole paths")

            let guesser = try h.run("guesser", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                                "--guess", "12", "--source", "127.0.0.2"])
            let statuses = (try? JSONSerialization.jsonObject(with: Data(guesser.out.utf8)) as? [String: [Int]])?["statuses"] ?? []
            #expect(statuses == Array(repeating: 403, count: 10) + [429, 429], "\(guesser)")
            try api.change("PUT", "/volume", #"{"volume": 40}"#)

            // A stranger at 127.0.0.2 holds 1,100 connections that never finish a request: they
            // take that address's share (16), and the house's owner at 127.0.0.1 is answered
            // all along.
            let flood = try h.start("flood", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                              "--connections", "1100", "--hold", "14", "--source", "127.0.0.2"])
            var mostDescriptors = 0
            var unanswered: [String] = []
            for second in 1...12 {
                Thread.sleep(forTimeInterval: 1)
                let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(coordinator.pid)/fd").count) ?? 0
                mostDescriptors = max(mostDescriptors, open)
                // Once the stranger's 1,100 connection attempts are over, the owner is answered
                // every time. Until then they crowd the kernel's one queue of them: those it
                // dropped are sent again 1 and 3 s on, and flood.py gives up on those not
                // through within 5 s. (A CI machine slower to accept than this one failed the
                // owner's connection at 3 s, in the second wave.)
                guard second >= 6 else { continue }
                do {
                    let status = try api.call("GET", "/status", token: .some(nil)).status
                    if status != 200 { unanswered.append("\(second) s: \(status)") }
                } catch {
                    unanswered.append("\(second) s: \(error)")
                }
            }
            #expect(unanswered.isEmpty, "the owner was not answered during the flood: \(unanswered)")
            #expect(flood.wait(timeout: 30) == 0, "\(h.log("flood"))")
            let result = (try? JSONSerialization.jsonObject(with: Data(((try? String(contentsOfFile: h.path("flood.out"), encoding: .utf8)) ?? "").utf8))
                          as? [String: Any]) ?? [:]
            #expect((result["opened"] as? Int ?? 0) >= 200, "\(result)")
            #expect((result["closed_by_server"] as? Int ?? 0) >= 128, "the server closed too few idle connections: \(result)")
            #expect(mostDescriptors < 300, "the coordinator held \(mostDescriptors) file descriptors")

            // A stranger at 127.0.0.3 asks for 128 event streams (no Origin, no token) and holds
            // them: it gets its share (8), and the owner's event stream and API still work.
            let sockets = try h.start("sockets", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                                  "--websockets", "128", "--hold", "6", "--source", "127.0.0.3"])
            Thread.sleep(forTimeInterval: 3)
            let mine = try h.run("my-socket", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                               "--websockets", "1", "--hold", "0"])
            #expect(mine.out.contains(#""upgraded": 1"#), "the owner's event stream: \(mine)")
            #expect(try api.call("GET", "/status", token: .some(nil)).status == 200)
            #expect(sockets.wait(timeout: 30) == 0, "\(h.log("sockets"))")
            let held = (try? JSONSerialization.jsonObject(with: Data(((try? String(contentsOfFile: h.path("sockets.out"), encoding: .utf8)) ?? "").utf8))
                        as? [String: Any]) ?? [:]
            #expect(held["open_at_end"] as? Int == 8, "the stranger's event streams: \(held)")

            // A stranger with eight addresses takes the whole open budget (64 event streams,
            // the one lyric screens without the token share); the owner's streams, opened with
            // the token or a one-time ticket from it, have a budget of their own.
            let many = try h.start("many-sockets", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                                    "--websockets", "80", "--hold", "6",
                                                    "--sources", (4...11).map { "127.0.0.\($0)" }.joined(separator: ",")])
            Thread.sleep(forTimeInterval: 3)
            let anonymous = try h.run("anonymous-socket", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                                           "--websockets", "1", "--hold", "1"])
            #expect(anonymous.out.contains(#""open_at_end": 0"#), "the open budget was not full: \(anonymous)")
            let ticketed = try h.run("ticketed-socket", ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)",
                                                         "--websockets", "2", "--hold", "1", "--token", h.token ?? ""])
            #expect(ticketed.out.contains(#""open_at_end": 2"#), "the owner's event streams with tickets: \(ticketed)")
            #expect(try api.call("POST", "/events/ticket", token: .some(nil)).status == 401, "a ticket needs the token")
            #expect(many.wait(timeout: 30) == 0, "\(h.log("many-sockets"))")
            let manyHeld = (try? JSONSerialization.jsonObject(with: Data(((try? String(contentsOfFile: h.path("many-sockets.out"), encoding: .utf8)) ?? "").utf8))
                            as? [String: Any]) ?? [:]
            #expect(manyHeld["open_at_end"] as? Int == 64, "the stranger's event streams from eight addresses: \(manyHeld)")

            // The house played on and saves again.
            var answered = false
            for _ in 0..<20 where !answered {
                answered = (try? api.call("PUT", "/volume", json: #"{"volume": 30}"#).status) == 200
                if !answered { Thread.sleep(forTimeInterval: 0.5) }
            }
            #expect(answered, "the API did not answer after the flood")
            #expect(try api.nowPlaying.state == .playing)
            try api.change("POST", "/feedback", #"{"kind": "bookmark"}"#)
            let saved = (try? String(contentsOfFile: h.path("state/state.json"), encoding: .utf8)) ?? ""
            #expect(saved.contains("bookmark"), "the bookmark was not saved: \(saved.prefix(300))")
            let log = h.log("coordinator")
            #expect(!log.contains("Too many open files") && !log.contains("Fatal"), "\(log)")
            #expect(!log.contains(token), "the token is in the coordinator's log")
        }

        /// `tutti ctl`: human-readable, --json, and a message with a non-zero exit on error.
        @Test func ctlDrivesTheHouseFromTheTerminal() throws {
            let h = try Harness("ctl")
            let clock = try coordinator(h)
            try follower(h, "Kitchen", clock: clock, output: "null")
            let server = try #require(h.controlURL())
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 8) { (try? api.rooms.first?.connected) == true })

            var r = try h.ctl(["status"], server: server)
            #expect(r.code == 0 && r.out.contains("Tutti — The tutti band") && r.out.contains("Kitchen"), "\(r.out)\(r.err)")
            r = try h.ctl(["pause"], server: server)
            #expect(r.code == 0 && r.out.contains("paused"))
            r = try h.ctl(["seek", "0:12"], server: server)
            #expect(r.code == 0 && r.out.contains("0:12 / 0:32"), "\(r.out)")
            r = try h.ctl(["skip", "-5"], server: server)
            #expect(r.code == 0 && r.out.contains("0:07"), "\(r.out)\(r.err)")
            r = try h.ctl(["loop", "one", "--json"], server: server)
            #expect(r.code == 0 && (try? JSONDecoder().decode(NowPlaying.self, from: Data(r.out.utf8)))?.loopMode == .one, "\(r.out)")
            r = try h.ctl(["volume", "Kitchen", "40"], server: server)
            #expect(r.code == 0 && r.out.contains("volume  40%"), "\(r.out)")
            #expect(Harness.wait(timeout: 3) { h.log("Kitchen").contains("volume 40%") }, "the follower applied it")
            // A name with a space travels percent-encoded in the path (it was not decoded:
            // "no room named 'Living%20Room'").
            r = try h.ctl(["room", "rename", "kitchen", "Living Room"], server: server)
            #expect(r.code == 0 && r.out.contains("Living Room"), "\(r.out)\(r.err)")
            r = try h.ctl(["volume", "Living Room", "30"], server: server)
            #expect(r.code == 0 && r.out.contains("volume  30%"), "\(r.out)\(r.err)")
            r = try h.ctl(["queue", "add", Harness.demoSong, "--next"], server: server)
            #expect(r.code == 0 && r.out.contains("added 1 track"))
            r = try h.ctl(["queue"], server: server)
            #expect(r.code == 0 && r.out.contains("  2. Tutti"), "\(r.out)")
            r = try h.ctl(["bookmark"], server: server)
            #expect(r.code == 0 && r.out.contains("bookmarked Tutti at 0:07"), "\(r.out)")
            r = try h.ctl(["play"], server: server)
            #expect(r.code == 0 && r.out.contains("loading") || r.out.contains("playing"))

            for (args, message) in [(["volume", "Garage", "10"], "no room named 'Garage'"), (["seek", "9:99"], "not a time"),
                                    (["queue", "remove", "9"], "there is no track 9"), (["loop", "sometimes"], "sometimes"),
                                    (["pause", "--token", "nope-nope-nope-nope"], "wrong token")] {
                r = try h.ctl(args, server: server)
                #expect(r.code != 0 && r.err.contains(message), "\(args): \(r.code) \(r.err)")
            }
            r = try h.ctl(["status"], server: "127.0.0.1:9")
            #expect(r.code != 0 && r.err.contains("cannot reach the coordinator"))

            // The options every command takes may come before it, as --zone does.
            r = try h.run("ctl-before", [Harness.binary, "ctl", "--server", server, "--json", "status"])
            #expect(r.code == 0 && (try? JSONDecoder().decode(Status.self, from: Data(r.out.utf8))) != nil, "\(r.out)\(r.err)")
            // A typo gets the command it was near, not another command's usage.
            for (args, near) in [(["queue", "ad", "x.mp3"], "did you mean 'tutti ctl queue add'?"),
                                 (["library", "serach", "x"], "did you mean 'tutti ctl library search'?"),
                                 (["staus"], "did you mean 'tutti ctl status'?"),
                                 (["zone", "frobnicate"], "tutti ctl zone has: add, remove, rename, party")] {
                r = try h.ctl(args, server: server)
                #expect(r.code == 64 && r.err.contains(near) && !r.err.contains("USAGE"), "\(args): \(r.code) \(r.err)")
            }
            // Queue positions count from 1 everywhere.
            r = try h.ctl(["play", "99"], server: server)
            #expect(r.code != 0 && r.err.contains("there is no track 99: the queue has tracks 1 to 2"), "\(r.err)")
            // A level may go up or down by some; a wrong one is named.
            r = try h.ctl(["volume", "Living Room", "-5"], server: server)
            #expect(r.code == 0 && r.out.contains("volume  25%"), "\(r.out)\(r.err)")
            r = try h.ctl(["volume", "Living Room", "+10"], server: server)
            #expect(r.code == 0 && r.out.contains("volume  35%"), "\(r.out)\(r.err)")
            r = try h.ctl(["volume", "Living Room", "150"], server: server)
            #expect(r.code != 0 && r.err.contains("the volume '150' is not a level"), "\(r.err)")
            // A zone's status shows that zone's rooms.
            #expect(try h.ctl(["zone", "add", "Patio"], server: server).code == 0)
            r = try h.ctl(["--zone", "Patio", "status"], server: server)
            #expect(r.code == 0 && !r.out.contains("Living Room"), "\(r.out)\(r.err)")
            r = try h.ctl(["status"], server: server)
            #expect(r.code == 0 && r.out.contains("Living Room"), "\(r.out)\(r.err)")

            // Off the journal, every log line says when.
            let first = h.log("coordinator").split(separator: "\n").first.map(String.init) ?? ""
            #expect(first.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} tutti\[coordinator\] "#, options: .regularExpression) != nil, "\(first)")

            // A second coordinator on the same control port says so, and writes nothing first.
            let port = try #require(URL(string: server)?.port)
            let state = h.path("second-state")
            let second = try h.run("second", [Harness.binary, "coordinator", Harness.demoSong, "--multicast", "off", "--state-dir", state,
                                              "--clock-listen", "127.0.0.1:\(Harness.freePort())", "--control-listen", "127.0.0.1:\(port)"])
            #expect(second.code != 0 && second.err.contains("port \(port) is in use by another program"), "\(second.err)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: state))?.isEmpty ?? true, "it wrote its state first")
        }

        /// SIGKILL in the middle of a burst of queue edits: after a restart every acknowledged
        /// edit is there, and the house resumes, paused, where it was.
        @Test func stateSurvivesAKillDuringABurstOfEdits() throws {
            let h = try Harness("kill")
            let clock = try coordinator(h, [], [])
            let api = try ControlAPI(h)
            Thread.sleep(forTimeInterval: 0.3)
            let acknowledged = Acknowledged()
            let writer = Thread {
                for _ in 0..<400 {
                    guard let (status, body) = try? api.call("POST", "/queue", json: #"{"paths": ["\#(Harness.demoSong)"]}"#),
                          status == 200, let entries = try? JSONDecoder().decode([QueueEntry].self, from: Data(body.utf8)) else { return }
                    acknowledged.add(entries.map(\.id))
                }
            }
            writer.start()
            #expect(Harness.wait(timeout: 10) { acknowledged.count >= 40 })
            h.kill("coordinator")
            Thread.sleep(forTimeInterval: 0.3)
            let saved = acknowledged.ids

            try h.tutti("coordinator2", ["coordinator", "--multicast", "off", "--clock-listen", clock])
            let api2 = try ControlAPI(h, coordinator: "coordinator2")
            let ids = Set(try api2.queue.items.map(\.id))
            #expect(saved.isSubset(of: ids), "lost \(saved.subtracting(ids).count) acknowledged edits")
            #expect(ids.count <= saved.count + 1, "at most the edit in flight is extra")

            // Play a while, pause, kill, restart: paused at the same place; play goes on from there.
            try api2.change("POST", "/transport/play")
            Thread.sleep(forTimeInterval: 2)
            let paused = try #require(try api2.change("POST", "/transport/pause"))
            h.kill("coordinator2")
            try h.tutti("coordinator3", ["coordinator", "--multicast", "off", "--clock-listen", clock])
            let api3 = try ControlAPI(h, coordinator: "coordinator3")
            let restored = try api3.nowPlaying
            #expect(restored.state == .paused && abs(restored.elapsed - paused.elapsed) < 0.01, "\(restored.elapsed) vs \(paused.elapsed)")
            let resumed = try #require(try api3.change("POST", "/transport/play"))
            #expect(abs(resumed.elapsed - paused.elapsed) < 0.01)
            #expect(FileManager.default.fileExists(atPath: h.path("state/state.json")))
        }

        /// SIGTERM, as a service manager stops it: the coordinator's services shut down in
        /// order (the API, then the house, which saves where it is, then the player and the
        /// clock service), and it exits 0 within two seconds. Started again, it is paused
        /// where it stopped.
        @Test func aTerminatedCoordinatorSavesWhereItWasAndExits() throws {
            let h = try Harness("term")
            let clock = "127.0.0.1:\(Harness.freePort())"
            let coordinator = try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock])
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying.state) == .playing })
            Thread.sleep(forTimeInterval: 1.5)
            let playing = try api.nowPlaying
            let sent = DispatchTime.now().uptimeNanoseconds
            kill(coordinator.pid, SIGTERM)
            let code = coordinator.wait(timeout: 2)
            let took = Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e9
            #expect(code == 0, "exit \(code.map(String.init) ?? "none") after SIGTERM: \(h.log("coordinator").suffix(400))")
            #expect(took < 2, "took \(took) s to stop")

            try h.tutti("coordinator2", ["coordinator", "--multicast", "off", "--clock-listen", clock])
            let restored = try ControlAPI(h, coordinator: "coordinator2").nowPlaying
            // Where it was when told to stop: its position then, give or take the stop itself.
            #expect(restored.state == .paused, "\(restored.state)")
            #expect(restored.elapsed >= playing.elapsed && restored.elapsed < playing.elapsed + 1,
                    "saved at \(restored.elapsed) s; it was at \(playing.elapsed) s \(took) s before")
        }

        struct Room {
            let samples: [Float]
            let start: Int64
            /// The index of the frame heard at local (monotonic) time `time`.
            func frame(at time: Int64) -> Int { Int((time - start) * 48_000 / 1_000_000_000) }
            /// The local (monotonic) time of the last frame with sound before `time`.
            func lastSound(before time: Int64) -> Int64? {
                let end = min(samples.count, Int((time - start) * 48_000 / 1_000_000_000))
                guard end > 0, let i = samples[0..<end].lastIndex(where: { abs($0) > 0.002 }) else { return nil }
                return start + Int64(i) * 1_000_000_000 / 48_000
            }
            func firstSound(after time: Int64) -> Int64? {
                let from = max(0, Int((time - start) * 48_000 / 1_000_000_000))
                guard from < samples.count, let i = samples[from...].firstIndex(where: { abs($0) > 0.002 }) else { return nil }
                return start + Int64(i) * 1_000_000_000 / 48_000
            }
            /// How far (samples) the room's audio at local time `time` is from `source` at `sourceFrame`.
            func lag(against source: [Float], at time: Int64, sourceFrame: Int, search: Int = 480) -> Double? {
                let here = Int((time - start) * 48_000 / 1_000_000_000)
                guard here - search >= 0, here + 4_800 + search < samples.count, sourceFrame + 4_800 + search < source.count else { return nil }
                let window = Array(source[(sourceFrame - search)..<(sourceFrame + 4_800 + search)])
                let mine = Array(samples[(here - search)..<(here + 4_800 + search)])
                return Analysis.lag(Analysis.difference(window), Analysis.difference(mine), start: search, length: 4_800, maxLag: search)?.lag
            }
        }

        func wav(_ path: String) throws -> Room {
            let file = try #require(Analysis.readWAV(path))
            let start = try #require(Int64(try String(contentsOfFile: path + ".start", encoding: .utf8)))
            return Room(samples: zip(file.channels[0], file.channels[1]).map { ($0 + $1) / 2 }, start: start)
        }
    }
}

/// Queue item ids the API acknowledged, from the writer thread.
final class Acknowledged: @unchecked Sendable {
    private let lock = NSLock()
    private var set = Set<Int>()
    func add(_ ids: [Int]) { lock.withLock { set.formUnion(ids) } }
    var count: Int { lock.withLock { set.count } }
    var ids: Set<Int> { lock.withLock { set } }
}
