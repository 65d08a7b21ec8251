import Foundation
import Testing
import TuttiSecurity
@testable import TuttiSendspin

/// Sendspin pairing's computations against the reference aiosendspin (the vectors:
/// `pairing_vectors.py` in this folder): tokens as the reference writes and reads them,
/// the player's commitment, the dynamic code and its binary form, CPace's session id, the
/// wrap keys and a key wrapped in each suite. And what is not a code or a token is refused.
@Suite("Sendspin pairing")
struct SendspinPairingTests {
    struct Vector: Decodable {
        let client_id, psk, psk_token, qr, code_token, handshake_hash, nonce_a, nonce_b, commit_b, digits, digits_zero: String
        let sid, isk, psk_wrap, nonce_wrap, wrapped_chacha, wrapped_aesgcm: String
    }

    static let v = try! JSONDecoder().decode(Vector.self, from: Data(vectorJSON.utf8))

    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { i in
            let s = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[s..<hex.index(s, offsetBy: 2)], radix: 16)!
        }
    }

    @Test func tokensAreTheReferences() throws {
        let v = Self.v
        let token = SendspinPairing.PSKToken(clientID: v.client_id, psk: Self.bytes(v.psk))
        #expect(SendspinPairing.encode(token) == v.psk_token)
        // Read as typed: any case, spaces around, with or without its prefix.
        #expect(SendspinPairing.decodePSKToken(v.psk_token) == token)
        #expect(SendspinPairing.decodePSKToken("  " + v.psk_token.lowercased() + "\n") == token)
        #expect(SendspinPairing.decodePSKToken(String(v.psk_token.dropFirst(3))) == token)
        #expect(SendspinPairing.encodeCodeToken(Self.bytes(v.qr)) == v.code_token)
        #expect(SendspinPairing.decodeCodeToken(v.code_token) == Self.bytes(v.qr))
        // Not tokens: the other kind, a letter outside base32, a cut one, non-ASCII, nothing.
        #expect(SendspinPairing.decodePSKToken(v.code_token) == nil)
        #expect(SendspinPairing.decodeCodeToken(v.psk_token) == nil)
        #expect(SendspinPairing.decodePSKToken(v.psk_token.replacingOccurrences(of: "M", with: "1")) == nil)
        #expect(SendspinPairing.decodePSKToken(String(v.psk_token.prefix(40))) == nil)
        #expect(SendspinPairing.decodePSKToken("SP:0É") == nil)
        #expect(SendspinPairing.decodePSKToken("") == nil && SendspinPairing.decodePSKToken("SP:") == nil)
        #expect(SendspinPairing.encode(.init(clientID: "not an id", psk: Self.bytes(v.psk))) == nil)
        #expect(SendspinPairing.encodeCodeToken([1, 2, 3]) == nil)
    }

    @Test func codesAreTheReferences() {
        let v = Self.v
        let (hh, na, nb) = (Self.bytes(v.handshake_hash), Self.bytes(v.nonce_a), Self.bytes(v.nonce_b))
        #expect(SendspinPairing.commitment(to: nb) == Self.bytes(v.commit_b))
        #expect(SendspinPairing.dynamicCode(handshakeHash: hh, serverNonce: na, clientNonce: nb) == v.digits)
        #expect(SendspinPairing.dynamicCode(handshakeHash: [UInt8](repeating: 0, count: 32), serverNonce: [UInt8](repeating: 0, count: 32),
                                            clientNonce: [UInt8](repeating: 0x5E, count: 32)) == v.digits_zero)
        // Leading zeros are digits too.
        #expect(SendspinPairing.dynamicCode(handshakeHash: [UInt8](repeating: 0, count: 32), serverNonce: [UInt8](repeating: 0, count: 32),
                                            clientNonce: [UInt8](repeating: 6, count: 32)) == "004429")
        #expect(Array(SendspinPairing.codeDigest(handshakeHash: hh, serverNonce: na, clientNonce: nb).prefix(24)) == Self.bytes(v.qr))
        #expect(SendspinPairing.grouped("123456") == "123-456" && SendspinPairing.grouped("12345678") == "1234-5678")
        #expect(SendspinPairing.grouped("12345") == nil && SendspinPairing.grouped("12a456") == nil)
        #expect(SendspinPairing.stripSeparators(" 1234-5678 ") == "12345678")
        #expect(SendspinPairing.isStaticCode("12345678") && !SendspinPairing.isStaticCode("1234567") && !SendspinPairing.isStaticCode("1234567８"))
    }

    @Test func aRunIsBoundToItsSessionAndWrapsAsTheReference() throws {
        let v = Self.v
        let sid = SendspinPairing.pakeSessionID(handshakeHash: Self.bytes(v.handshake_hash), index: 2, round: 3)
        #expect(sid == Self.bytes(v.sid))
        let wrap = SendspinPairing.wrapKey(.psk, sid: sid, isk: Self.bytes(v.isk))
        #expect(wrap == Self.bytes(v.psk_wrap))
        #expect(SendspinPairing.wrapKey(.nonce, sid: sid, isk: Self.bytes(v.isk)) == Self.bytes(v.nonce_wrap))
        #expect(NoiseCipher.sealOnce(suite: .chaChaPoly, key: wrap, Self.bytes(v.psk)) == Self.bytes(v.wrapped_chacha))
        #expect(NoiseCipher.sealOnce(suite: .aesGCM, key: wrap, Self.bytes(v.psk)) == Self.bytes(v.wrapped_aesgcm))
        #expect(try NoiseCipher.openOnce(suite: .aesGCM, key: wrap, Self.bytes(v.wrapped_aesgcm)) == Self.bytes(v.psk))
        #expect(throws: NoiseError.authentication) { try NoiseCipher.openOnce(suite: .chaChaPoly, key: wrap, Self.bytes(v.wrapped_aesgcm)) }
    }

    @Test func base32RoundTrips() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base32.decode(Base32.encode(bytes)) == bytes)
        }
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI")
        #expect(Base32.decode("MZXW6YTBOI======") == Array("foobar".utf8))
        #expect(Base32.decode("M") == nil && Base32.decode("MZX") == nil && Base32.decode("mzxw") == nil)
    }
}

/// Made by `python3 pairing_vectors.py` with aiosendspin 10.2.1.
private let vectorJSON = #"""
{
 "client_id": "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1-f4CBgoM",
 "psk": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
 "psk_token": "SP:0MRSWMZ3INFVGW3DNNZXXA4LSON9HK5TXPB4XU634PV7H7AEBQKBQAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4HY",
 "qr": "0de6eba65dcac725d98c16c3642884b4d42ee0e87cf27e8b",
 "code_token": "SP:1BXTOXJS5ZLDSLWMMC3BWIKEEWTKC5YHIPTZH5CY",
 "handshake_hash": "0101010101010101010101010101010101010101010101010101010101010101",
 "nonce_a": "0202020202020202020202020202020202020202020202020202020202020202",
 "nonce_b": "0303030303030303030303030303030303030303030303030303030303030303",
 "commit_b": "43fdbdeac51ca27bb32f1b3c01d317c86978237a13aaa32d3e11faac99f20977",
 "digits": "925243",
 "digits_zero": "472444",
 "sid": "73656e647370696e2d706169722d70616b652d763101010101010101010101010101010101010101010101010101010101010101010000000200000003",
 "isk": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
 "psk_wrap": "275a481d9285f665d93b2d7af5b15e7460655a14a60ec44d728a3128a4e1dd80",
 "nonce_wrap": "fb6ae9d244a6d881f425fd2eb59411d3a4d06175f3737a0b7bdb217d0665e564",
 "wrapped_chacha": "d3c06521b55d38ed16a084a79d2919677ec5d653cf271a3c2990946cf4ffe2843a9b1024a3d9dfc6c511486d1e2774bb",
 "wrapped_aesgcm": "fe6a077e29caa610af4bcae260e736cfcf1c393e57ec610003b3e4df35e5b3f3fe21c8be19e0d6b6aaae7a3244475f61"
}
"""#
