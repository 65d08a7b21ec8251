import Foundation
import Testing
@testable import TuttiSecurity
@testable import TuttiSendspin

/// A Sendspin session's opening (cleartext init, Noise KKpsk2) and its sealed transport,
/// server and client of this module against each other; the Noise underneath is held to the
/// reference package's bytes in NoiseTests.
@Suite("Sendspin sessions")
struct SendspinSessionTests {
    let server = SendspinIdentity(privateKey: [UInt8](repeating: 0x11, count: 32))
    let client = SendspinIdentity(privateKey: [UInt8](repeating: 0x22, count: 32))
    let paired = SendspinPSK(key: (0..<32).map { UInt8($0) }, category: .longTerm)

    /// Opens a session; returns the server's and the client's transports.
    func open(suite: NoiseSuite = .chaChaPoly, admit: (String) -> SendspinPSK?,
              resolve: (String, SendspinPSKCategory) -> SendspinPSK?) throws -> (SendspinTransport, SendspinTransport) {
        var serverSide = SendspinServerHandshake(identity: server)
        var clientSide = SendspinClientHandshake(identity: client, suite: suite)
        let replies = try serverSide.receiveClientInit(clientSide.clientInit, admit: admit)
        #expect(replies.count == 2)
        try clientSide.receiveServerInit(replies[0], expected: server.id)
        let (message2, clientTransport) = try clientSide.receiveHandshake(replies[1], resolve: resolve)
        let serverTransport = try serverSide.receiveHandshake(message2)
        #expect(serverSide.clientID == client.id && clientSide.serverID == server.id)
        return (serverTransport, clientTransport)
    }

    @Test(arguments: NoiseSuite.allCases) func aPairedClientOpensASealedSession(_ suite: NoiseSuite) throws {
        var (s, c) = try open(suite: suite, admit: { $0 == client.id ? paired : nil },
                              resolve: { id, category in id == paired.id && category == .longTerm ? paired : nil })
        let frames = try s.seal(.text(#"{"type":"server/hello"}"#))
        #expect(frames.count == 1 && !String(decoding: frames[0], as: UTF8.self).contains("server/hello"))
        #expect(try c.open(frames[0]) == .text(#"{"type":"server/hello"}"#))
        let chunk: [UInt8] = [4] + [UInt8](repeating: 9, count: 1_000)
        #expect(try s.open(try c.seal(.binary(chunk))[0]) == .binary(chunk))
    }

    /// The ids are the keys in base64url, 43 characters, and the sentinel's id is the
    /// reference implementation's (SHA-256 of its label and the key).
    @Test func idsAreTheProtocols() {
        #expect(server.id.count == 43 && Base64URL.decode(server.id) == server.publicKey)
        #expect(SendspinPSK.sentinel.key == SHA256Digest.of(Array("sendspin-sentinel-psk-v1".utf8)))
        #expect(SendspinPSK.sentinel.id.count == 43)
        #expect(Base64URL.decode("not base64!") == nil)
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    /// A client whose key the server did not pair, answering under the sentinel: admitted
    /// only where unpaired access is allowed, and a client that names the wrong key fails at
    /// message 2.
    @Test func unpairedAccessIsTheHousesToAllow() throws {
        var serverSide = SendspinServerHandshake(identity: server)
        let clientSide = SendspinClientHandshake(identity: client)
        #expect(throws: SendspinHandshakeError.notAdmitted(clientID: client.id)) {
            try serverSide.receiveClientInit(clientSide.clientInit) { _ in nil }
        }
        var (s, c) = try open(admit: { _ in .sentinel }, resolve: { _, _ in nil })
        #expect(try c.open(try s.seal(.text("{}"))[0]) == .text("{}"))
        // The server admits it with its pairing's key; the client has lost it and answers
        // under the sentinel: message 2 does not authenticate.
        #expect(throws: SendspinHandshakeError.noise(.authentication)) {
            try open(admit: { _ in paired }, resolve: { _, _ in nil })
        }
    }

    @Test func aBadClientInitGetsItsReason() throws {
        var serverSide = SendspinServerHandshake(identity: server)
        func reason(_ text: String) -> String? {
            var fresh = serverSide
            do { _ = try fresh.receiveClientInit(text) { _ in .sentinel } } catch let .rejected(reason, _) { return reason } catch {
                return "other: \(error)"
            }
            return nil
        }
        #expect(reason("not json") == "malformed")
        #expect(reason(#"{"type":"client/hello","payload":{"client_id":"\#(client.id)","version":1,"suite":"25519_ChaChaPoly_SHA256"}}"#) == "malformed")
        #expect(reason(#"{"type":"client/init","payload":{"client_id":"\#(client.id)","version":2,"suite":"25519_ChaChaPoly_SHA256"}}"#) == "unsupported_version")
        #expect(reason(#"{"type":"client/init","payload":{"client_id":"\#(client.id)","version":1,"suite":"25519_AESGCM_SHA512"}}"#) == "unsupported_suite")
        #expect(reason(#"{"type":"client/init","payload":{"client_id":"abc","version":1,"suite":"25519_ChaChaPoly_SHA256"}}"#) == "malformed")
        #expect(reason(SendspinClientHandshake(identity: client).clientInit) == nil)
        _ = try serverSide.receiveClientInit(SendspinClientHandshake(identity: client).clientInit) { _ in .sentinel }
        #expect(throws: SendspinHandshakeError.self) { try serverSide.receiveClientInit("{}") { _ in .sentinel } }
        #expect(throws: SendspinHandshakeError.self) { try serverSide.receiveHandshake(#"{"type":"noise/handshake","payload":{"data":"AAAA"}}"#) }
    }

    /// A message larger than one Noise frame goes as fragments, each frame within the
    /// protocol's 65,535 bytes, and comes back whole.
    @Test func largeMessagesGoInFragments() throws {
        var (s, c) = try open(admit: { _ in .sentinel }, resolve: { _, _ in nil })
        let artwork: [UInt8] = [8] + (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let frames = try s.seal(.binary(artwork))
        #expect(frames.count == 5 && frames.allSatisfy { $0.count <= 65_535 })
        var got: [SendspinMessage] = []
        for frame in frames { if let message = try c.open(frame) { got.append(message) } }
        #expect(got == [.binary(artwork)])
        let text = String(repeating: "é", count: 40_000)
        var back: [SendspinMessage] = []
        for frame in try c.seal(.text(text)) { if let message = try s.open(frame) { back.append(message) } }
        #expect(back == [.text(text)])
        #expect(throws: SendspinTransportError.reservedType(1)) { try s.seal(.binary([1, 2, 3])) }
        #expect(throws: SendspinTransportError.empty) { try s.seal(.binary([])) }
    }

    /// Frames out of order, forged or replayed end the session with a reason, never a crash.
    @Test func badFramesAreRefused() throws {
        var (s, c) = try open(admit: { _ in .sentinel }, resolve: { _, _ in nil })
        let frames = try s.seal(.binary([8] + [UInt8](repeating: 1, count: 140_000)))
        #expect(frames.count == 3)
        // The nonces are implicit: a frame out of its place does not authenticate, nor does
        // a replayed or a forged one.
        var skipped = c
        #expect(throws: SendspinTransportError.authentication) { try skipped.open(frames[1]) }
        #expect(try c.open(frames[0]) == nil)
        #expect(throws: SendspinTransportError.authentication) { try c.open(frames[0]) }
        var forged = frames[1]
        forged[forged.count - 1] ^= 1
        #expect(throws: SendspinTransportError.authentication) { try c.open(forged) }
        #expect(throws: SendspinTransportError.authentication) { try c.open([1, 2, 3]) }
    }

    /// A peer holding the session's keys that breaks the fragment rules.
    @Test func fragmentRulesHoldAgainstAKeyHolder() throws {
        let key = [UInt8](repeating: 5, count: 32)
        func pair() -> (NoiseCipher, SendspinTransport) {
            (NoiseCipher(suite: .chaChaPoly, key: key),
             SendspinTransport(sending: NoiseCipher(suite: .chaChaPoly, key: key), receiving: NoiseCipher(suite: .chaChaPoly, key: key)))
        }
        var (peer, me) = pair()
        #expect(throws: SendspinTransportError.fragment("a continuation with no message in flight")) { try me.open(peer.encrypt([1, 0, 9])) }
        (peer, me) = pair()
        #expect(try me.open(peer.encrypt([1, 2, 8, 1, 2])) == nil)
        #expect(throws: SendspinTransportError.fragment("a first fragment while another message is in flight")) {
            try me.open(peer.encrypt([1, 2, 8, 3]))
        }
        (peer, me) = pair()
        #expect(try me.open(peer.encrypt([1, 2, 8, 1])) == nil)
        #expect(throws: SendspinTransportError.fragment("a whole message while a fragmented one is in flight")) {
            try me.open(peer.encrypt([0] + Array("{}".utf8)))
        }
        (peer, me) = pair()
        #expect(throws: SendspinTransportError.fragment("reserved flags 4")) { try me.open(peer.encrypt([1, 4, 8])) }
        (peer, me) = pair()
        #expect(throws: SendspinTransportError.fragment("a first fragment without its message's type")) { try me.open(peer.encrypt([1, 2, 1])) }
        (peer, me) = pair()
        #expect(throws: SendspinTransportError.reservedType(2)) { try me.open(peer.encrypt([2, 8])) }
        (peer, me) = pair()
        #expect(throws: SendspinTransportError.empty) { try me.open(peer.encrypt([])) }
        // Fragments without end: refused once the message passes 16 MB.
        (peer, me) = pair()
        let piece = [UInt8](repeating: 0, count: 65_000)
        _ = try me.open(peer.encrypt([1, 2, 8] + piece))
        var refused: SendspinTransportError?
        for _ in 0..<300 where refused == nil {
            do { _ = try me.open(peer.encrypt([1, 0] + piece)) } catch { refused = error }
        }
        #expect(refused == .tooLarge(SendspinTransport.maximumMessage))
        // A one-frame fragmented message (first and last) is a message.
        (peer, me) = pair()
        #expect(try me.open(peer.encrypt([1, 3, 4, 7])) == .binary([4, 7]))
    }
}
