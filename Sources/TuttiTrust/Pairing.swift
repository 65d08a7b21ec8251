import Crypto
import FoundationEssentials
import TuttiCore
import TuttiSecurity

/// Pairing: a new member gets the house key over the control API with a one-time code the
/// coordinator shows, instead of a copied file.
///
/// 1. The follower makes an X25519 key pair and sends its public key with a proof that it
///    knows the code: HMAC-SHA256 over "follower" ‖ its public key, keyed by the code.
/// 2. The coordinator checks the proof (a wrong one costs the code one of its tries), makes
///    its own X25519 key pair, and answers with its public key, the house key sealed with
///    AES-GCM under HKDF(the shared secret; salt: the code; info: both public keys), and a
///    proof of its own over both public keys.
/// 3. The follower checks that proof (only the coordinator that showed the code can make
///    it: a stranger in the middle cannot) and opens the house key.
///
/// An eavesdropper sees two public keys: without an X25519 private key it cannot open the
/// house key. The proofs could be tested against guessed codes offline, so the code is long
/// enough that guessing it within its five minutes is hopeless (50 bits), and short enough
/// to type: ten characters of Crockford's base32, shown as two groups of five.
public enum Pairing {
    /// Crockford's base32: no I, L, O, U.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    public static let codeLength = 10

    /// A new one-time code, `XXXXX-XXXXX`.
    public static func newCode() -> String {
        var rng = SystemRandomNumberGenerator()
        let characters = (0..<codeLength).map { _ in alphabet[Int(rng.next(upperBound: UInt8(alphabet.count)))] }
        return String(characters[0..<5]) + "-" + String(characters[5...])
    }

    /// A code as typed (any case, dashes and spaces, O for 0, I and L for 1) in its plain
    /// form, or nil when it cannot be one.
    public static func normalize(_ typed: String) -> String? {
        var out: [Character] = []
        for c in typed.uppercased() where c != "-" && c != " " {
            let mapped: Character = switch c {
            case "O": "0"
            case "I", "L": "1"
            default: c
            }
            guard alphabet.contains(mapped) else { return nil }
            out.append(mapped)
        }
        return out.count == codeLength ? String(out) : nil
    }

    public enum Failure: Error, Equatable, Sendable {
        case malformed(String)
        /// The other side does not know this code (or what it sent was changed on the way).
        case wrongCode
    }

    /// The follower's side of one pairing.
    public struct Follower: Sendable {
        private let privateKey = Curve25519.KeyAgreement.PrivateKey()
        public let code: String

        /// Nil when `code` cannot be a pairing code.
        public init?(code: String) {
            guard let code = Pairing.normalize(code) else { return nil }
            self.code = code
        }

        /// The request, joining as `name`.
        public func request(name: String? = nil) -> PairingRequest {
            let mine = privateKey.publicKey.rawRepresentation
            return PairingRequest(publicKey: mine.base64EncodedString(),
                                  proof: Data(Pairing.proof(code: code, "follower", [Array(mine)])).base64EncodedString(), name: name)
        }

        public var request: PairingRequest { request() }

        /// The house key and this machine's own credential (nil from a coordinator before
        /// members had them) from the coordinator's answer, once its proof checks out.
        public func open(_ answer: PairingAnswer) throws(Failure) -> (house: HouseKey, member: MemberKey?) {
            guard let theirs = Data(base64Encoded: answer.publicKey), let proof = Data(base64Encoded: answer.proof),
                  let sealed = Data(base64Encoded: answer.sealedKey),
                  let coordinator = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: theirs) else {
                throw .malformed("the coordinator's answer is not a pairing answer")
            }
            let mine = Array(privateKey.publicKey.rawRepresentation)
            guard constantTimeEqual(Pairing.proof(code: code, "coordinator", [Array(theirs), mine])[...], Array(proof)[...]) else { throw .wrongCode }
            guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: coordinator),
                  let box = try? AES.GCM.SealedBox(combined: sealed),
                  let bytes = try? AES.GCM.open(box, using: Pairing.sealingKey(shared, code: code, follower: mine, coordinator: Array(theirs))),
                  bytes.count == HouseKey.size || bytes.count == HouseKey.size + 2 + MemberKey.size,
                  let key = HouseKey(bytes: Array(bytes.prefix(HouseKey.size))) else {
                throw .wrongCode
            }
            guard bytes.count > HouseKey.size else { return (key, nil) }
            let rest = Array(bytes.dropFirst(HouseKey.size))
            guard let member = MemberKey(id: UInt16(rest[0]) << 8 | UInt16(rest[1]), secret: Array(rest.dropFirst(2))) else { throw .wrongCode }
            return (key, member)
        }
    }

    /// The coordinator's side: checks a request against the open code; answers it, with the
    /// credential `member` makes (called only once the proof checked out).
    public static func answer(_ request: PairingRequest, code: String, houseKey: HouseKey,
                              member: () -> MemberKey? = { nil }) throws(Failure) -> PairingAnswer {
        guard let theirs = Data(base64Encoded: request.publicKey), let proof = Data(base64Encoded: request.proof),
              let follower = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: theirs) else {
            throw .malformed("not a pairing request: publicKey and proof must be base64 (an X25519 key, an HMAC)")
        }
        guard constantTimeEqual(self.proof(code: code, "follower", [Array(theirs)])[...], Array(proof)[...]) else { throw .wrongCode }
        let privateKey = Curve25519.KeyAgreement.PrivateKey()
        let mine = Array(privateKey.publicKey.rawRepresentation)
        guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: follower) else {
            throw .malformed("the follower's public key is not usable")
        }
        let credential = member()
        let secret = houseKey.bytes + (credential.map { [UInt8($0.id >> 8), UInt8($0.id & 0xFF)] + $0.secret } ?? [])
        guard let sealed = try? AES.GCM.seal(secret, using: sealingKey(shared, code: code, follower: Array(theirs), coordinator: mine)),
              let combined = sealed.combined else {
            throw .malformed("the follower's public key is not usable")
        }
        return PairingAnswer(publicKey: Data(mine).base64EncodedString(), sealedKey: combined.base64EncodedString(),
                             proof: Data(self.proof(code: code, "coordinator", [mine, Array(theirs)])).base64EncodedString(),
                             member: credential?.id)
    }

    static func proof(code: String, _ role: String, _ parts: [[UInt8]]) -> [UInt8] {
        let key = SymmetricKey(data: SHA256.hash(data: Array(("tutti pairing code v1 " + code).utf8)))
        var message = Array(role.utf8)
        for part in parts { message += part }
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }

    static func sealingKey(_ shared: SharedSecret, code: String, follower: [UInt8], coordinator: [UInt8]) -> SymmetricKey {
        shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: Array(code.utf8),
                                       sharedInfo: Array("tutti pairing v1".utf8) + follower + coordinator, outputByteCount: 32)
    }
}
