import ArgumentParser
import Foundation
import TuttiCore
import TuttiFollower
import TuttiNet
import TuttiNode
import TuttiSecurity
import TuttiTrust
import TuttiWeb

/// `tutti pair CODE`: makes this machine a member of a house, with the one-time code its
/// coordinator shows (`tutti ctl pair`): the house key arrives sealed (X25519, AES-GCM) and
/// is kept in this machine's state folder.
struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Join a house with the code its coordinator shows (`tutti ctl pair` there): fetches the house key.")

    @Argument(help: "The pairing code, e.g. 7KQ2M-9XD4R (case, dashes and spaces do not matter).")
    var code: String

    @Option(help: "The coordinator's control API, http://HOST:PORT or https://HOST:PORT (default: $TUTTI_SERVER; else http://127.0.0.1:8485 on the coordinator's own machine; else the coordinator announced on the network). Over HTTPS without a pin any certificate is taken: the exchange proves itself with the code.")
    var server: String?

    @OptionGroup var tls: TLSOptions

    @Option(help: "Where to keep the house key (default: house.key in the state folder: $TUTTI_STATE_DIR, else ~/.local/state/tutti).")
    var key: String?

    @Flag(help: "Replace a house key already there (this machine then leaves its old house).")
    var replace = false

    @Option(help: "The name this machine joins as: its room's (the follower's --name; default: the host's name). Its own credential is kept for that room.")
    var name: String?

    func run() throws {
        guard let pairing = Pairing.Follower(code: code) else {
            throw ValidationError("'\(code)' is not a pairing code: 10 letters and digits, as `tutti ctl pair` shows them")
        }
        let path = key ?? StateStore.houseKeyPath(in: StateStore.defaultDirectory())
        let existing = FileManager.default.fileExists(atPath: path) ? try? StateStore.readHouseKey(path: path) : nil
        if FileManager.default.fileExists(atPath: path), !replace {
            throw CtlFailure(description: "there is a house key at \(path) already\(existing.map { " (fingerprint \($0.fingerprint))" } ?? ""): "
                                  + "add --replace to join another house")
        }
        let url = try Discovered.controlURL(server: server, stateDirectory: StateStore.defaultDirectory(), clock: SystemClock())
        // The answer is proved with the code (a coordinator that does not know it cannot make
        // one), so the certificate needs no checking here unless the user pinned one.
        let http = try tls.client(url: url, stateDirectory: StateStore.defaultDirectory(), fallback: .any)
        let response: HTTPClient.Response
        do {
            response = try http.request("POST", "/api/v1/pair", headers: ["Content-Type": "application/json"],
                                        body: Array(try JSONEncoder().encode(pairing.request(name: memberName))))
        } catch {
            throw CtlFailure(description: "cannot reach the coordinator at \(url): \(error) (see --server)")
        }
        guard response.status == 200 else {
            let message = (try? JSONDecoder().decode([String: String].self, from: Data(response.body)))?["error"]
            throw CtlFailure(description: "the coordinator refused: \(message ?? "status \(response.status)")")
        }
        guard let answer = try? JSONDecoder().decode(PairingAnswer.self, from: Data(response.body)) else {
            throw CtlFailure(description: "the coordinator's answer is not a pairing answer")
        }
        let houseKey: HouseKey, member: MemberKey?
        do {
            (houseKey, member) = try pairing.open(answer)
        } catch {
            throw CtlFailure(description: "the answer did not prove it came from the coordinator that showed this code: "
                             + "refused (is someone in between?)")
        }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try StateStore.writeHouseKey(houseKey, to: path)
        var own = ""
        if let member {
            let memberPath = StateFolder.memberKeyPath(in: (path as NSString).deletingLastPathComponent, name: memberName,
                                                       house: houseKey.fingerprint)
            try StateFolder.writeMemberKey(member, to: memberPath)
            own = "; member \(member.id) for '\(memberName)', its credential in \(memberPath)"
        }
        print("paired: this machine is a member of the house at \(url) (key fingerprint \(houseKey.fingerprint), kept in \(path)\(own))")
    }

    /// The room's name, as the follower names itself by default.
    private var memberName: String { name ?? Follower.Configuration().name }
}
