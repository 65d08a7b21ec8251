import ArgumentParser
import Foundation
import TuttiNet
import TuttiNode
import TuttiSecurity
import TuttiTrust
import TuttiWeb

/// How a client of the control API (`tutti ctl`, `tutti pair`, `tutti lyrics`) trusts a
/// coordinator that serves HTTPS (`--server https://…`).
struct TLSOptions: ParsableArguments {
    @Option(help: "For an https:// server: trust only a certificate with this public key pin, SHA256:… as the coordinator's log shows it (default: $TUTTI_TLS_PIN; else the coordinator's own certificate when its state folder is here; else the system's authorities).")
    var tlsPin: String?

    @Option(help: "For an https:// server: trust the certificates in this PEM file (a CA's, or the coordinator's tls/certificate.pem) instead of the system's authorities.")
    var tlsCa: String?

    /// A client for the control API at `url` (`--server`), checking the server as `apply` says.
    func client(url: String, stateDirectory: String, fallback: TLSTrust = .system) throws -> HTTPClient {
        var http: HTTPClient
        do {
            http = try HTTPClient(url: url, defaultPort: 8485)
        } catch {
            throw ValidationError("--server: \(error)")
        }
        try apply(to: &http, stateDirectory: stateDirectory, fallback: fallback)
        return http
    }

    /// Sets how `client` checks the server. Without a pin or a file: the certificate in the
    /// state folder `stateDirectory` if there is one (the coordinator is on this machine),
    /// else `fallback`.
    private func apply(to client: inout HTTPClient, stateDirectory: String, fallback: TLSTrust = .system) throws {
        guard client.tls != nil else {
            if tlsPin != nil || tlsCa != nil { throw ValidationError("--tls-pin and --tls-ca are for an https:// server") }
            return
        }
        if let pin = tlsPin ?? ProcessInfo.processInfo.environment["TUTTI_TLS_PIN"].flatMap({ $0.isEmpty ? nil : $0 }) {
            client.tls = Self.pinned(pin, source: "--tls-pin")
        } else if let tlsCa {
            guard FileManager.default.isReadableFile(atPath: tlsCa) else { throw ValidationError("--tls-ca: cannot read \(tlsCa)") }
            client.tls = .authorities(file: tlsCa)
        } else if let pem = FileManager.default.contents(atPath: StateStore.certificatePath(in: stateDirectory)),
                  let pin = try? ControlCertificate.pin(certificatePEM: String(decoding: pem, as: UTF8.self)) {
            client.tls = Self.pinned(pin, source: StateStore.certificatePath(in: stateDirectory))
        } else {
            client.tls = fallback
        }
    }

    static func pinned(_ pin: String, source: String) -> TLSTrust {
        .publicKey(pin: "\(pin) from \(source)") { key in
            ControlCertificate.pinsMatch(pin, ControlCertificate.pin(subjectPublicKeyInfo: key))
        }
    }
}
