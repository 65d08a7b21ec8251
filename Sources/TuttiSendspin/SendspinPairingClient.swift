import FoundationEssentials
import TuttiSecurity

/// The player's side of one pairing attempt by a dynamic code (a tutti follower paired by a
/// Sendspin server): it commits to a nonce, derives the code from the session and both
/// nonces and shows it (the follower's log), runs CPace on it, checks the server's proof
/// (a wrong one asks for another round: the operator mistyped), proves its own, and hands
/// over a long-term key it made, wrapped under a key of the run. The mirror of
/// `SendspinPairingServer`, in the reference client's order. Pure.
public struct SendspinPairingClient: Sendable {
    public enum Outcome: Equatable, Sendable {
        case send([String])
        /// The code to show the operator (grouped, `123-456`); `send` goes too.
        case show(code: String, send: [String])
        /// Paired: the long-term key to keep for this server.
        case paired(psk: [UInt8])
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case outOfTurn(String)
        case aborted(String)
        /// Too many rounds of wrong codes (the server is told).
        case mismatch(abort: String)

        public var description: String {
            switch self {
            case let .malformed(why): "a malformed pairing message: \(why)"
            case let .outOfTurn(type): "\(type) out of turn"
            case let .aborted(reason): "the server aborted the pairing (\(reason))"
            case .mismatch: "the code was typed wrong too many times"
            }
        }
    }

    private enum Phase { case started, awaitingAuth, awaitingConfirm, awaitingFinalize, done }

    public let index: UInt32
    private let handshakeHash: [UInt8]
    private let suite: NoiseSuite
    private let nonceB: [UInt8]
    /// The long-term key it hands over.
    public let psk: [UInt8]
    private let scalar: [UInt8]?
    private var phase = Phase.started
    private var round: UInt32 = 1
    private var code: String?
    private var cpace: CPace?
    private var sid: [UInt8] = []

    public init(index: UInt32, handshakeHash: [UInt8], suite: NoiseSuite, nonce: [UInt8]? = nil, psk: [UInt8]? = nil, scalar: [UInt8]? = nil) {
        self.index = index
        self.handshakeHash = handshakeHash
        self.suite = suite
        nonceB = nonce ?? SendspinPairingServer.random(SendspinPairing.nonceSize)
        self.psk = psk ?? SendspinPairingServer.random(32)
        self.scalar = scalar
    }

    /// `client/pair-init`, committing to its nonce.
    public func start() -> String {
        SendspinPairingServer.json(Envelope(type: "client/pair-init", payload: Init(pairing_index: Int(index),
                                                                                  commit_B: Base64URL.encode(SendspinPairing.commitment(to: nonceB)))))
    }

    public mutating func receive(_ text: String) throws(Failure) -> Outcome {
        struct Kind: Decodable { let type: String }
        guard let kind = try? JSONDecoder().decode(Kind.self, from: Data(text.utf8)) else { throw .malformed("not a typed JSON message") }
        switch kind.type {
        case "pair/abort":
            phase = .done
            throw .aborted(String((field(text, "reason") ?? "none given").prefix(64)))
        case "server/pair-init":
            guard phase == .started || phase == .awaitingAuth else { throw .outOfTurn(kind.type) }
            if code == nil {
                guard let nonceA = field(text, "nonce_A").flatMap(Base64URL.decode), nonceA.count == SendspinPairing.nonceSize else {
                    throw .malformed("server/pair-init without a 32-byte nonce_A")
                }
                code = SendspinPairing.dynamicCode(handshakeHash: handshakeHash, serverNonce: nonceA, clientNonce: nonceB)
            }
            phase = .awaitingAuth
            return .show(code: SendspinPairing.grouped(code!) ?? code!, send: [])
        case "server/pair-auth":
            guard phase == .awaitingAuth, let code else { throw .outOfTurn(kind.type) }
            guard let share = field(text, "pake_msg_1").flatMap(Base64URL.decode), share.count == CPace.shareSize else {
                throw .malformed("server/pair-auth without a 32-byte pake_msg_1")
            }
            sid = SendspinPairing.pakeSessionID(handshakeHash: handshakeHash, index: index, round: round)
            do {
                var run = try CPace(role: .responder, prs: Array(code.utf8), sid: sid, ad: Array("client".utf8), scalar: scalar)
                try run.derive(peerShare: share, peerAD: Array("server".utf8))
                cpace = run
                phase = .awaitingConfirm
                return .send([SendspinPairingServer.json(Envelope(type: "client/pair-auth", payload: ["pake_msg_2": Base64URL.encode(run.publicShare)]))])
            } catch {
                throw .malformed("pake_msg_1: \(error)")
            }
        case "server/pair-confirm":
            guard phase == .awaitingConfirm, let run = cpace, let isk = run.isk else { throw .outOfTurn(kind.type) }
            guard let tag = field(text, "server_kc").flatMap(Base64URL.decode), tag.count == CPace.tagSize else {
                throw .malformed("server/pair-confirm without a 64-byte server_kc")
            }
            guard (try? run.verify(tag)) == true else {
                // The operator typed another code: another round, unless there were enough.
                guard round < SendspinPairingServer.rounds else {
                    phase = .done
                    throw .mismatch(abort: SendspinPairingServer.abort("pairing_code_mismatch"))
                }
                round += 1
                cpace = nil
                phase = .awaitingAuth
                return .send([SendspinPairingServer.json(Envelope(type: "client/pair-retry", payload: [String: String]()))])
            }
            let nonce = NoiseCipher.sealOnce(suite: suite, key: SendspinPairing.wrapKey(.nonce, sid: sid, isk: isk), nonceB)
            let key = NoiseCipher.sealOnce(suite: suite, key: SendspinPairing.wrapKey(.psk, sid: sid, isk: isk), psk)
            phase = .awaitingFinalize
            let proof = (try? run.tag()) ?? []
            return .send([
                SendspinPairingServer.json(Envelope(type: "client/pair-confirm", payload: ["client_kc": Base64URL.encode(proof),
                                                                                           "wrapped_nonce_B": Base64URL.encode(nonce)])),
                SendspinPairingServer.json(Envelope(type: "client/pair-finalize", payload: ["wrapped_psk": Base64URL.encode(key)])),
            ])
        case "server/pair-finalize":
            guard phase == .awaitingFinalize else { throw .outOfTurn(kind.type) }
            phase = .done
            return .paired(psk: psk)
        default:
            throw .outOfTurn(kind.type)
        }
    }

    /// Whether a server's text belongs to a pairing attempt.
    public static func isPairingMessage(_ type: String) -> Bool {
        type.hasPrefix("server/pair-") || type == "pair/abort"
    }

    private func field(_ text: String, _ name: String) -> String? { SendspinPairing.field(text, name) }

    private struct Init: Codable {
        let pairing_index: Int
        let commit_B: String
    }
    private struct Envelope<P: Codable>: Codable {
        let type: String
        let payload: P
    }
}
