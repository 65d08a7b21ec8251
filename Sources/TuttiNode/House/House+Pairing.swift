import TuttiAPI
import TuttiControl
import TuttiCore
import TuttiSecurity
import TuttiTrust

/// Pairing new members (TuttiSecurity's `Pairing`): a code shown on request, one pairing
/// per code; wrong proofs cost the sender's address its share and the code one of its
/// thousand tries.
extension House {
    public func openPairing() throws(ControlError) -> PairingCode {
        let code = Pairing.newCode()
        pairing.open(Pairing.normalize(code)!, at: clock.nanosecondsNow())
        log.info("pairing code \(code): for one new member, for 5 minutes (on it: tutti pair \(code) --server http://THIS-HOST:PORT)")
        return PairingCode(code: code, expiresInSeconds: Int(PairingWindow.lifetime / 1_000_000_000), tries: PairingWindow.tries)
    }

    public func pair(_ request: PairingRequest) throws(ControlError) -> PairingAnswer {
        let code: String
        switch pairing.state(at: clock.nanosecondsNow()) {
        case .closed:
            throw ControlError.conflict("no pairing code is open: show one with `tutti ctl pair` (or the web remote) first")
        case .expired:
            throw ControlError.conflict("the pairing code expired (they last 5 minutes): show a new one with `tutti ctl pair`")
        case let .open(open, _):
            code = open
        }
        do throws(Pairing.Failure) {
            let answer = try Pairing.answer(request, code: code, houseKey: houseKey)
            pairing.used()
            log.info("a new member paired (house key fingerprint \(houseKey.fingerprint)); the code is spent")
            return answer
        } catch {
            guard case let .malformed(message) = error else { return try refuseWrongCode() }
            throw ControlError.badRequest(message)
        }
    }

    /// A wrong proof costs the code a try; at none it is spent.
    private func refuseWrongCode() throws(ControlError) -> PairingAnswer {
        let left = pairing.failed()
        log.warning("a pairing attempt with a wrong code; \(left == 0 ? "the code is spent" : "\(left) tries left")")
        throw ControlError(status: 403, left == 0 ? "wrong pairing code; it is spent now: show a new one with `tutti ctl pair`"
                                                  : "wrong pairing code (check it, and that this is the right house)")
    }
}
