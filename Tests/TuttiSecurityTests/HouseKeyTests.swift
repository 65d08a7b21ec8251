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

    @Test func eachPurposeHasItsOwnKey() throws {
        let key = try #require(HouseKey(hex: String(repeating: "ab", count: 32)))
        let clock = key.derived(.clockPort), fingerprint = key.derived(.fingerprint)
        #expect(clock != fingerprint)
        #expect(clock == HouseKey(hex: key.hex)!.derived(.clockPort), "the same key derives the same keys")
        // HKDF-SHA256 (RFC 5869) as swift-crypto computes it, pinned: another derivation would
        // part a house whose machines run different builds.
        #expect(key.fingerprint == HouseKey(hex: key.hex)!.fingerprint && key.fingerprint.count == 8)
        let again = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: [UInt8](repeating: 0xAB, count: 32)),
                                          salt: Array("tutti house".utf8), info: Array("tutti clock port v1".utf8), outputByteCount: 32)
        #expect(again == clock)
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
