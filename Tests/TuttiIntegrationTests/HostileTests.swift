import Foundation
import Testing
import TuttiAPI
import TuttiCore

extension IntegrationTests {
/// What anyone outside the house sends it: a hostile internet station (bench/lib/media_server.py's
/// `/hostile/` answers: every malformed number a playlist, a header or a length can carry),
/// and strangers on other source addresses wearing at the control API and at pairing
/// (bench/lib/flood.py, from 127.0.0.2 to 127.0.0.9: loopback takes any source in 127/8).
@Suite("Hostile stations and strangers", .serialized, .timeLimit(.minutes(3)))
struct HostileTests {
    let control = ControlTests()

    /// Each hostile source in turn, queued to play now: the coordinator neither traps nor
    /// stalls; a source whose numbers are out of range fails with an error that says so, and
    /// the queue moves on to the track after it, which plays. A remote playlist fanning out
    /// past what one request may bring in is refused whole, quickly, with its bound named.
    @Test func aHostileStationNeverKnocksTheHouseOver() throws {
        let h = try Harness("hostile")
        _ = try h.noiseSong(seconds: 30)
        let server = try MediaServer(h, folder: h.directory)
        let coordinator = try h.tutti("coordinator", ["coordinator", server.url("/files/noise.mp3"), "--loop", "--multicast", "off",
                                                      "--clock-listen", "127.0.0.1:\(Harness.freePort())"])
        let api = try ControlAPI(h)
        #expect(Harness.wait(timeout: 8) { (try? api.nowPlaying.state) == .playing })

        let cases = ["hls-target.m3u8?value=0&extinf=0", "hls-sequence.m3u8?value=9223372036854775807",
                     "hls-target.m3u8?value=inf", "hls-target.m3u8?value=nan", "hls-target.m3u8?value=1e21",
                     "hls-target.m3u8?value=-1", "hls-extinf.m3u8?value=1e308", "hls-extinf.m3u8?value=nan",
                     "icy.mp3?br=99999999999999999", "icy.mp3?metaint=99999999999999999999", "icy.mp3?metaint=-5",
                     "length.mp3?value=9223372036854775807", "length.mp3?value=-1", "resume.mp3?total=9223372036854775807",
                     "resume.mp3?total=-3", "range.mp3?total=18446744073709551615"]
        for name in cases {
            let url = server.url("/hostile/" + name)
            let added = try api.call("POST", "/queue", json: #"{"paths": ["\#(url)"], "placement": "now"}"#)
            #expect(added.status == 200, "\(name): \(added)")
            Thread.sleep(forTimeInterval: 0.7)
            #expect(coordinator.isRunning, "the coordinator stopped on \(name): \(h.log("coordinator").suffix(2000))")
            let started = Date()
            #expect((try? api.call("GET", "/status").status) == 200, "the API did not answer after \(name)")
            #expect(Date().timeIntervalSince(started) < 1, "the API took \(Date().timeIntervalSince(started)) s after \(name)")
        }
        let log = h.log("coordinator")
        for reason in ["target duration (inf)", "media sequence (9223372036854775807)", "segment a duration (1e308)"] {
            #expect(log.contains(reason), "no error names \(reason): \(log.suffix(3000))")
        }
        #expect(!log.contains("Fatal error"), "\(log.suffix(2000))")

        // A remote M3U of 1,000 playlists of 1,000 tracks each: refused at the 10,000th entry.
        let started = Date()
        let fan = try api.call("POST", "/queue", json: #"{"paths": ["\#(server.url("/hostile/fanout.m3u?width=1000&depth=2"))"]}"#)
        #expect(fan.status == 400 && fan.body.contains("10000 entries"), "\(fan)")
        #expect(Date().timeIntervalSince(started) < 20, "the fan-out took \(Date().timeIntervalSince(started)) s")
        let held = try api.queue.items.count
        #expect(held < 40, "the queue grew: \(held)")

        // The house still plays the ordinary track.
        let ordinary = try api.call("POST", "/queue", json: #"{"paths": ["\#(server.url("/files/noise.mp3"))"], "placement": "now"}"#)
        #expect(ordinary.status == 200, "\(ordinary)")
        #expect(Harness.wait(timeout: 8) {
            guard let now = try? api.nowPlaying else { return false }
            return now.state == .playing && now.path?.hasSuffix("/files/noise.mp3") == true && now.elapsed > 1
        }, "\(String(describing: try? api.nowPlaying)) \(h.log("coordinator").suffix(1500))")
    }

    /// Strangers from eight addresses hold every connection they may, send heads without end
    /// and 100 KB targets, and keep ordinary keep-alive connections open; the owner is
    /// answered within a second every time. They spend no pairing code, and a web page's
    /// token-less POSTs do not lock the owner's own address out.
    @Test func strangersCannotLockTheAPINorSpendAPairingCode() throws {
        let h = try Harness("strangers")
        _ = try control.coordinator(h, [Harness.demoSong], ["--loop"])
        let api = try ControlAPI(h)
        let port = try #require(h.controlURL().flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
        let flood = ["python3", Harness.packageRoot + "/bench/lib/flood.py", "--port", "\(port)"]
        let strangers = (2...9).map { "127.0.0.\($0)" }.joined(separator: ",")

        func ownerIsAnswered(_ what: String, seconds: Int) {
            var slow: [String] = []
            for second in 1...seconds {
                Thread.sleep(forTimeInterval: 1)
                let asked = Date()
                let status = (try? api.call("GET", "/status", token: .some(nil)).status) ?? 0
                let took = Date().timeIntervalSince(asked)
                if status != 200 || took > 1 { slow.append("\(second) s: \(status) in \(String(format: "%.2f", took)) s") }
            }
            #expect(slow.isEmpty, "the owner was not answered within a second while strangers \(what): \(slow)")
        }

        // 8 × 16 request heads with 100 KB targets: each answered 431 and closed at once.
        let heads = try h.start("heads", flood + ["--heads", "16", "--head-size", "100000", "--hold", "8", "--sources", strangers])
        ownerIsAnswered("sent 100 KB heads", seconds: 6)
        #expect(heads.wait(timeout: 20) == 0, "\(h.log("heads"))")
        let headsOut = Self.json(h, "heads")
        #expect(headsOut["open_at_end"] as? Int == 0 && (headsOut["answered_431"] as? Int ?? 0) >= 100, "\(headsOut)")

        // 8 × 16 keep-alive connections, reopened as soon as they close, plus 8 × 16 that
        // never finish a head: the owner's connection takes a stranger's at once.
        let squat = try h.start("squat", flood + ["--squat", "16", "--hold", "10", "--sources", strangers])
        let slow = try h.start("slow", flood + ["--connections", "128", "--hold", "10", "--source", "127.0.0.10"])
        Thread.sleep(forTimeInterval: 1)
        ownerIsAnswered("held every connection", seconds: 7)
        #expect(squat.wait(timeout: 20) == 0, "\(h.log("squat"))")
        #expect(slow.wait(timeout: 20) == 0, "\(h.log("slow"))")

        // Ten wrong proofs from each of eight addresses while no code is open, then again with
        // a code open: the code stays open, and the member it was shown for pairs with it.
        let early = try h.run("pair-early", flood + ["--pair", "10", "--sources", strangers])
        #expect(early.out.contains(#""409""#), "\(early)")
        let code = try #require(try? JSONDecoder().decode(PairingCode.self, from: Data(try api.call("POST", "/pairing").body.utf8)))
        let others = (11...18).map { "127.0.0.\($0)" }.joined(separator: ",")
        let wrong = try h.run("pair-wrong", flood + ["--pair", "12", "--sources", others])
        #expect(wrong.out.contains(#""403": 80"#) && !wrong.out.contains(#""200""#), "ten tries each, then no more: \(wrong)")
        let paired = try h.run("pair", [Harness.binary, "pair", code.code, "--server", try #require(h.controlURL()),
                                        "--name", "kitchen", "--key", h.path("kitchen/house.key")])
        #expect(paired.code == 0, "the member could not pair after the strangers' tries: \(paired)")

        // Thirty token-less POSTs from the owner's own address (a web page it visited): the
        // owner's next change goes through.
        let page = try h.run("page", flood + ["--tokenless", "30"])
        #expect(page.out.contains(#""401": 30"#), "\(page)")
        #expect(try api.call("PUT", "/volume", json: #"{"volume": 50}"#).status == 200)
        #expect(!h.log("coordinator").contains("Fatal error"))
    }

    static func json(_ h: Harness, _ name: String) -> [String: Any] {
        let text = (try? String(contentsOfFile: h.path(name + ".out"), encoding: .utf8)) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }
}
}
