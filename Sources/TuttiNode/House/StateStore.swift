import Foundation
import TuttiCore

/// Where the coordinator keeps its state: `state.json` (the house: queue, position, rooms,
/// feedback) and `token` (what changes need), in one folder.
///
/// The folder is `--state-dir`, else `$TUTTI_STATE_DIR`, else `$XDG_STATE_HOME/tutti` or
/// `~/.local/state/tutti` (`/var/lib/tutti` for root). `tutti ctl` finds the token the same way.
public final class StateStore: @unchecked Sendable {
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
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let dir = environment["TUTTI_STATE_DIR"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/tutti" }
        if getuid() == 0 { return "/var/lib/tutti" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state/tutti"
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
            let aside = statePath + ".unreadable-\(Int(Date().timeIntervalSince1970))"
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
            .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
            .flatMap { $0.isEmpty ? nil : $0 }
    }
}

public struct StateError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
