import FoundationEssentials
import TuttiSecurity

/// The server's side of one Sendspin pairing attempt by code, inside a sealed session: the
/// operator either types the code the player shows (dynamic: six digits both sides derive
/// from the session and a nonce each, the player committed to its own first) or the code
/// the player keeps (static: eight digits). Both sides then run CPace on the code; the
/// server proves it first, the player answers with its proof and hands over the long-term
/// key it made, wrapped under a key of this run alone. The order and the fields are the
/// reference implementation's (aiosendspin 10, `noise/pairing.py`):
///
/// | | dynamic code | static code |
/// | --- | --- | --- |
/// | server | `server/activate` (`pairing`: the method, `digits`) | the same |
/// | player | `client/pair-init` (`pairing_index`, `commit_B`) | `client/pair-init` |
/// | server | `server/pair-init` (`nonce_A`); the player shows the code | |
/// | server | `server/pair-auth` (CPace's first share) once the operator typed the code | the same |
/// | player | `client/pair-auth` (its share) | the same |
/// | server | `server/pair-confirm` (its tag) | the same |
/// | player | `client/pair-confirm` (its tag, its nonce wrapped), or `client/pair-retry` (the tags did not match: another round) | `client/pair-confirm` (its tag) |
/// | player | `client/pair-finalize` (`wrapped_psk`) | the same |
/// | server | `server/pair-finalize` | the same |
///
/// Pure: the shell hands it the player's texts and the operator's code, and sends what it
/// returns; it ends with the key to keep, or a failure (with the `pair/abort` to send, where
/// the player is to be told).
public struct SendspinPairingServer: Sendable {
    public enum Method: String, Sendable, Codable {
        case dynamicCode = "dynamic_pairing_code"
        case staticCode = "static_pairing_code"
        /// By a one-time key the player made, pasted from its token (`SP:0…`): the session
        /// is already opened under it, so the player hands its long-term key over as it is.
        case pairingPSK = "pairing_psk"
    }

    public enum Outcome: Equatable, Sendable {
        /// Texts to send; the attempt goes on.
        case send([String])
        /// The operator's code is needed (`enter`); `send` goes first.
        case awaitingCode(send: [String])
        /// Paired: the player's long-term key, to keep; `send` acknowledges it.
        case paired(psk: [UInt8], send: [String])
        /// The player holds the attempt until its owner allows pairing on it (a button, its
        /// app): what it says of that, if anything. It goes on by itself.
        case pending(message: String?)
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The codes did not match (the player is told with `pair/abort`).
        case mismatch(abort: String)
        /// The operator's code is not one (nothing was sent for it).
        case badCode(String)
        case malformed(String)
        case outOfTurn(String)
        /// The player aborted (its reason).
        case aborted(String)

        public var description: String {
            switch self {
            case .mismatch: "the pairing code did not match"
            case let .badCode(why): why
            case let .malformed(why): "a malformed pairing message: \(why)"
            case let .outOfTurn(type): "\(type) out of turn"
            case let .aborted(reason): "the player aborted the pairing (\(reason))"
            }
        }
    }

    private enum Phase: Equatable {
        case activated, awaitingCode, awaitingAuth, awaitingConfirm, awaitingFinalize, done
    }

    public let method: Method
    /// Which pairing activation of the session this is (the first is 1).
    public let index: UInt32
    private let handshakeHash: [UInt8]
    private let suite: NoiseSuite
    private var phase = Phase.activated
    private var round: UInt32 = 1
    private var code: String?
    private var commitment: [UInt8]?
    private let nonceA: [UInt8]
    private var cpace: CPace?
    private var sid: [UInt8] = []
    private let scalar: [UInt8]?
    /// The one-time key of a pairing by token (the player may not hand it back as its own).
    private let pairingPSK: [UInt8]?

    /// Rounds a player may ask for (a code mistyped on the server) before the attempt ends.
    public static let rounds: UInt32 = 5

    /// An attempt of `method`, the session's `index`th, in a session whose handshake hash is
    /// `handshakeHash` and suite `suite`; `nonce` and `scalar` only for tests.
    public init(method: Method, index: UInt32, handshakeHash: [UInt8], suite: NoiseSuite, pairingPSK: [UInt8]? = nil,
                nonce: [UInt8]? = nil, scalar: [UInt8]? = nil) {
        self.method = method
        self.pairingPSK = pairingPSK
        self.index = index
        self.handshakeHash = handshakeHash
        self.suite = suite
        nonceA = nonce ?? SendspinPairingServer.random(SendspinPairing.nonceSize)
        self.scalar = scalar
    }

    /// The `server/activate` that opens the attempt (no roles: a session that is not paired
    /// carries pairing alone).
    public func activation() -> String {
        Self.json(Envelope(type: "server/activate", payload: Activate(activities: ["pairing"], active_roles: [],
                                                                      pairing: .init(method: method.rawValue,
                                                                                     format: method == .dynamicCode ? "digits" : nil))))
    }

    /// Whether the attempt waits for the operator's code.
    public var awaitsCode: Bool { phase == .awaitingCode }

    /// The operator's code (spaces and hyphens between its groups allowed).
    public mutating func enter(code typed: String) throws(Failure) -> Outcome {
        guard phase == .awaitingCode else { throw .outOfTurn("a pairing code") }
        let digits = SendspinPairing.stripSeparators(typed)
        let length = method == .dynamicCode ? SendspinPairing.dynamicDigits : SendspinPairing.staticDigits
        guard digits.utf8.count == length, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .badCode("a \(method == .dynamicCode ? "dynamic" : "static") pairing code is \(length) digits")
        }
        code = digits
        sid = SendspinPairing.pakeSessionID(handshakeHash: handshakeHash, index: index, round: method == .dynamicCode ? round : 1)
        do {
            let run = try CPace(role: .initiator, prs: Array(digits.utf8), sid: sid, ad: Array("server".utf8), scalar: scalar)
            cpace = run
            phase = .awaitingAuth
            return .send([Self.json(Envelope(type: "server/pair-auth", payload: ["pake_msg_1": Base64URL.encode(run.publicShare)]))])
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// A text of the player's pairing (other messages of the session are not for it:
    /// `isPairingMessage`).
    public mutating func receive(_ text: String) throws(Failure) -> Outcome {
        guard let kind = try? JSONDecoder().decode(Kind.self, from: Data(text.utf8)) else { throw .malformed("not a typed JSON message") }
        switch kind.type {
        case "pair/abort":
            struct Abort: Codable { let reason: String? }
            phase = .done
            let reason = (try? JSONDecoder().decode(Envelope<Abort>.self, from: Data(text.utf8)))?.payload.reason ?? "none given"
            throw .aborted(String(reason.prefix(64)))
        case "client/pair-init":
            guard phase == .activated else { throw .outOfTurn(kind.type) }
            struct Init: Codable { let pairing_index: Int; let commit_B: String? }
            guard let payload = try? JSONDecoder().decode(Envelope<Init>.self, from: Data(text.utf8)).payload else { throw .malformed(kind.type) }
            guard payload.pairing_index == Int(index) else { throw .malformed("client/pair-init for attempt \(payload.pairing_index), not \(index)") }
            switch method {
            case .dynamicCode:
                guard let commit = payload.commit_B.flatMap(Base64URL.decode), commit.count == 32 else {
                    throw .malformed("client/pair-init without a 32-byte commit_B")
                }
                commitment = commit
                phase = .awaitingCode
                return .awaitingCode(send: [Self.json(Envelope(type: "server/pair-init", payload: ["nonce_A": Base64URL.encode(nonceA)]))])
            case .staticCode:
                guard payload.commit_B == nil else { throw .malformed("client/pair-init with commit_B for a static code") }
                phase = .awaitingCode
                return .awaitingCode(send: [])
            case .pairingPSK:
                guard payload.commit_B == nil else { throw .malformed("client/pair-init with commit_B for a pairing key") }
                phase = .awaitingFinalize
                return .send([])
            }
        case "client/pair-auth":
            guard phase == .awaitingAuth, var run = cpace else { throw .outOfTurn(kind.type) }
            guard let share = field(text, "pake_msg_2").flatMap(Base64URL.decode), share.count == CPace.shareSize else {
                throw .malformed("client/pair-auth without a 32-byte pake_msg_2")
            }
            do {
                try run.derive(peerShare: share, peerAD: Array("client".utf8))
                cpace = run
                phase = .awaitingConfirm
                return .send([Self.json(Envelope(type: "server/pair-confirm", payload: ["server_kc": Base64URL.encode(try run.tag())]))])
            } catch {
                throw .malformed("pake_msg_2: \(error)")
            }
        case "client/pair-retry":
            // The player found the server's proof wrong: the operator typed another code. Another
            // round (dynamic codes only), with the code asked for again.
            guard phase == .awaitingConfirm, method == .dynamicCode else { throw .outOfTurn(kind.type) }
            guard round < Self.rounds else {
                phase = .done
                throw .mismatch(abort: Self.abort("pairing_code_mismatch"))
            }
            round += 1
            cpace = nil
            phase = .awaitingCode
            return .awaitingCode(send: [Self.json(Envelope(type: "server/pair-init", payload: [String: String]()))])
        case "client/pair-confirm":
            guard phase == .awaitingConfirm, let run = cpace, let code else { throw .outOfTurn(kind.type) }
            guard let tag = field(text, "client_kc").flatMap(Base64URL.decode), tag.count == CPace.tagSize else {
                throw .malformed("client/pair-confirm without a 64-byte client_kc")
            }
            guard (try? run.verify(tag)) == true, let isk = run.isk else {
                phase = .done
                throw .mismatch(abort: Self.abort("pairing_code_mismatch"))
            }
            let wrapped = field(text, "wrapped_nonce_B")
            switch method {
            case .dynamicCode:
                guard let sealed = wrapped.flatMap(Base64URL.decode),
                      let nonceB = try? NoiseCipher.openOnce(suite: suite, key: SendspinPairing.wrapKey(.nonce, sid: sid, isk: isk), sealed),
                      nonceB.count == SendspinPairing.nonceSize else {
                    throw .malformed("client/pair-confirm without its nonce wrapped")
                }
                // The code the operator typed must be the one this session and these nonces
                // make: the player committed to its nonce before it saw the server's.
                guard SendspinPairing.commitment(to: nonceB) == commitment,
                      SendspinPairing.dynamicCode(handshakeHash: handshakeHash, serverNonce: nonceA, clientNonce: nonceB) == code else {
                    phase = .done
                    throw .mismatch(abort: Self.abort("pairing_code_mismatch"))
                }
            case .staticCode, .pairingPSK:
                guard wrapped == nil else { throw .malformed("client/pair-confirm with a nonce for a static code") }
            }
            phase = .awaitingFinalize
            return .send([])
        case "client/pair-finalize" where method == .pairingPSK:
            guard phase == .awaitingFinalize else { throw .outOfTurn(kind.type) }
            guard field(text, "wrapped_psk") == nil, let psk = field(text, "long_term_psk").flatMap(Base64URL.decode), psk.count == 32 else {
                throw .malformed("client/pair-finalize without its long-term key")
            }
            guard psk != SendspinPSK.sentinel.key, psk != pairingPSK else {
                throw .malformed("client/pair-finalize handed over the published or the pairing key")
            }
            phase = .done
            return .paired(psk: psk, send: [Self.json(Envelope(type: "server/pair-finalize", payload: [String: String]()))])
        case "client/pair-finalize":
            guard phase == .awaitingFinalize, let isk = cpace?.isk else { throw .outOfTurn(kind.type) }
            guard field(text, "long_term_psk") == nil, let sealed = field(text, "wrapped_psk").flatMap(Base64URL.decode),
                  let psk = try? NoiseCipher.openOnce(suite: suite, key: SendspinPairing.wrapKey(.psk, sid: sid, isk: isk), sealed),
                  psk.count == 32 else {
                throw .malformed("client/pair-finalize without its key wrapped")
            }
            guard psk != SendspinPSK.sentinel.key else { throw .malformed("client/pair-finalize handed over the published key") }
            phase = .done
            return .paired(psk: psk, send: [Self.json(Envelope(type: "server/pair-finalize", payload: [String: String]()))])
        case "client/pair-pending":
            struct Pending: Codable { let message: String? }
            let message = (try? JSONDecoder().decode(Envelope<Pending>.self, from: Data(text.utf8)))?.payload.message
            return .pending(message: message.map { String($0.prefix(200)) })
        default:
            throw .outOfTurn(kind.type)
        }
    }

    /// Whether a session's text belongs to a pairing attempt.
    public static func isPairingMessage(_ type: String) -> Bool {
        type.hasPrefix("client/pair-") || type == "pair/abort"
    }

    /// The `pair/abort` that tells the player why the attempt ended.
    public static func abort(_ reason: String) -> String {
        json(Envelope(type: "pair/abort", payload: ["reason": reason]))
    }

    private func field(_ text: String, _ name: String) -> String? { SendspinPairing.field(text, name) }

    private struct Kind: Decodable { let type: String }
    private struct Envelope<P: Codable>: Codable {
        let type: String
        let payload: P
    }
    private struct Activate: Codable {
        struct Pairing: Codable {
            let method: String
            let format: String?
        }
        let activities: [String]
        let active_roles: [String]
        let pairing: Pairing
    }

    static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
