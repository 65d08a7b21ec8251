import ArgumentParser
import Foundation
import TuttiDiscovery
import TuttiNode

/// For `tutti lyrics` and `tutti ctl` given no address: the coordinator announced on the
/// network, when there is one; nil when none is (or avahi-daemon is not running), for the
/// local default; an error that lists them when there are several of other houses.
enum Discovered {
    static func coordinator(houseKeyPath: String? = nil, stateDirectory: String) throws -> Discovery.Found? {
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
        case let .failure(several): throw ValidationError(several.description)
        }
    }
}
