import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiSecurity
import TuttiTrust

/// Pairing new members (TuttiSecurity's `Pairing`): a code shown on request, one pairing
/// per code; a wrong proof costs its sender one of its ten tries of the code (and one of
/// its ten wrong tokens or codes a minute), and the code one of its 100,000.
extension House {
    public func openPairing() throws(ControlError) -> PairingCode {
        let code = Pairing.newCode()
        pairing.open(Pairing.normalize(code)!, at: clock.nanosecondsNow())
        log.info("pairing code \(code): for one new member, for 5 minutes (on it: tutti pair \(code) --server http://THIS-HOST:PORT)")
        return PairingCode(code: code, expiresInSeconds: Int(PairingWindow.lifetime / 1_000_000_000), tries: PairingWindow.tries)
    }

    public func pair(_ request: PairingRequest, from sender: String) throws(ControlError) -> PairingAnswer {
        let code: String
        switch pairing.state(at: clock.nanosecondsNow()) {
        case .closed:
            throw ControlError.conflict("no pairing code is open: show one with `tutti ctl pair` (or the web remote) first")
        case .expired:
            throw ControlError.conflict("the pairing code expired (they last 5 minutes): show a new one with `tutti ctl pair`")
        case let .open(open, _):
            guard pairing.admits(sender) else {
                throw ControlError(status: 429, "\(PairingWindow.triesPerSender) wrong proofs of this pairing code came from \(sender): "
                                   + "it takes no more from there (show a new code with `tutti ctl pair`)")
            }
            code = open
        }
        do throws(Pairing.Failure) {
            let name = String((request.name ?? "").trimmingWhitespace().prefix(ControlMessage.maximumNameBytes))
            let keyring = keyring
            var made: MemberKey?
            let answer = try Pairing.answer(request, code: code, houseKey: houseKey) {
                made = keyring.add(name: name.isEmpty ? "paired machine" : name, viaPairing: true)
                return made
            }
            pairing.used()
            let who = made.map { ": member \($0.id) ('\(name)', credential \($0.fingerprint))" }
                ?? " (the house has all the members it takes: it holds the house key only)"
            log.info("a new member paired\(who); the code is spent")
            return answer
        } catch {
            guard case let .malformed(message) = error else { return try refuseWrongCode(from: sender) }
            throw ControlError.badRequest(message)
        }
    }

    public func members() -> MembersView {
        MembersView(enrolment: keyring.enrolmentOpen, keyGeneration: keyring.streamInUse.generation, members: keyring.members.map {
            .init(id: Int($0.id), name: $0.name, room: $0.room, added: $0.added, fingerprint: $0.fingerprint, keyGeneration: $0.holds)
        })
    }

    public func revokeMember(_ member: String) throws(ControlError) -> MembersView {
        CoordinatorMetrics.shared.command("member-revoke")
        let all = keyring.members
        let found = UInt16(member).flatMap { id in all.first { $0.id == id } }
            ?? all.first { $0.name == member } ?? all.first { $0.room == member }
        guard let found, keyring.revoke(member: found.id) else {
            throw .notFound("no member '\(member)': the members are \(all.map { "\($0.id) (\($0.name))" }.joined(separator: ", "))")
        }
        log.info("revoked member \(found.id) ('\(found.name)'\(found.room.map { ", room '\($0)'" } ?? "")): its key is forgotten, "
                 + "enrolment by the house key is closed, and the stream moves to a new key once the other members hold it")
        if let room = found.room { messenger.forget(rooms: [room]) }
        return members()
    }

    public func setEnrolment(_ open: Bool) -> MembersView {
        keyring.setEnrolment(open)
        log.info("enrolment by the house key \(open ? "open: any holder of the house key may join" : "closed: new members pair")")
        return members()
    }

    /// A wrong proof costs its sender and the code a try each; at none the code is spent.
    private func refuseWrongCode(from sender: String) throws(ControlError) -> PairingAnswer {
        let left = pairing.failed(by: sender)
        let spent = pairing.state(at: clock.nanosecondsNow()) == .closed
        log.warning("a pairing attempt from \(sender) with a wrong code; "
                    + (spent ? "the code is spent" : "\(left) tries left from there"))
        throw ControlError(status: 403, spent ? "wrong pairing code; it is spent now: show a new one with `tutti ctl pair`"
                                              : "wrong pairing code (check it, and that this is the right house): \(left) tries left from this address")
    }
}
