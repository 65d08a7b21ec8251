import ArgumentParser
import Foundation
import TuttiCore
import TuttiDiscovery
import TuttiNet
import TuttiNode
import TuttiSecurity

/// For `tutti lyrics`, `tutti ctl`, `tutti mpris` and `tutti pair` given no address: the
/// coordinator announced on the network, when there is one; nil when none is (or
/// avahi-daemon is not running), for the local default; an error that lists them when
/// there are several of other houses.
enum Discovered {
    /// `option` is what gives an address instead, for the message that lists several.
    /// A client that holds the house key (a member) or its token (a controller) takes only a
    /// coordinator that proves itself with it (docs/security.md, "Discovery"): it never sends
    /// its token to one that does not.
    /// `clock`: the program's, for the search's deadline.
    static func coordinator(houseKeyPath: String? = nil, token: String? = nil, stateDirectory: String, option: String,
                            clock: any MonotonicClock) throws -> Discovery.Found? {
        let keyPath = houseKeyPath ?? stateDirectory + "/house.key"
        let key = try? StateStore.readHouseKey(path: keyPath)
        let found: [Discovery.Found]
        do {
            found = try Discovery.browse(timeout: 2, clock: clock)
        } catch {
            return nil
        }
        switch Discovery.choose(found, houseKey: key?.fingerprint, proven: proof(key: key, token: token)) {
        case let .success(one): return one
        case .failure(.none): return nil
        case let .failure(refusal): throw ValidationError(refusal.description(naming: option))
        }
    }

    /// Whether an announcement proves itself with the house key or the token, whichever the
    /// client holds; nil when it holds neither (it sends nothing secret: a screen reads what
    /// anyone may, `tutti pair` proves itself with its code).
    static func proof(key: HouseKey?, token: String?) -> ((Discovery.Found) -> Bool)? {
        let proofs = (key.map { [("proof", DiscoveryProof(houseKey: $0))] } ?? [])
            + (token.map { [("proof-token", DiscoveryProof(token: $0))] } ?? [])
        guard !proofs.isEmpty else { return nil }
        return { found in proofs.contains { record, proof in found.proves(record, with: proof.verifies) } }
    }

    /// The control API to talk to: `--server`, else `$TUTTI_SERVER`; else this machine's
    /// coordinator when its state folder is here (its token is); else the coordinator
    /// announced on the network; else http://127.0.0.1:8485.
    /// `token`: the one the client will send (a coordinator found must prove it knows it).
    static func controlURL(server: String?, token: String? = nil, stateDirectory: String, clock: any MonotonicClock) throws -> String {
        if let server = server ?? ProcessInfo.processInfo.environment["TUTTI_SERVER"] { return server }
        if StateStore.readToken(directory: stateDirectory) == nil,
           let announced = try coordinator(token: token, stateDirectory: stateDirectory, option: "--server http://HOST:PORT", clock: clock)?.controlURL {
            return announced
        }
        return "http://127.0.0.1:8485"
    }
}
