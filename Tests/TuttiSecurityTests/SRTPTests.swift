import Testing
import TuttiCore
@testable import TuttiSecurity

@Suite("SRTP with AES-GCM (RFC 3711, RFC 7714)")
struct SRTPTests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace }.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! }
    }

    /// RFC 7714 §16 and §17: the session keys and packets all its vectors share.
    static let quidProQuo = hex("517569642070726f2071756f")
    static let gallia = hex("8040f17b 8041f8d3 5501a0b2 47616c6c 69612065 7374206f 6d6e6973 20646976 69736120 696e2070 61727465 73207472 6573")
    static func vectorContext(keySize: Int) -> SRTPContext {
        let key = Array(UInt8(0)..<UInt8(keySize))
        return SRTPContext(keys: SRTPSessionKeys(rtpKey: key, rtpSalt: quidProQuo, rtcpKey: key, rtcpSalt: quidProQuo))
    }

    @Test func keyDerivationMatchesRFC3711AppendixB3() {
        let key = Self.hex("E1F97A0D3E018BE0D64FA32C06DE4139"), salt = Self.hex("0EC675AD498AFEEBB6960B3AABE6")
        #expect(SRTPSessionKeys.derive(key: key, salt: salt, label: 0, length: 16) == Self.hex("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(SRTPSessionKeys.derive(key: key, salt: salt, label: 1, length: 20) == Self.hex("CEBE321F6FF7716B6FD4AB49AF256A156D38BAA4"))
        #expect(SRTPSessionKeys.derive(key: key, salt: salt, label: 2, length: 14) == Self.hex("30CBBC08863D8C85D49DB34A9AE1"))
    }

    @Test func noncesMatchRFC7714() {
        #expect(SRTPContext.rtpNonce(Self.quidProQuo, ssrc: 0x5501_a0b2, index: 0xf17b) == Self.hex("51753c6580c2726f20718414"))
        #expect(SRTPContext.rtcpNonce(Self.quidProQuo, ssrc: 0x4d61_7273, index: 0x5d4) == Self.hex("517524055203726f207170bb"))
    }

    @Test func rtpMatchesRFC7714Section16() throws {
        let expected = Self.hex("""
            8040f17b 8041f8d3 5501a0b2 f24de3a3 fb34de6c acba861c 9d7e4bca be633bd5 0d294e6f 42a5f47a 51c7d19b 36de3adf 8833
            899d7f27 beb16a91 52cf765e e4390cce
            """)
        var context = Self.vectorContext(keySize: 16)
        #expect(try context.protectRTP(Self.gallia, rollover: 0) == expected)
        #expect(try context.unprotectRTP(expected) == Self.gallia)
    }

    @Test func rtcpMatchesRFC7714Section17() throws {
        // §17.2 (AEAD_AES_256_GCM; the layout is the same for 128-bit keys).
        let plain = Self.hex("81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930 4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef")
        let sealed = Self.hex("""
            81c8000d 4d617273 d50ae4d1 f5ce5d30 4ba297e4 7d470c28 2c3ece5d bffe0a50 a2eaa5c1 110555be 8415f658 c61de047
            6f1b6fad 1d1eb30c 4446839f 57ff6f6c b26ac3be 800005d4
            """)
        var context = Self.vectorContext(keySize: 32)
        #expect(try context.unprotectRTCP(sealed) == plain)
        #expect(throws: SRTPError.replayed) { try context.unprotectRTCP(sealed) }
    }

    static let master = HouseKey(bytes: Array(repeating: 7, count: 32))!.stream

    static func packet(sequence: UInt16, rollover: UInt32? = nil, ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
        RTPPacket(sequenceNumber: SequenceNumber(sequence), timestamp: StreamTimestamp(960 * UInt32(sequence)), ssrc: ssrc,
                  presentationTime: CoordinatorTime(nanoseconds: 1_000_000), epoch: 1, sendTime: CoordinatorTime(nanoseconds: 5),
                  rollover: rollover, payload: Array(repeating: 0xAB, count: 80)).encode()
    }

    @Test func aStrangersOrChangedOrReplayedPacketIsRefused() throws {
        let sender = SRTPContext(Self.master)
        var receiver = SRTPContext(Self.master)
        let plain = Self.packet(sequence: 10, rollover: 0)
        let sealed = try sender.protectRTP(plain, rollover: 0)
        #expect(sealed.count == plain.count + SRTPContext.tagSize)
        #expect(!sealed.suffix(96).starts(with: Array(repeating: 0xAB, count: 16)), "the payload travels encrypted")
        #expect(try receiver.unprotectRTP(sealed) == plain)
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(sealed) }

        let stranger = SRTPContext(HouseKey.generate().stream)
        #expect(throws: SRTPError.unauthenticated) { try receiver.unprotectRTP(try stranger.protectRTP(Self.packet(sequence: 11, rollover: 0), rollover: 0)) }
        for position in [1, 3, 9, 20, sealed.count / 2, sealed.count - 1] {
            var changed = try sender.protectRTP(Self.packet(sequence: 12, rollover: 0), rollover: 0)
            changed[position] ^= 0x01
            #expect(throws: SRTPError.self) { try receiver.unprotectRTP(changed) }
        }
        // The unchanged packet still passes: the failures did not move the window.
        #expect(try receiver.unprotectRTP(try sender.protectRTP(Self.packet(sequence: 12, rollover: 0), rollover: 0)).count == plain.count)
        for cut in 0..<sealed.count { _ = try? receiver.unprotectRTP(Array(sealed.prefix(cut))) }
        #expect(throws: SRTPError.self) { try receiver.unprotectRTP(plain) }
    }

    /// A packet with a header and no body opens (to its header); its tag still counts.
    @Test func aPacketWithoutABodyOpensToItsHeader() throws {
        let sender = Self.vectorContext(keySize: 16)
        var receiver = Self.vectorContext(keySize: 16)
        let header = Array(Self.gallia.prefix(12))
        let sealed = try sender.protectRTP(header, rollover: 0)
        #expect(sealed.count == 12 + SRTPContext.tagSize)
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: SRTPError.self) { try receiver.unprotectRTP(tampered) }
        #expect(try receiver.unprotectRTP(sealed) == header)
    }

    @Test func aLateJoinerReadsTheRolloverCounterFromThePacket() throws {
        let sender = SRTPContext(Self.master)
        var joiner = SRTPContext(Self.master)
        #expect(try joiner.unprotectRTP(try sender.protectRTP(Self.packet(sequence: 5, rollover: 3), rollover: 3)).count > 0)
        // Without the counter in the packet a late joiner guesses 0, and the tag says no.
        var other = SRTPContext(Self.master)
        #expect(throws: SRTPError.unauthenticated) { try other.unprotectRTP(try sender.protectRTP(Self.packet(sequence: 5), rollover: 3)) }
        // A packet claiming another counter than it was sealed with fails too.
        var third = SRTPContext(Self.master)
        #expect(throws: SRTPError.unauthenticated) { try third.unprotectRTP(try sender.protectRTP(Self.packet(sequence: 6, rollover: 2), rollover: 3)) }
    }

    @Test func rtcpRoundTripsWithItsOwnIndexAndRefusesReplays() throws {
        var sender = SRTPContext(Self.master), receiver = SRTPContext(Self.master)
        let nack = GenericNACK(senderSSRC: 42, mediaSSRC: 7, sequences: [SequenceNumber(3), SequenceNumber(4)]).encode()
        let first = try sender.protectRTCP(nack), second = try sender.protectRTCP(nack)
        #expect(first != second, "each has its own index")
        #expect(first.count == nack.count + SRTPContext.tagSize + SRTPContext.rtcpTrailerSize)
        #expect(try receiver.unprotectRTCP(second) == nack)
        #expect(try receiver.unprotectRTCP(first) == nack, "out of order within the window")
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTCP(first) }
        var unencrypted = first
        unencrypted[unencrypted.count - 4] &= 0x7F
        #expect(throws: SRTPError.unauthenticated) { try receiver.unprotectRTCP(unencrypted) }
        var stranger = SRTPContext(HouseKey.generate().stream)
        _ = try stranger.protectRTCP(nack)
        _ = try stranger.protectRTCP(nack)
        let forged = try stranger.protectRTCP(nack)  // index 2: not yet taken
        #expect(throws: SRTPError.unauthenticated) { try receiver.unprotectRTCP(forged) }
    }

    @Test func manySendersCannotGrowTheTables() throws {
        var receiver = SRTPContext(Self.master, capacity: 4)
        var sender = SRTPContext(Self.master)
        for ssrc in UInt32(1)...100 {
            _ = try receiver.unprotectRTP(try sender.protectRTP(Self.packet(sequence: 1, rollover: 0, ssrc: ssrc), rollover: 0))
            _ = try receiver.unprotectRTCP(try sender.protectRTCP(GenericNACK(senderSSRC: ssrc, mediaSSRC: 7, sequences: [SequenceNumber(1)]).encode()))
        }
        #expect(receiver.trackedSources == (4, 4))
    }

    @Test func theMasterKeyTravelsInSDPForm() throws {
        let master = Self.master
        #expect(SRTPMasterKey(inline: master.inline) == master)
        #expect(SRTPMasterKey(inline: master.inline + "|2^31") == master)
        #expect(SRTPMasterKey(inline: "AAAA") == nil)
        #expect(master.hex.count == 56)
        #expect(HouseKey.generate().stream != master)
    }
}
