import Testing
import TuttiCore
@testable import TuttiSecurity

/// The members' tags on the stream's packets (`StreamTagKey`): every member holds the
/// stream's group key, so SRTP alone would let one member play into the others' rooms.
@Suite("The stream's member tags")
struct StreamTagTests {
    let a = MemberKey.generate(id: 1), b = MemberKey.generate(id: 2), c = MemberKey.generate(id: 3)

    /// A packet as the coordinator makes it: encoded with a slot per member, tagged, then
    /// stamped with its send time (after the tags, just before it leaves).
    func packet(sequence: UInt16, for members: [MemberKey], payload: [UInt8] = [1, 2, 3, 4], sentAt: Int64 = 5_000) -> [UInt8] {
        let rtp = RTPPacket(sequenceNumber: SequenceNumber(sequence), timestamp: StreamTimestamp(UInt32(sequence) * 960), ssrc: 0xCAFE,
                            presentationTime: CoordinatorTime(nanoseconds: 1_000_000), epoch: 7,
                            sendTime: CoordinatorTime(nanoseconds: 0), rollover: 0, payload: payload)
        var bytes = rtp.encode(taggedFor: members.map(\.id))
        StreamTagKey.sign(&bytes, with: members.map(\.streamTag))
        if let at = RTPPacket.sendTimeOffset(in: bytes) { RTPPacket.stamp(&bytes, at: at, sendTime: CoordinatorTime(nanoseconds: sentAt)) }
        return bytes
    }

    @Test func aPacketTaggedForTwoMembersIsTrueForEachAndForNoOther() throws {
        let bytes = packet(sequence: 10, for: [a, b])
        #expect(RTPPacket.memberTagSlots(in: bytes).map(\.member) == [1, 2])
        #expect(a.streamTag.check(bytes) == nil)
        #expect(b.streamTag.check(bytes) == nil)
        #expect(c.streamTag.check(bytes) == .notForThisMember)
        // Stock receivers skip the elements: the packet reads as it always did.
        let decoded = try RTPPacket.decode(bytes)
        #expect(decoded.payload == [1, 2, 3, 4] && decoded.epoch == 7 && decoded.sendTime == CoordinatorTime(nanoseconds: 5_000))
        // The send time is stamped after the tags, at each packet's leaving: a new stamp keeps them true.
        var restamped = bytes
        RTPPacket.stamp(&restamped, at: try #require(RTPPacket.sendTimeOffset(in: bytes)), sendTime: CoordinatorTime(nanoseconds: 9))
        #expect(a.streamTag.check(restamped) == nil)
    }

    /// Member b holds the group key and its own credential: whatever it makes, a does not
    /// take as the coordinator's.
    @Test func noMemberCanMakeAnothersTag() {
        // b tags a packet "for a" with its own key.
        var forged = RTPPacket(sequenceNumber: SequenceNumber(1), timestamp: StreamTimestamp(0), ssrc: 0xCAFE,
                               presentationTime: CoordinatorTime(nanoseconds: 0), payload: [9, 9, 9]).encode(taggedFor: [a.id])
        let bAsA = StreamTagKey(member: a.id, key: Nettle.hkdfSHA256(key: b.secret, salt: Array("tutti member".utf8),
                                                                      info: Array("tutti member stream tag v1".utf8), count: 32))
        StreamTagKey.sign(&forged, with: [bAsA])
        #expect(a.streamTag.check(forged) == .forged)
        // b changes a true packet's sound, or its presentation time.
        var changed = packet(sequence: 2, for: [a, b])
        changed[changed.count - 1] ^= 0x40
        #expect(a.streamTag.check(changed) == .forged)
        var moved = packet(sequence: 3, for: [a, b])
        moved[17 + 7] ^= 1  // the presentation time's last byte (the first element, after the 16 bytes of headers)
        #expect(a.streamTag.check(moved) == .forged)
        // b copies a's slot (id and tag) from one packet into another of its own.
        let genuine = packet(sequence: 4, for: [a])
        var copied = packet(sequence: 4, for: [a], payload: [6, 6, 6, 6])
        let slot = RTPPacket.memberTagSlots(in: genuine)[0].at
        copied.replaceSubrange(slot..<(slot + RTPPacket.memberTagSize), with: genuine[slot..<(slot + RTPPacket.memberTagSize)])
        #expect(a.streamTag.check(copied) == .forged)
        // A truncated or untagged packet is no one's.
        #expect(a.streamTag.check(Array(genuine.prefix(20))) == .notForThisMember)
        #expect(a.streamTag.check([]) == .notForThisMember)
    }

    /// A member that has just enrolled takes what the group key opens, as before it enrolled,
    /// until the coordinator tags the stream for it; from the first packet tagged for it on,
    /// only packets with its true tag.
    @Test func aNewMemberRequiresItsTagFromTheFirstPacketThatCarriesOne() throws {
        let group = SRTPMasterKey.generate()
        let coordinator = SRTPContext(group)
        var keys = StreamKeys(group)
        keys.enrolled(a)
        var wire = try coordinator.protectRTP(packet(sequence: 10, for: [b]), rollover: 0)
        try keys.unprotectRTP(inPlace: &wire)
        #expect(keys.memberTag == nil)
        wire = try coordinator.protectRTP(packet(sequence: 11, for: [a, b]), rollover: 0)
        try keys.unprotectRTP(inPlace: &wire)
        #expect(keys.memberTag?.member == a.id)
        #expect(throws: SRTPError.notForThisMember) { try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 12, for: [b]), rollover: 0)) }
        // A false tag for it in its very first tagged packet is refused too.
        var fresh = StreamKeys(group)
        fresh.enrolled(a)
        var forged = packet(sequence: 13, for: [b])
        forged[RTPPacket.memberTagSlots(in: forged)[0].at - 1] = UInt8(a.id)  // b's slot relabelled as a's
        #expect(throws: SRTPError.forged) { try fresh.unprotectRTP(coordinator.protectRTP(forged, rollover: 0)) }
        #expect(throws: SRTPError.notForThisMember) { try fresh.unprotectRTP(coordinator.protectRTP(packet(sequence: 14, for: [b]), rollover: 0)) }
    }

    /// A forged packet is refused before its index is taken: one made with a sequence number
    /// far ahead cannot make the coordinator's next packets look like replays.
    @Test func aForgedPacketDoesNotMoveTheReplayWindow() throws {
        let group = SRTPMasterKey.generate()
        let coordinator = SRTPContext(group)
        var keys = StreamKeys(group, member: a)
        #expect(try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 100, for: [a, b]), rollover: 0)).count > 0)
        // b seals with the group key it holds, far ahead: tagged with its own key for a, or not for a at all.
        #expect(throws: SRTPError.forged) {
            var forged = packet(sequence: 5_000, for: [b])
            forged[RTPPacket.memberTagSlots(in: forged)[0].at - 1] = UInt8(a.id)  // b's slot relabelled as a's
            return try keys.unprotectRTP(coordinator.protectRTP(forged, rollover: 0))
        }
        #expect(throws: SRTPError.notForThisMember) { try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 6_000, for: [b]), rollover: 0)) }
        // The coordinator's next packet is taken.
        let next = packet(sequence: 101, for: [a, b])
        #expect(try keys.unprotectRTP(coordinator.protectRTP(next, rollover: 0)) == next)
        #expect(throws: SRTPError.replayed) { try keys.unprotectRTP(coordinator.protectRTP(next, rollover: 0)) }
    }

    /// A holder of the house key alone (not yet enrolled) takes what the group key opens; once
    /// it enrolled and the stream carries its tag, only what carries its tag.
    @Test func enrollingMakesTheTagRequired() throws {
        let group = SRTPMasterKey.generate()
        let coordinator = SRTPContext(group)
        var keys = StreamKeys(group)
        #expect(keys.memberTag == nil)
        #expect(try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 1, for: []), rollover: 0)).count > 0)
        keys.enrolled(c)
        #expect(try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 2, for: [a, c]), rollover: 0)).count > 0)
        #expect(throws: SRTPError.notForThisMember) { try keys.unprotectRTP(coordinator.protectRTP(packet(sequence: 3, for: [a]), rollover: 0)) }
    }

    /// The coordinator tags a stream's packets for the members speaking for its rooms, heard
    /// within the last minute; a member revoked or moved to another zone's stream is left out.
    @Test func theKeyringTagsForTheRoomsThatPlayAStream() throws {
        let ring = HouseKeyring(houseKey: HouseKey.generate(), saved: nil, wallClock: { 0 }) { _ in }
        let kitchen = try #require(ring.add(name: "kitchen")), hall = try #require(ring.add(name: "hall"))
        let screen = try #require(ring.add(name: "screen")), quiet = try #require(ring.add(name: "quiet"))
        #expect(ring.mayReport(member: kitchen.id, room: "Kitchen") && ring.mayReport(member: hall.id, room: "Hall"))
        #expect(ring.mayReport(member: quiet.id, room: "Attic"))
        let t: Int64 = 200_000_000_000
        for member in [kitchen, hall, screen] { ring.heard(member: member.id, at: t) }
        ring.heard(member: quiet.id, at: t - 61_000_000_000)
        #expect(ring.streamTags(for: 0xAA, at: t).isEmpty, "the house has not said which room plays what")
        ring.setRoomStreams(["Kitchen": 0xAA, "Hall": 0xAA, "Attic": 0xAA])
        #expect(ring.streamTags(for: 0xAA, at: t + 1).map(\.member) == [kitchen.id, hall.id], "not the screen, not the machine gone quiet")
        ring.setRoomStreams(["Kitchen": 0xAA, "Hall": 0xBB, "Attic": 0xAA])
        #expect(ring.streamTags(for: 0xAA, at: t + 2).map(\.member) == [kitchen.id])
        #expect(ring.streamTags(for: 0xBB, at: t + 2).map(\.member) == [hall.id])
        ring.revoke(member: kitchen.id)
        #expect(ring.streamTags(for: 0xAA, at: t + 3).isEmpty)
        // Each tag is the member's own.
        let tag = try #require(ring.streamTags(for: 0xBB, at: t + 3).first)
        var bytes = RTPPacket(sequenceNumber: SequenceNumber(1), timestamp: StreamTimestamp(0), ssrc: 0xBB, presentationTime: nil,
                              payload: [1]).encode(taggedFor: [tag.member])
        StreamTagKey.sign(&bytes, with: [tag])
        #expect(hall.streamTag.check(bytes) == nil)
    }
}
