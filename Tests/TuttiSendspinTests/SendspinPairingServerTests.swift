import Foundation
import Testing
import TuttiSecurity
@testable import TuttiSendspin

/// The server's side of pairing by code, against a player written here from the reference's
/// client (aiosendspin's `run_dynamic_pairing_code_client` and `run_static_pairing_code_client`):
/// with the right code the player's key arrives; with a wrong one it does not, and the player
/// is told; messages out of turn, malformed ones and a bad code are refused.
@Suite("Sendspin pairing: the server's side")
struct SendspinPairingServerTests {
    static let hash = [UInt8](repeating: 9, count: 32)
    static let key = [UInt8](repeating: 0x42, count: 32)

    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
    static func payload(_ text: String) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["payload"] as? [String: Any] ?? [:]
    }
    static func type(_ text: String) -> String {
        ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["type"] as? String ?? ""
    }

    /// The player's side, as the reference client runs it.
    struct Player {
        let method: SendspinPairingServer.Method
        let nonceB = [UInt8](repeating: 7, count: 32)
        var code: String
        var cpace: CPace?
        var sid: [UInt8] = []
        var round: UInt32 = 1

        func pairInit(index: Int = 1) -> String {
            var payload: [String: Any] = ["pairing_index": index]
            if method == .dynamicCode { payload["commit_B"] = Base64URL.encode(SendspinPairing.commitment(to: nonceB)) }
            return SendspinPairingServerTests.json(["type": "client/pair-init", "payload": payload])
        }

        /// The code the player shows, from the server's nonce.
        func shown(nonceA: [UInt8]) -> String {
            SendspinPairing.dynamicCode(handshakeHash: SendspinPairingServerTests.hash, serverNonce: nonceA, clientNonce: nonceB)
        }

        /// Answers `server/pair-auth`.
        mutating func auth(_ text: String) throws -> String {
            sid = SendspinPairing.pakeSessionID(handshakeHash: SendspinPairingServerTests.hash, index: 1, round: method == .dynamicCode ? round : 1)
            var run = try CPace(role: .responder, prs: Array(code.utf8), sid: sid, ad: Array("client".utf8))
            let share = try #require(Base64URL.decode(SendspinPairingServerTests.payload(text)["pake_msg_1"] as? String ?? ""))
            try run.derive(peerShare: share, peerAD: Array("server".utf8))
            cpace = run
            return SendspinPairingServerTests.json(["type": "client/pair-auth", "payload": ["pake_msg_2": Base64URL.encode(run.publicShare)]])
        }

        /// Answers `server/pair-confirm`: its proof and nonce, or a retry where the server's
        /// proof is wrong; then the finalize.
        func confirm(_ text: String) throws -> [String] {
            let run = try #require(cpace)
            let serverTag = try #require(Base64URL.decode(SendspinPairingServerTests.payload(text)["server_kc"] as? String ?? ""))
            guard try run.verify(serverTag) else {
                // Dynamic: another round; static: the player gives up and says why.
                return [method == .dynamicCode ? SendspinPairingServerTests.json(["type": "client/pair-retry", "payload": [:]])
                    : SendspinPairingServer.abort("pairing_code_mismatch")]
            }
            let isk = try #require(run.isk)
            var confirm: [String: Any] = ["client_kc": Base64URL.encode(try run.tag())]
            if method == .dynamicCode {
                confirm["wrapped_nonce_B"] = Base64URL.encode(NoiseCipher.sealOnce(suite: .chaChaPoly, key: SendspinPairing.wrapKey(.nonce, sid: sid, isk: isk), nonceB))
            }
            let wrapped = NoiseCipher.sealOnce(suite: .chaChaPoly, key: SendspinPairing.wrapKey(.psk, sid: sid, isk: isk), SendspinPairingServerTests.key)
            return [SendspinPairingServerTests.json(["type": "client/pair-confirm", "payload": confirm]),
                    SendspinPairingServerTests.json(["type": "client/pair-finalize", "payload": ["wrapped_psk": Base64URL.encode(wrapped)]])]
        }
    }

    /// One attempt from activation to its end; `typed` is what the operator types (nil: the
    /// code the player shows, or keeps). Returns the key, or the failure.
    static func attempt(_ method: SendspinPairingServer.Method, playerCode: String = "12345678", typed: [String]? = nil)
        throws -> Result<[UInt8], SendspinPairingServer.Failure> {
        var server = SendspinPairingServer(method: method, index: 1, handshakeHash: hash, suite: .chaChaPoly)
        let activation = payload(server.activation())
        #expect((activation["pairing"] as? [String: Any])?["method"] as? String == method.rawValue)
        #expect(activation["activities"] as? [String] == ["pairing"] && activation["active_roles"] as? [String] == [])
        var player = Player(method: method, code: playerCode)
        guard case let .awaitingCode(sent) = try server.receive(player.pairInit()) else { Issue.record("no code asked for"); return .failure(.outOfTurn("?")) }
        var typing = typed ?? []
        if method == .dynamicCode {
            let first = try #require(sent.first)
            let nonce = try #require(Base64URL.decode(payload(first)["nonce_A"] as? String ?? ""))
            player.code = player.shown(nonceA: nonce)
            if typed == nil { typing = [player.code] }
        } else if typed == nil {
            typing = [playerCode]
        }
        do {
            while true {
                guard case let .send(auth) = try server.enter(code: typing.removeFirst()) else { Issue.record("no auth"); return .failure(.outOfTurn("?")) }
                guard case let .send(confirm) = try server.receive(try player.auth(auth[0])) else { Issue.record("no confirm"); return .failure(.outOfTurn("?")) }
                let answers = try player.confirm(confirm[0])
                if type(answers[0]) == "pair/abort" { _ = try server.receive(answers[0]) }
                if type(answers[0]) == "client/pair-retry" {
                    player.round += 1
                    guard case .awaitingCode = try server.receive(answers[0]) else { return .failure(.outOfTurn("retry")) }
                    continue
                }
                guard case .send([]) = try server.receive(answers[0]) else { return .failure(.outOfTurn("confirm")) }
                guard case let .paired(psk, ack) = try server.receive(answers[1]) else { return .failure(.outOfTurn("finalize")) }
                #expect(ack.map(type) == ["server/pair-finalize"])
                return .success(psk)
            }
        } catch let failure as SendspinPairingServer.Failure {
            return .failure(failure)
        }
    }

    @Test(arguments: [SendspinPairingServer.Method.dynamicCode, .staticCode]) func theRightCodeBringsThePlayersKey(method: SendspinPairingServer.Method) throws {
        #expect(try Self.attempt(method).get() == Self.key)
        // Typed with the groups' hyphen and spaces, as shown.
        if method == .staticCode { #expect(try Self.attempt(method, typed: [" 1234-5678 "]).get() == Self.key) }
    }

    @Test func aWrongCodeIsRetriedOrRefused() throws {
        // A static code typed wrong: the player finds the server's proof wrong, and aborts.
        #expect(try Self.attempt(.staticCode, typed: ["12345679"]) == .failure(.aborted("pairing_code_mismatch")))
        // A dynamic code typed wrong: the player finds the server's proof wrong and asks for
        // another round; the operator types it again, right.
        var server = SendspinPairingServer(method: .dynamicCode, index: 1, handshakeHash: Self.hash, suite: .chaChaPoly)
        var player = Player(method: .dynamicCode, code: "")
        guard case let .awaitingCode(sent) = try server.receive(player.pairInit()) else { Issue.record("no code asked for"); return }
        player.code = player.shown(nonceA: try #require(Base64URL.decode(Self.payload(sent[0])["nonce_A"] as? String ?? "")))
        let wrong = player.code == "000000" ? "000001" : "000000"
        guard case let .send(auth) = try server.enter(code: wrong) else { Issue.record("no auth"); return }
        guard case let .send(confirm) = try server.receive(try player.auth(auth[0])) else { Issue.record("no confirm"); return }
        let retry = try player.confirm(confirm[0])
        #expect(Self.type(retry[0]) == "client/pair-retry")
        guard case let .awaitingCode(again) = try server.receive(retry[0]) else { Issue.record("no second round"); return }
        #expect(again.map(Self.type) == ["server/pair-init"] && Self.payload(again[0]).isEmpty)
        player.round = 2
        guard case let .send(auth2) = try server.enter(code: player.code) else { Issue.record("no auth"); return }
        guard case let .send(confirm2) = try server.receive(try player.auth(auth2[0])) else { Issue.record("no confirm"); return }
        let answers = try player.confirm(confirm2[0])
        _ = try server.receive(answers[0])
        guard case let .paired(psk, _) = try server.receive(answers[1]) else { Issue.record("not paired"); return }
        #expect(psk == Self.key)
    }

    /// tutti's two sides pair each other (a follower as a Sendspin player, a coordinator as
    /// the server): the follower shows the code; a mistyped one gets another round, the
    /// right one hands over the follower's key.
    @Test func aFollowerAndACoordinatorPairEachOther() throws {
        var server = SendspinPairingServer(method: .dynamicCode, index: 1, handshakeHash: Self.hash, suite: .aesGCM)
        var client = SendspinPairingClient(index: 1, handshakeHash: Self.hash, suite: .aesGCM)
        guard case let .awaitingCode(sent) = try server.receive(client.start()) else { Issue.record("no code asked for"); return }
        guard case let .show(code, []) = try client.receive(sent[0]) else { Issue.record("no code shown"); return }
        #expect(code.count == 7 && code.contains("-"))
        func round(typed: String) throws -> [String] {
            guard case let .send(auth) = try server.enter(code: typed) else { return [] }
            guard case let .send(authReply) = try client.receive(auth[0]) else { return [] }
            guard case let .send(confirm) = try server.receive(authReply[0]) else { return [] }
            guard case let .send(answers) = try client.receive(confirm[0]) else { return [] }
            return answers
        }
        let retry = try round(typed: code == "000-000" ? "111-111" : "000-000")
        #expect(retry.map(Self.type) == ["client/pair-retry"])
        guard case let .awaitingCode(again) = try server.receive(retry[0]) else { Issue.record("no second round"); return }
        guard case .show(code, []) = try client.receive(again[0]) else { Issue.record("the code changed"); return }
        let answers = try round(typed: code)
        #expect(answers.map(Self.type) == ["client/pair-confirm", "client/pair-finalize"])
        #expect(try server.receive(answers[0]) == .send([]))
        guard case let .paired(psk, ack) = try server.receive(answers[1]) else { Issue.record("not paired"); return }
        #expect(psk == client.psk)
        #expect(try client.receive(ack[0]) == .paired(psk: client.psk))
        // The server's abort ends the client's attempt with its reason.
        var other = SendspinPairingClient(index: 1, handshakeHash: Self.hash, suite: .chaChaPoly)
        #expect(throws: SendspinPairingClient.Failure.aborted("user_cancelled")) { try other.receive(SendspinPairingServer.abort("user_cancelled")) }
        #expect(throws: SendspinPairingClient.Failure.outOfTurn("server/pair-finalize")) {
            var fresh = SendspinPairingClient(index: 1, handshakeHash: Self.hash, suite: .chaChaPoly)
            _ = try fresh.receive(#"{"type":"server/pair-finalize","payload":{}}"#)
        }
    }

    /// By token: the session is already under the player's one-time key; it hands over its
    /// long-term key as it is, which may be neither that key nor the published one. A player
    /// that holds the attempt for its owner's gesture says so first.
    @Test func aTokensPlayerHandsOverItsKey() throws {
        let oneTime = [UInt8](repeating: 5, count: 32)
        func finalize(_ key: [UInt8]) -> String {
            Self.json(["type": "client/pair-finalize", "payload": ["long_term_psk": Base64URL.encode(key)]])
        }
        var server = SendspinPairingServer(method: .pairingPSK, index: 1, handshakeHash: Self.hash, suite: .chaChaPoly, pairingPSK: oneTime)
        #expect((Self.payload(server.activation())["pairing"] as? [String: Any])?["method"] as? String == "pairing_psk")
        #expect(try server.receive(#"{"type":"client/pair-pending","payload":{"pairing_index":1,"message":"press the button"}}"#)
            == .pending(message: "press the button"))
        #expect(try server.receive(Self.json(["type": "client/pair-init", "payload": ["pairing_index": 1]])) == .send([]))
        guard case let .paired(psk, ack) = try server.receive(finalize(Self.key)) else { Issue.record("not paired"); return }
        #expect(psk == Self.key && ack.map(Self.type) == ["server/pair-finalize"])
        for bad in [oneTime, SendspinPSK.sentinel.key] {
            var other = SendspinPairingServer(method: .pairingPSK, index: 1, handshakeHash: Self.hash, suite: .chaChaPoly, pairingPSK: oneTime)
            _ = try other.receive(Self.json(["type": "client/pair-init", "payload": ["pairing_index": 1]]))
            #expect(throws: SendspinPairingServer.Failure.self) { try other.receive(finalize(bad)) }
        }
    }

    @Test func whatIsNotAPairingIsRefused() throws {
        var server = SendspinPairingServer(method: .dynamicCode, index: 1, handshakeHash: Self.hash, suite: .chaChaPoly)
        // A code before the player began, a finalize out of turn, garbage, another attempt's init.
        #expect(throws: SendspinPairingServer.Failure.outOfTurn("a pairing code")) { try server.enter(code: "123456") }
        #expect(throws: SendspinPairingServer.Failure.outOfTurn("client/pair-finalize")) {
            try server.receive(#"{"type":"client/pair-finalize","payload":{"wrapped_psk":"AAAA"}}"#)
        }
        #expect(throws: SendspinPairingServer.Failure.self) { try server.receive("nonsense") }
        #expect(throws: SendspinPairingServer.Failure.self) { try server.receive(#"{"type":"client/pair-init","payload":{"pairing_index":2,"commit_B":"x"}}"#) }
        #expect(throws: SendspinPairingServer.Failure.self) { try server.receive(#"{"type":"client/pair-init","payload":{"pairing_index":1}}"#) }
        // The player's abort ends it, with its reason.
        #expect(throws: SendspinPairingServer.Failure.aborted("user_cancelled")) {
            try server.receive(#"{"type":"pair/abort","payload":{"reason":"user_cancelled"}}"#)
        }
        // A code of the wrong length or with letters: nothing is sent for it.
        var other = SendspinPairingServer(method: .staticCode, index: 1, handshakeHash: Self.hash, suite: .chaChaPoly)
        _ = try other.receive(Player(method: .staticCode, code: "").pairInit())
        #expect(throws: SendspinPairingServer.Failure.self) { try other.enter(code: "1234567") }
        #expect(throws: SendspinPairingServer.Failure.self) { try other.enter(code: "1234567a") }
        #expect(other.awaitsCode)
    }
}
