import Foundation
import TuttiCore
import TuttiFollower
import TuttiNet
import TuttiSecurity
import TuttiTrust

/// Where the coordinator keeps its state: `state.json` (the house: queue, position, rooms,
/// feedback), `token` (what changes need) and `house.key` (the house's secret, which every
/// member holds), in one folder. A follower or screen keeps its copy of the house key in
/// its own state folder.
///
/// The folder is `--state-dir`, else `$TUTTI_STATE_DIR`, else `$XDG_STATE_HOME/tutti` or
/// `~/.local/state/tutti` (`/var/lib/tutti` for root). `tutti ctl` finds the token the same way.
public final class StateStore: Sendable {
    public let directory: String
    private let log = Log("coordinator")

    public init(directory: String) throws {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StateError("cannot create the state folder \(directory): \(error.localizedDescription) (choose another with --state-dir)")
        }
    }

    public var statePath: String { directory + "/state.json" }
    public var tokenPath: String { Self.tokenPath(in: directory) }
    static func tokenPath(in directory: String) -> String { directory + "/token" }

    /// The default state folder (see the type's documentation).
    public static func defaultDirectory(environment: [String: String]? = nil) -> String {
        StateFolder.path(environment: environment)
    }

    /// The saved house, or nil when there is none. A file that cannot be read is moved aside
    /// (never deleted) and the house starts afresh, saying so.
    public func load() -> HouseState? {
        guard let data = FileManager.default.contents(atPath: statePath) else { return nil }
        do {
            let state = try JSONDecoder().decode(HouseState.self, from: data)
            guard state.version <= HouseState.currentVersion else {
                throw StateError("it was written by a newer tutti (version \(state.version))")
            }
            return state
        } catch {
            let aside = statePath + ".unreadable-\(Int(SystemClock.unixSeconds()))"
            try? FileManager.default.moveItem(atPath: statePath, toPath: aside)
            log.error("cannot read the saved state \(statePath) (\(error)); kept it as \(aside) and starting afresh")
            return nil
        }
    }

    public func save(_ state: HouseState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(state), to: statePath, permissions: 0o600)
    }

    public var houseKeyPath: String { Self.houseKeyPath(in: directory) }
    public static func houseKeyPath(in directory: String) -> String { StateFolder.houseKeyPath(in: directory) }

    /// The house key: read, or made (32 random bytes) and saved on first start.
    public func houseKey() throws -> HouseKey {
        if FileManager.default.fileExists(atPath: houseKeyPath) { return try Self.readHouseKey(path: houseKeyPath) }
        let key = HouseKey.generate()
        try Self.writeHouseKey(key, to: houseKeyPath)
        log.info("made a new house key in \(houseKeyPath) (fingerprint \(key.fingerprint)); followers and screens need a copy")
        return key
    }

    /// Saves a house key (64 hex digits), readable by its owner only.
    public static func writeHouseKey(_ key: HouseKey, to path: String) throws {
        try AtomicFile.write(Data((key.hex + "\n").utf8), to: path, permissions: 0o600)
    }

    /// Reads a house key, or says what is wrong and how to mend it.
    public static func readHouseKey(path: String) throws -> HouseKey {
        do { return try StateFolder.readHouseKey(path: path) } catch { throw StateError(error.description) }
    }

    public var membersPath: String { directory + "/members.json" }

    /// The house's members as last saved (nil: none yet). A file that cannot be read stops
    /// the start: starting afresh would forget who was revoked, and let them back.
    public func loadMembers() throws -> HouseKeyring.Saved? {
        guard let data = FileManager.default.contents(atPath: membersPath) else { return nil }
        do {
            return try JSONDecoder().decode(HouseKeyring.Saved.self, from: data)
        } catch {
            throw StateError("cannot read the house's members \(membersPath) (\(error)); mend it, or move it aside to start "
                             + "with no members (every follower and screen then pairs again, or enrols with the house key)")
        }
    }

    /// Saves the members (their secrets in it: readable by this user only), atomically.
    public func saveMembers(_ members: HouseKeyring.Saved) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            try AtomicFile.write(try encoder.encode(members), to: membersPath, permissions: 0o600)
        } catch {
            log.error("cannot save the house's members to \(membersPath): \(error)")
        }
    }

    /// The house's keyring: the house key, and the members saved in this folder. Every change
    /// is on disk before the call that made it returns (a revocation lost to a crash would
    /// let the member back); the clock service's thread saves only when a member enrols or
    /// first names its room, once in the member's life.
    /// `loadedAt`: now, on the house's monotonic clock (the saved members count as heard then).
    public func keyring(sealsStream: Bool, loadedAt: Int64) throws -> HouseKeyring {
        let key = try houseKey()
        return HouseKeyring(houseKey: key, saved: try loadMembers(), sealsStream: sealsStream, loadedAt: loadedAt,
                            wallClock: { Int64(SystemClock.unixSeconds()) }) { [self] in saveMembers($0) }
    }

    public var certificatePath: String { Self.certificatePath(in: directory) }
    public static func certificatePath(in directory: String) -> String { directory + "/tls/certificate.pem" }
    public var certificateKeyPath: String { directory + "/tls/key.pem" }

    /// The control API's own certificate (for `--tls` without files of the user's): read, or
    /// made on first use for this machine's names and addresses (`tls/certificate.pem`, and
    /// `tls/key.pem` readable by its owner only). Delete the folder to make a new one.
    public func controlCertificate() throws -> ControlCertificate {
        if FileManager.default.fileExists(atPath: certificatePath) {
            return try Self.readCertificate(certificate: certificatePath, key: certificateKeyPath)
        }
        let host = ProcessInfo.processInfo.hostName
        let short = String(host.split(separator: ".").first ?? Substring(host))
        var names = [short, short + ".local", host, "localhost"]
        names = names.enumerated().filter { !$0.element.isEmpty && names.firstIndex(of: $0.element) == $0.offset }.map(\.element)
        let addresses = SocketAddress.interfaceAddresses().map { a in (0..<4).map { UInt8(truncatingIfNeeded: a >> (24 - 8 * $0)) } }
            + [[UInt8](repeating: 0, count: 15) + [1]]
        let certificate = try ControlCertificate.make(names: names, addresses: addresses, now: Date(timeIntervalSince1970: SystemClock.unixSeconds()))
        try FileManager.default.createDirectory(atPath: directory + "/tls", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try AtomicFile.write(Data(certificate.privateKeyPEM.utf8), to: certificateKeyPath, permissions: 0o600)
        try AtomicFile.write(Data(certificate.certificatePEM.utf8), to: certificatePath, permissions: 0o644)
        log.info("made a certificate for the control API in \(certificatePath) for \(names.joined(separator: ", ")) (pin \(certificate.pin))")
        return certificate
    }

    /// Reads a certificate chain and its key (PEM), or says what is wrong with them.
    public static func readCertificate(certificate: String, key: String) throws -> ControlCertificate {
        guard let chain = FileManager.default.contents(atPath: certificate) else { throw StateError("cannot read the certificate \(certificate)") }
        guard let secret = FileManager.default.contents(atPath: key) else { throw StateError("cannot read the private key \(key)") }
        do {
            return try ControlCertificate(certificatePEM: String(decoding: chain, as: UTF8.self), privateKeyPEM: String(decoding: secret, as: UTF8.self))
        } catch {
            throw StateError("\(certificate), \(key): \(error)")
        }
    }

    /// The house token: read, or made (32 random bytes, hex) and saved on first start.
    public func token() throws -> String {
        if let token = Self.readToken(directory: directory), token.count >= 16 { return token }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        try AtomicFile.write(Data((token + "\n").utf8), to: tokenPath, permissions: 0o600)
        log.info("made a new control token in \(tokenPath)")
        return token
    }

    /// Reads a token for `tutti ctl`: from the folder, without making one.
    public static func readToken(directory: String) -> String? {
        FileManager.default.contents(atPath: StateStore.tokenPath(in: directory))
            .map { String(decoding: $0, as: UTF8.self).trimmingWhitespace() }
            .flatMap { $0.isEmpty ? nil : $0 }
    }
}

public struct StateError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
