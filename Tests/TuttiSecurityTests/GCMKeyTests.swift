import Testing
@testable import TuttiSecurity

/// AES-GCM through libgcrypt with a key schedule made once: the GCM specification's
/// test case 4 (McGrew and Viega), every length around a block, and what must not open.
@Suite("GCM key")
struct GCMKeyTests {
    static func hex(_ s: String) -> [UInt8] {
        stride(from: 0, to: s.count, by: 2).map { UInt8(s.dropFirst($0).prefix(2), radix: 16)! }
    }

    static let key = GCMKey(hex("feffe9928665731c6d6a8f9467308308"))!
    static let nonce = hex("cafebabefacedbaddecaf888")

    @Test func theSpecificationsTestCaseFour() throws {
        let plain = Self.hex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = Self.hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = Self.key.seal(plain[...], authenticating: aad[...], nonce: Self.nonce)
        #expect(sealed == Self.hex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
                                   + "5bc94fbc3221a5db94fae95ae7121a47"))
        #expect(Self.key.open(sealed[...], authenticating: aad[...], nonce: Self.nonce) == plain)
    }

    @Test func everyLengthRoundTripsAndAnyChangeIsRefused() {
        for length in [0, 1, 15, 16, 17, 31, 32, 33, 200] {
            let plain = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let aad: [UInt8] = [0x80, 0x60, 0x12, 0x34]
            let sealed = Self.key.seal(plain[...], authenticating: aad[...], nonce: Self.nonce)
            #expect(sealed.count == length + GCMKey.tagSize)
            #expect(Self.key.open(sealed[...], authenticating: aad[...], nonce: Self.nonce) == plain, "length \(length)")
            for at in Set([0, sealed.count / 2, sealed.count - 1]) {
                var changed = sealed
                changed[at] ^= 0x01
                #expect(Self.key.open(changed[...], authenticating: aad[...], nonce: Self.nonce) == nil, "byte \(at) of \(length)")
            }
            #expect(Self.key.open(sealed[...], authenticating: [0x80, 0x60, 0x12, 0x35][...], nonce: Self.nonce) == nil)
            var otherNonce = Self.nonce
            otherNonce[11] ^= 1
            #expect(Self.key.open(sealed[...], authenticating: aad[...], nonce: otherNonce) == nil)
            // The context is reused: a refusal leaves it fit for the next packet.
            #expect(Self.key.open(sealed[...], authenticating: aad[...], nonce: Self.nonce) == plain)
        }
        #expect(Self.key.open([UInt8](repeating: 0, count: 15)[...], authenticating: [][...], nonce: Self.nonce) == nil, "shorter than a tag")
        #expect(GCMKey([UInt8](repeating: 1, count: 24)) == nil, "AES-128 and AES-256 only (RFC 7714)")
    }
}
