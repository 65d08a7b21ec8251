import Crypto
import Testing
import TuttiCore
@testable import TuttiSecurity

@Suite("House key")
struct HouseKeyTests {
    @Test func hexRoundTripsAndRefusesAnythingElse() throws {
        let key = HouseKey.generate()
        #expect(key.hex.count == 64)
        #expect(HouseKey(hex: key.hex + "\n") == key)
        #expect(HouseKey(hex: key.hex.uppercased()) == key)
        #expect(HouseKey(hex: String(key.hex.dropLast())) == nil)
        #expect(HouseKey(hex: String(key.hex.dropLast()) + "g") == nil)
        #expect(HouseKey(hex: "") == nil)
        #expect(HouseKey.generate() != key, "two houses, two keys")
    }

    /// The clock port's tags come from an HMAC keyed once and copied per message: each tag
    /// is the HMAC-SHA256 of its message alone (RFC 4231 test case 2), however many came
    /// before it, so the coordinator and followers of different builds still agree.
    @Test func clockPortTagsAreHMACSHA256OfEachMessage() {
        let authenticator = HMACAuthenticator(key: Array("Jefe".utf8))
        let message = Array("what do ya want for nothing?".utf8)
        let expected: [UInt8] = [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                                 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43]
        for _ in 0..<3 {
            _ = authenticator.tag(Array("another message first"[...].utf8)[...])
            let tag = authenticator.tag(message[...])
            #expect(tag == Array(expected.prefix(ControlMessage.tagSize)))
            #expect(authenticator.verify(tag[...], for: message[...]))
        }
        var forged = authenticator.tag(message[...])
        forged[0] ^= 1
        #expect(!authenticator.verify(forged[...], for: message[...]))
    }

    @Test func eachPurposeHasItsOwnKey() throws {
        let key = try #require(HouseKey(hex: String(repeating: "ab", count: 32)))
        let clock = key.derived(.clockPort), fingerprint = key.derived(.fingerprint)
        #expect(clock != fingerprint)
        #expect(clock == HouseKey(hex: key.hex)!.derived(.clockPort), "the same key derives the same keys")
        // HKDF-SHA256 (RFC 5869) as swift-crypto computes it (the builds before libgcrypt did
        // it), pinned: another derivation would part a house whose machines run different builds.
        #expect(key.fingerprint == HouseKey(hex: key.hex)!.fingerprint && key.fingerprint.count == 8)
        let again = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: [UInt8](repeating: 0xAB, count: 32)),
                                          salt: Array("tutti house".utf8), info: Array("tutti clock port v1".utf8), outputByteCount: 32)
        #expect(again.withUnsafeBytes { Array($0) } == clock)
        let stream = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: [UInt8](repeating: 0xAB, count: 32)),
                                           salt: Array("tutti house".utf8), info: Array("tutti stream srtp v1".utf8), outputByteCount: 28)
        #expect(stream.withUnsafeBytes { Array($0) } == key.stream.key + key.stream.salt)
    }

    /// The one comparison every tag, key, proof and token check goes through.
    @Test func constantTimeEqualComparesBytesWhereverASliceStarts() {
        let bytes: [UInt8] = [9, 1, 2, 3, 9]
        #expect(constantTimeEqual(bytes[1..<4], [1, 2, 3][...]))
        #expect(!constantTimeEqual(bytes[1..<4], [1, 2, 4][...]))
        #expect(!constantTimeEqual(bytes[1..<4], [1, 2][...]), "a prefix is not equal")
        #expect(!constantTimeEqual([1, 2][...], bytes[1..<4]))
        #expect(constantTimeEqual([][...], bytes[2..<2]))
    }

    @Test func tagsCheckOutOnlyWithTheSameKeyAndBytes() {
        let a = HouseKey.generate().clockPort, b = HouseKey.generate().clockPort
        let bytes: [UInt8] = Array("TUTC a message".utf8)
        let tag = a.tag(bytes[...])
        #expect(tag.count == ControlMessage.tagSize)
        #expect(a.verify(tag[...], for: bytes[...]))
        #expect(!b.verify(tag[...], for: bytes[...]))
        #expect(!a.verify(tag[...], for: bytes.dropLast()))
        #expect(!a.verify(tag.dropLast(), for: bytes[...]), "a short tag is no tag")
        let message = ControlMessage.epochEnd(epoch: 3, at: NTPTimestamp(nanoseconds: 5_000_000_000)).seal(stamp: 9, with: a)
        #expect(throws: PacketError.unauthenticated) { try ControlMessage.open(message, with: b) }
        #expect((try? ControlMessage.open(message, with: a))?.message == .epochEnd(epoch: 3, at: NTPTimestamp(nanoseconds: 5_000_000_000)))
    }
}
