import Foundation
import Testing
import TuttiCore
import TuttiNet
import TuttiWeb

extension IntegrationTests {
    /// The control API over HTTPS: with the coordinator's own certificate, checked by its pin,
    /// and with the user's own, checked by a stock client (curl) against it.
    @Suite("The control API over TLS", .timeLimit(.minutes(2)))
    struct TLSTests {
        @Test func theControlAPIServesHTTPSAndClientsCheckTheCertificate() throws {
            let h = try Harness("tls")
            let clock = "127.0.0.1:\(Harness.freePort())"
            try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--loop", "--multicast", "off", "--clock-listen", clock, "--tls"])
            let url = try #require(h.controlURL())
            #expect(url.hasPrefix("https://127.0.0.1:"))
            // A client that connects and says nothing is let go, TLS or not.
            let port = try #require(UInt16(url.split(separator: ":").last ?? ""))
            let silentSince = Date()
            let silent = ClosingWatch(try TCPConnection(host: "127.0.0.1", port: port, timeout: 20))

            // The certificate is made once, its key readable by the owner only; the log shows its pin.
            #expect((try FileManager.default.attributesOfItem(atPath: h.path("state/tls/key.pem"))[.posixPermissions] as? Int) == 0o600)
            let log = h.log("coordinator")
            let pin = try #require(log.range(of: #"certificate pin SHA256:[A-Za-z0-9+/]+"#, options: .regularExpression)
                .map { String(log[$0].dropFirst("certificate pin ".count)) })
            // The same pin as OpenSSL computes it (SHA-256 of the DER SubjectPublicKeyInfo).
            let openssl = try h.run("openssl-pin", ["sh", "-c", "openssl x509 -in \(h.path("state/tls/certificate.pem")) -pubkey -noout"
                                                    + " | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"])
            #expect("SHA256:" + openssl.out.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "=", with: "") == pin)

            // `tutti ctl` where the coordinator keeps its state trusts its certificate by itself.
            let status = try h.ctl(["status", "--json"], server: url)
            #expect(status.code == 0 && status.out.contains("\"nowPlaying\""), "\(status.err)")
            let paused = try h.ctl(["pause"], server: url)
            #expect(paused.code == 0 && paused.out.contains("paused"), "\(paused.err)")
            // Elsewhere, with the pin from the log; by name too (the certificate is for localhost).
            let elsewhere = ["--state-dir", h.path("elsewhere")]
            let pinned = try h.ctl(["status", "--json", "--tls-pin", pin] + elsewhere, server: url.replacingOccurrences(of: "127.0.0.1", with: "localhost"))
            #expect(pinned.code == 0 && pinned.out.contains("\"nowPlaying\""), "\(pinned.err)")
            // Without the pin, or with another one, or in plain HTTP: refused, and told why.
            let unknown = try h.ctl(["status"] + elsewhere, server: url)
            #expect(unknown.code != 0 && unknown.err.contains("not signed by this machine's certificate authorities")
                    && unknown.err.contains("--tls-pin"), "\(unknown.err)")
            let otherPin = try h.ctl(["status", "--tls-pin", "SHA256:" + String(repeating: "A", count: 43)] + elsewhere, server: url)
            #expect(otherPin.code != 0 && otherPin.err.contains("not the pinned one"), "\(otherPin.err)")
            let plain = try h.ctl(["status"], server: url.replacingOccurrences(of: "https://", with: "http://"))
            #expect(plain.code != 0 && plain.err.contains("use https://"), "\(plain.err)")

            // A stock client: curl trusts the certificate file, and by name and address.
            for host in ["localhost", "127.0.0.1"] {
                let curl = try h.run("curl-\(host)", ["curl", "-sS", "--max-time", "5", "--cacert", h.path("state/tls/certificate.pem"),
                                                       url.replacingOccurrences(of: "127.0.0.1", with: host) + "/api/v1/now-playing"])
                #expect(curl.code == 0 && curl.out.contains("\"title\":\"Tutti\""), "curl to \(host): \(curl.err)")
            }
            let untrusting = try h.run("curl-untrusting", ["curl", "-sS", "--max-time", "5", url + "/api/v1/now-playing"])
            #expect(untrusting.code == 60, "curl without the certificate: \(untrusting.code) \(untrusting.err)")

            // The event stream over WSS, and pairing over HTTPS (any certificate: the code proves the exchange).
            let follow = try h.start("follow", [Harness.binary, "ctl", "status", "--follow", "--json", "--server", url])
            Thread.sleep(forTimeInterval: 0.5)
            #expect(try h.ctl(["play"], server: url).code == 0)
            #expect(Harness.wait(timeout: 5) {
                ((try? String(contentsOfFile: h.path("follow.out"), encoding: .utf8)) ?? "").contains(#""state":"playing""#)
            })
            follow.terminate(grace: 1)
            let shown = try h.ctl(["pair", "--json"], server: url)
            let code = try #require((try? JSONDecoder().decode(PairingCode.self, from: Data(shown.out.utf8)))?.code, "\(shown)")
            let paired = try h.run("pair", [Harness.binary, "pair", code, "--server", url, "--key", h.path("pi/house.key")])
            #expect(paired.code == 0 && paired.out.contains("paired"), "\(paired.out) \(paired.err)")

            // A browser that accepts the certificate by its pin: the web remote steers the house
            // over HTTPS and follows it over WSS.
            if Browser.available {
                let token = try #require(h.token)
                let browser = try Browser(h, url: url + "/#token=" + token, width: 420, height: 900, trusting: pin)
                func js(_ code: String) throws -> Any? { try browser.evaluate(code) }
                func state() -> String? { (try? js("document.getElementById('toggle').dataset.state")) as? String }
                #expect(Harness.wait(timeout: 10) { (try? js("document.getElementById('title').textContent")) as? String == "Tutti" })
                #expect(Harness.wait(timeout: 5) { state() == "playing" })
                _ = try js("document.getElementById('toggle').click()")
                #expect(Harness.wait(timeout: 3) { (try? h.ctl(["status", "--json"], server: url).out.contains(#""state" : "paused""#)) == true },
                        "pause from the remote over HTTPS")
                #expect(try h.ctl(["play"], server: url).code == 0)
                #expect(Harness.wait(timeout: 3) { state() == "playing" }, "the remote followed the event stream over WSS")
                try browser.screenshot("remote-tls")
            }

            // The silent connection was closed at the first request's deadline (10 s), as its
            // own thread saw it (the browser's steps above can outlast it on a busy machine).
            let closed = try #require(silent.wait(timeout: 20), "a silent TLS connection was still open after 20 s")
            let held = closed.at.timeIntervalSince(silentSince)
            #expect(closed.bytes == [] && held > 8 && held < 13, "a silent TLS connection was held \(held) s and gave \(String(describing: closed.bytes))")
            h.stop("coordinator")

            // The user's own certificate and key (here OpenSSL's, RSA), and a key that is not its.
            let made = try h.run("openssl-req", ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                                                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                                                 "-keyout", h.path("own.key"), "-out", h.path("own.pem")])
            #expect(made.code == 0, "\(made.err)")
            let clock2 = "127.0.0.1:\(Harness.freePort())"
            try h.tutti("own", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock2,
                                "--tls-certificate", h.path("own.pem"), "--tls-key", h.path("own.key")])
            let ownURL = try #require(h.controlURL("own"))
            let curl = try h.run("curl-own", ["curl", "-sS", "--max-time", "5", "--cacert", h.path("own.pem"), ownURL + "/api/v1/now-playing"])
            #expect(curl.code == 0 && curl.out.contains("\"title\":\"Tutti\""), "\(curl.err)")
            let byAuthority = try h.ctl(["status", "--tls-ca", h.path("own.pem")] + elsewhere, server: ownURL)
            #expect(byAuthority.code == 0, "\(byAuthority.err)")
            h.stop("own")

            let mismatched = try h.run("mismatched", [Harness.binary, "coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock2,
                                                      "--control-listen", "127.0.0.1:0", "--tls-certificate", h.path("own.pem"),
                                                      "--tls-key", h.path("state/tls/key.pem")])
            #expect(mismatched.code != 0 && mismatched.err.contains("the private key is not the certificate's"), "\(mismatched.err)")
        }
    }
}

/// A connection read on a thread of its own from the start: when the other side closed it
/// is stamped there, not when a test gets round to looking.
final class ClosingWatch: @unchecked Sendable {
    private let lock = NSLock()
    /// What the read gave (nil: it failed, a timeout among them), and when.
    private var outcome: (bytes: [UInt8]?, at: Date)?

    init(_ connection: TCPConnection) {
        nonisolated(unsafe) let connection = connection
        startThread("tutti-test-watch") { [self] in
            let bytes = try? connection.read(1)
            lock.withLock { outcome = (bytes, Date()) }
        }
    }

    /// The read's outcome once it has one, waiting up to `timeout` seconds; nil if it has none.
    func wait(timeout: Double) -> (bytes: [UInt8]?, at: Date)? {
        var result: (bytes: [UInt8]?, at: Date)?
        _ = Harness.wait(timeout: timeout) {
            result = lock.withLock { outcome }
            return result != nil
        }
        return result
    }
}
