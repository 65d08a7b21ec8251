import ArgumentParser
import Foundation
import TuttiDiscovery
import TuttiNode

/// For `tutti lyrics`, `tutti ctl`, `tutti mpris` and `tutti pair` given no address: the
/// coordinator announced on the network, when there is one; nil when none is (or
/// avahi-daemon is not running), for the local default; an error that lists them when
/// there are several of other houses.
enum Discovered {
    /// `option` is what gives an address instead, for the message that lists several.
    static func coordinator(houseKeyPath: String? = nil, stateDirectory: String, option: String) throws -> Discovery.Found? {
        let keyPath = houseKeyPath ?? stateDirectory + "/house.key"
        let fingerprint = (try? StateStore.readHouseKey(path: keyPath))?.fingerprint
        let found: [Discovery.Found]
        do {
            found = try Discovery.browse(timeout: 2)
        } catch {
            return nil
        }
        switch Discovery.choose(found, houseKey: fingerprint) {
        case let .success(one): return one
        case .failure(.none): return nil
        case let .failure(several): throw ValidationError(several.description(naming: option))
        }
    }

    /// The control API to talk to: `--server`, else `$TUTTI_SERVER`; else this machine's
    /// coordinator when its state folder is here (its token is); else the coordinator
    /// announced on the network; else http://127.0.0.1:8485.
    static func controlURL(server: String?, stateDirectory: String) throws -> String {
        if let server = server ?? ProcessInfo.processInfo.environment["TUTTI_SERVER"] { return server }
        if StateStore.readToken(directory: stateDirectory) == nil,
           let announced = try coordinator(stateDirectory: stateDirectory, option: "--server http://HOST:PORT")?.controlURL {
            return announced
        }
        return "http://127.0.0.1:8485"
    }
}
