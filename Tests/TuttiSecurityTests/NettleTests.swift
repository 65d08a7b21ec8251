import Crypto
import Testing
@testable import TuttiSecurity

/// The primitives behind the house key, through Nettle, against their specifications'
/// vectors and against swift-crypto (which the coordinator's pairing still uses).
@Suite("Nettle primitives")
struct NettleTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    @Test func hkdfMatchesRFC5869() {
        // Test case 1 (SHA-256, 42 bytes).
        let okm = Nettle.hkdfSHA256(key: Self.bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), salt: Self.bytes("000102030405060708090a0b0c"),
                                    info: Self.bytes("f0f1f2f3f4f5f6f7f8f9"), count: 42)
        #expect(okm == Self.bytes("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        // Test case 3: no salt (a hash length of zeros), no info.
        let unsalted = Nettle.hkdfSHA256(key: Self.bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), salt: [], info: [], count: 42)
        #expect(unsalted == Self.bytes("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
        #expect(Nettle.hkdfSHA256(key: [1], salt: [2], info: [3], count: 0).isEmpty)
    }

    @Test func hkdfAndHMACAgreeWithSwiftCrypto() {
        var random = SystemRandomNumberGenerator()
        for length in [0, 1, 31, 32, 33, 64, 65, 200] {
            let key = (0..<max(1, length)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let salt = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let info = (0..<length / 2).map { _ in UInt8.random(in: 0...255, using: &random) }
            let count = 1 + length % 90
            let theirs = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key), salt: salt, info: info, outputByteCount: count)
            #expect(Nettle.hkdfSHA256(key: key, salt: salt, info: info, count: count) == theirs.withUnsafeBytes { Array($0) }, "length \(length)")
            let mac = HMAC<SHA256>.authenticationCode(for: info + salt, using: SymmetricKey(data: key))
            #expect(Nettle.hmacSHA256(key: key, info + salt) == Array(mac), "length \(length)")
        }
        // An empty key (HKDF's salt may be one).
        let empty = HMAC<SHA256>.authenticationCode(for: [1, 2, 3], using: SymmetricKey(data: [UInt8]()))
        #expect(Nettle.hmacSHA256(key: [], [1, 2, 3]) == Array(empty))
    }

    /// RFC 4231 test case 6: a key longer than the block is hashed first. The same key
    /// answers message after message (each starts from the keyed state again).
    @Test func hmacMatchesRFC4231WithALongKeyAndAgain() {
        let key = HMACKey([UInt8](repeating: 0xaa, count: 131))
        let message = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        let expected = Self.bytes("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        for _ in 0..<3 {
            #expect(key.authenticate(message[...]) == expected)
            _ = key.authenticate([1, 2, 3])
        }
    }

    @Test func aesMatchesFIPS197() {
        let plain = Self.bytes("00112233445566778899aabbccddeeff")
        #expect(Nettle.aesBlock(plain, key: Self.bytes("000102030405060708090a0b0c0d0e0f")) == Self.bytes("69c4e0d86a7b0430d8cdb78070b4c55a"))
        let key256 = Self.bytes("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        #expect(Nettle.aesBlock(plain, key: key256) == Self.bytes("8ea2b7ca516745bfeafc49904b496089"))
    }

    @Test func randomBytesDiffer() {
        let a = Nettle.random(count: 32), b = Nettle.random(count: 32)
        #expect(a.count == 32 && a != b && a != [UInt8](repeating: 0, count: 32))
    }
}
