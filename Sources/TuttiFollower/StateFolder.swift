import FoundationEssentials
import TuttiNet
import TuttiSecurity

/// The folder where a tutti process keeps what it must remember: the house key (every
/// member), the coordinator's house, a follower's clock. `--state-dir`, else
/// `$TUTTI_STATE_DIR`, else `$XDG_STATE_HOME/tutti` or `~/.local/state/tutti`
/// (`/var/lib/tutti` for root).
public enum StateFolder {
    /// The default folder, from `environment` (this process's when nil).
    public static func path(environment: [String: String]? = nil) -> String {
        let value = { (name: String) -> String? in environment.map { $0[name] } ?? System.environment(name) }
        if let dir = value("TUTTI_STATE_DIR"), !dir.isEmpty { return dir }
        if let xdg = value("XDG_STATE_HOME"), !xdg.isEmpty { return xdg + "/tutti" }
        if System.isRoot { return "/var/lib/tutti" }
        return (value("HOME") ?? System.homeOfUser()) + "/.local/state/tutti"
    }

    /// Where the house key lives in `folder`.
    public static func houseKeyPath(in folder: String) -> String { folder + "/house.key" }

    /// The house key in the file at `path`, or an error that says how to get one.
    public static func readHouseKey(path: String) throws(HouseKeyFileError) -> HouseKey {
        guard let bytes = Files.read(path, limit: 4096) else {
            throw HouseKeyFileError("no house key at \(path): this machine is not a member of a house. Pair it: run `tutti ctl pair` "
                                    + "on the coordinator's machine, then here `tutti pair CODE --server http://COORDINATOR:8485`; or copy "
                                    + "house.key from the coordinator's state folder to \(path) (readable by this user only)")
        }
        guard let key = HouseKey(hex: String(decoding: bytes.prefix(256), as: UTF8.self)) else {
            throw HouseKeyFileError("\(path) is not a house key (64 hexadecimal digits); pair this machine again (`tutti pair`)")
        }
        return key
    }

    /// Where a member's own credential in the house whose key has `fingerprint` lives in
    /// `folder`: one per room (several followers may share a folder) and per house (a
    /// machine that joins another house, or a reinstalled coordinator's, enrols anew there
    /// and keeps what it had), or the screen's.
    public static func memberKeyPath(in folder: String, name: String, house fingerprint: String) -> String {
        folder + "/member-\(safeName(name)).\(safeName(fingerprint)).key"
    }

    /// Where a member's credential lived before credentials were kept per house: which
    /// house it is of is not known (`readMemberKey(in:name:house:)` tries it).
    public static func legacyMemberKeyPath(in folder: String, name: String) -> String {
        folder + "/member-\(safeName(name)).key"
    }

    private static func safeName(_ name: String) -> String {
        String(name.unicodeScalars.prefix(64).map { scalar -> Character in
            let kept = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_"
            return kept ? Character(scalar) : "_"
        })
    }

    /// This member's credential in the house whose key has `fingerprint`: the one kept for
    /// that house, else one kept before credentials were per house (`legacy`: its path, to be
    /// tried: the coordinator's answers tell whether it is this house's), else none.
    public static func readMemberKey(in folder: String, name: String, house fingerprint: String)
        throws(HouseKeyFileError) -> (key: MemberKey?, legacy: String?) {
        if let key = try readMemberKey(path: memberKeyPath(in: folder, name: name, house: fingerprint)) { return (key, nil) }
        let legacy = legacyMemberKeyPath(in: folder, name: name)
        guard let key = try? readMemberKey(path: legacy) else { return (nil, nil) }
        return (key, legacy)
    }

    /// The member credential at `path`, nil when there is none; a file that is not one is
    /// said so in the error.
    public static func readMemberKey(path: String) throws(HouseKeyFileError) -> MemberKey? {
        guard let bytes = Files.read(path, limit: 4096) else { return nil }
        guard let key = MemberKey(text: String(decoding: bytes.prefix(256), as: UTF8.self)) else {
            throw HouseKeyFileError("\(path) is not a member credential (`tutti member ID HEX`); delete it to enrol again, or pair again")
        }
        return key
    }

    /// Saves a member credential, readable by its owner only, atomically.
    public static func writeMemberKey(_ key: MemberKey, to path: String) throws {
        try AtomicFile.write(Data(key.text.utf8), to: path, permissions: 0o600)
    }
}

/// A house key file that is missing or is not a key.
public struct HouseKeyFileError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
