import Foundation
import Testing
@testable import TuttiSecurity

/// Noise KKpsk2 (Sendspin's sealed sessions) against the reference `noiseprotocol` package:
/// the same keys, prologue, pre-shared key and payloads make the same handshake messages,
/// the same handshake hash and the same transport messages, in both of Sendspin's suites
/// (the vectors: `noise_vectors.py` in this folder). And what must fail does.
@Suite("Noise KKpsk2")
struct NoiseTests {
    struct Vector: Decodable {
        let suite: String
        let server_static, client_static, server_ephemeral, client_ephemeral, server_public, client_public: String
        let prologue, psk, message1, payload1, message2, payload2, handshake_hash: String
        let to_client, to_server: [String]
    }

    static let vectors: [Vector] = try! JSONDecoder().decode([Vector].self, from: Data(vectorsJSON.utf8))

    static func bytes(_ hex: String) -> [UInt8] { NettleTests.bytes(hex) }

    /// Both sides of a vector's handshake, with its fixed ephemerals.
    static func sides(_ v: Vector, psk: [UInt8]? = nil) throws -> (server: NoiseHandshake, client: NoiseHandshake) {
        let suite = try #require(NoiseSuite(rawValue: v.suite))
        let server = try NoiseHandshake(suite: suite, initiator: true, staticPrivate: bytes(v.server_static),
                                        remoteStatic: bytes(v.client_public), prologue: bytes(v.prologue),
                                        psk: psk ?? bytes(v.psk), ephemeral: bytes(v.server_ephemeral))
        let client = try NoiseHandshake(suite: suite, initiator: false, staticPrivate: bytes(v.client_static),
                                        remoteStatic: bytes(v.server_public), prologue: bytes(v.prologue),
                                        ephemeral: bytes(v.client_ephemeral))
        return (server, client)
    }

    @Test func theVectorsAreBothSuites() {
        #expect(Set(Self.vectors.map(\.suite)) == Set(NoiseSuite.allCases.map(\.rawValue)))
    }

    @Test func publicKeysAreX25519s() {
        for v in Self.vectors {
            #expect(X25519.publicKey(of: Self.bytes(v.server_static)) == Self.bytes(v.server_public))
            #expect(X25519.publicKey(of: Self.bytes(v.client_static)) == Self.bytes(v.client_public))
        }
    }

    @Test(arguments: vectors.indices) func aHandshakeMatchesTheReferencePackage(_ index: Int) throws {
        let v = Self.vectors[index]
        var (server, client) = try Self.sides(v)
        let message1 = try server.writeMessage(Array("hello from the server".utf8))
        #expect(message1 == Self.bytes(v.message1), "\(v.suite): message 1")
        #expect(try client.readMessage(message1) == Self.bytes(v.payload1))
        try client.setPSK(Self.bytes(v.psk))
        let message2 = try client.writeMessage()
        #expect(message2 == Self.bytes(v.message2), "\(v.suite): message 2")
        #expect(try server.readMessage(message2) == Self.bytes(v.payload2))
        #expect(server.isComplete && client.isComplete)
        #expect(server.handshakeHash == Self.bytes(v.handshake_hash))
        #expect(client.handshakeHash == Self.bytes(v.handshake_hash))
        var (serverSend, serverReceive) = try server.transport()
        var (clientSend, clientReceive) = try client.transport()
        let toClient: [[UInt8]] = [Array(#"{"type":"server/hello"}"#.utf8), [], (0..<200).map { UInt8($0) }]
        for (plain, expected) in zip(toClient, v.to_client) {
            let sealed = serverSend.encrypt(plain)
            #expect(sealed == Self.bytes(expected), "\(v.suite): a transport message to the client")
            #expect(try clientReceive.decrypt(sealed) == plain)
        }
        let sealed = clientSend.encrypt(Array(#"{"type":"client/hello"}"#.utf8))
        #expect(sealed == Self.bytes(v.to_server[0]))
        #expect(try serverReceive.decrypt(sealed) == Array(#"{"type":"client/hello"}"#.utf8))
    }

    /// Another pre-shared key on the server's side (a client paired elsewhere, or unpaired
    /// against a house that allows no unpaired access): message 2 does not authenticate.
    @Test func anotherPreSharedKeyFailsAtMessageTwo() throws {
        let v = Self.vectors[0]
        var (server, client) = try Self.sides(v, psk: [UInt8](repeating: 7, count: 32))
        _ = try client.readMessage(try server.writeMessage())
        try client.setPSK(Self.bytes(v.psk))
        let message2 = try client.writeMessage()
        #expect(throws: NoiseError.authentication) { try server.readMessage(message2) }
        #expect(!server.isComplete)
    }

    /// Another server's key (the client expects the one its id names): message 1 fails.
    @Test func anotherStaticKeyFailsAtMessageOne() throws {
        let v = Self.vectors[1]
        var server = try NoiseHandshake(suite: .aesGCM, initiator: true, staticPrivate: [UInt8](repeating: 0x55, count: 32),
                                        remoteStatic: Self.bytes(v.client_public), prologue: Self.bytes(v.prologue),
                                        psk: Self.bytes(v.psk))
        var (_, client) = try Self.sides(v)
        #expect(throws: NoiseError.authentication) { try client.readMessage(try server.writeMessage()) }
    }

    @Test func tamperingAndReplayAreRefused() throws {
        let v = Self.vectors[0]
        var (server, client) = try Self.sides(v)
        var message1 = try server.writeMessage(Array("x".utf8))
        message1[40] ^= 1
        #expect(throws: NoiseError.authentication) { try client.readMessage(message1) }
        // A transport message opened once is not opened again (its nonce has passed), nor
        // one whose bytes changed.
        (server, client) = try Self.sides(v)
        _ = try client.readMessage(try server.writeMessage())
        try client.setPSK(Self.bytes(v.psk))
        _ = try server.readMessage(try client.writeMessage())
        var (send, _) = try server.transport()
        var (_, receive) = try client.transport()
        let first = send.encrypt([1, 2, 3])
        #expect(try receive.decrypt(first) == [1, 2, 3])
        #expect(throws: NoiseError.authentication) { try receive.decrypt(first) }
        var second = send.encrypt([4, 5, 6])
        second[0] ^= 0x80
        #expect(throws: NoiseError.authentication) { try receive.decrypt(second) }
        #expect(throws: NoiseError.self) { try receive.decrypt([1, 2, 3]) }
    }

    @Test func messagesOutOfTurnAndBadKeysAreRefused() throws {
        let v = Self.vectors[0]
        var (server, client) = try Self.sides(v)
        #expect(throws: NoiseError.outOfTurn) { try client.writeMessage() }
        #expect(throws: NoiseError.outOfTurn) { try server.readMessage([UInt8](repeating: 0, count: 64)) }
        #expect(throws: NoiseError.outOfTurn) { try server.transport() }
        _ = try server.writeMessage()
        #expect(throws: NoiseError.self) { try server.writeMessage() }
        #expect(throws: NoiseError.self) { try client.readMessage([1, 2, 3]) }
        // A low-order point as the peer's ephemeral: an all-zero secret, refused.
        var zero = [UInt8](repeating: 0, count: 48)
        zero[0] = 0
        #expect(throws: NoiseError.badKey) { try client.readMessage(zero) }
        #expect(throws: NoiseError.badKey) {
            try NoiseHandshake(suite: .chaChaPoly, initiator: true, staticPrivate: [1], remoteStatic: [2], prologue: [])
        }
    }
}

/// Made by `python3 noise_vectors.py` with noiseprotocol 0.3.1.
private let vectorsJSON = #"""
[
 {
  "suite": "25519_ChaChaPoly_SHA256",
  "server_static": "1111111111111111111111111111111111111111111111111111111111111111",
  "client_static": "2222222222222222222222222222222222222222222222222222222222222222",
  "server_ephemeral": "3333333333333333333333333333333333333333333333333333333333333333",
  "client_ephemeral": "4444444444444444444444444444444444444444444444444444444444444444",
  "server_public": "7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13",
  "client_public": "0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f20",
  "prologue": "7b2274797065223a22636c69656e742f696e6974227d7b2274797065223a227365727665722f696e6974227d",
  "psk": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
  "message1": "7b0d47d93427f8311160781c7c733fd89f88970aef490d8aa0ee19a4cb8a1b143e815053d5909a5847f502b0c7036813044764531cadfc710fb09dea63a12c904a89117000",
  "payload1": "68656c6c6f2066726f6d2074686520736572766572",
  "message2": "ff2ee45601ec1b67310c7790404585ae697331eee1c1f8cf2419731c1fff3e6b8007c624ff04e1d4493869342383c10f",
  "payload2": "",
  "handshake_hash": "9192bcfc9e819968debd0eedd09696c3e36f01485fb57d0750da6ab46b4dee35",
  "to_client": [
   "584d5b682351f56b7a10a852ede6690adff7a2bda6b3afc69dbb87f523c3b9b5050196b763a01f",
   "3db7159397d6193b006eb41cfff4f4be",
   "f5869e13e8cf354341be5324552e7d024333796094ace3af3d36c099b9cef1803c558a1a8cb248f77dc851a6170d77b03eee301fdc20688a4925d9c0ff58ebc82973dfc6fd274a97fa03072b2c6b9ff28c258f001e48783a6e15e3a4bb7e866f56e58427ccd4bf399ae614983c15dc55b646b7acbca41b5671cac2010371e151f4f315ca774fb0113418492991da8ac71371beb08ef7aecf2066dc4f96ad629fffb2cacda3eb6e0c0de9df6726ab55fd4a18640c6bf5b97890491445958db11777f8fdeefb449f665c62f0e8c910388b5a62d71dd218d708"
  ],
  "to_server": [
   "bdead614b0d3509f20cc282db43c214d7e0db090191cc5bc76d595549282023e9b81b90c669d3c"
  ]
 },
 {
  "suite": "25519_AESGCM_SHA256",
  "server_static": "1111111111111111111111111111111111111111111111111111111111111111",
  "client_static": "2222222222222222222222222222222222222222222222222222222222222222",
  "server_ephemeral": "3333333333333333333333333333333333333333333333333333333333333333",
  "client_ephemeral": "4444444444444444444444444444444444444444444444444444444444444444",
  "server_public": "7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13",
  "client_public": "0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f20",
  "prologue": "7b2274797065223a22636c69656e742f696e6974227d7b2274797065223a227365727665722f696e6974227d",
  "psk": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
  "message1": "7b0d47d93427f8311160781c7c733fd89f88970aef490d8aa0ee19a4cb8a1b141c85d0c5658f06d5d7226496365b1a0ca6d2ed163a33bdcbedcad26b1375b978fc1c358a15",
  "payload1": "68656c6c6f2066726f6d2074686520736572766572",
  "message2": "ff2ee45601ec1b67310c7790404585ae697331eee1c1f8cf2419731c1fff3e6b1731f259f95c8dbb62b143b954c3804e",
  "payload2": "",
  "handshake_hash": "214fc720cf7146fcea9d6b5826772661d7b2732f744a6292421eb187520e3432",
  "to_client": [
   "b542c8feafbfb2c5fe548700b234f744bb75febdfc25a5c175656c21e604c2c99fd445630031eb",
   "5bd16fb550046887fc34d581d3d1d832",
   "2ce6b6eae7dba67c54db028fcbd91016f45930f64a2ea62d0301a5489f8b8558348522e913bf41bb0067cb8e35653491557a900f85d1b0f76fd9d03d8d420d171e1a28261d3a3ea06017c92bce5e7c7e4586c6684731039370723ed4062a2474c497e29c8a2be6b80eef458fde5674c2aa9df97f4ea7b877473331772e7a264a08a2f3867eb82f6d97c70e7069714de0962a08f9d1144c6140eeb12227354b675b08a3a0eabc65a07ed698c9fe9fa23f8ada106ed6d22c6d9de59b22eb7544456b55c904701d0a541884317ea3f9beaf2b74bc78f11a28a6"
  ],
  "to_server": [
   "83c0c13ec42e0f96367e6ff740cc9945da045af3969b40415261cac120d54806e0d2deca52e693"
  ]
 }
]
"""#
