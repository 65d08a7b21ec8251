import Synchronization
import Testing
import TuttiCore
@testable import TuttiSecurity

/// Members' own credentials, and the coordinator's record of them (`HouseKeyring`).
@Suite("Members and their keys")
struct MemberKeyTests {
    /// The credential's key for the clock port is HKDF-SHA256 of its secret (salt "tutti
    /// member", info "tutti member clock v1"), as bench/lib/stranger.py derives it too.
    @Test func theClockKeyIsDerivedAsDocumented() {
        let member = MemberKey(id: 3, secret: Array(0..<32))!
        let tag = member.clockPort.tag(Array("abc".utf8)[...])
        #expect(tag.map { $0.hex(digits: 2) }.joined() == "2c7ef061e8964ab48de0e08571d54b81")
    }

    @Test func aCredentialFileRoundTripsAndRefusesAnythingElse() {
        let member = MemberKey.generate(id: 42)
        #expect(MemberKey(text: member.text) == member)
        #expect(member.text.hasPrefix("tutti member 42 ") && member.text.count == "tutti member 42 ".count + 65)
        #expect(MemberKey(text: "tutti member 0 " + String(repeating: "ab", count: 32)) == nil, "0 is no member's id")
        #expect(MemberKey(text: "tutti member 70000 " + String(repeating: "ab", count: 32)) == nil)
        #expect(MemberKey(text: "tutti member 4 " + String(repeating: "ab", count: 31)) == nil)
        #expect(MemberKey(text: String(repeating: "ab", count: 32)) == nil, "a house key is not a credential")
        #expect(MemberKey.generate(id: 42) != member)
    }

    /// The stream's key sealed for one member opens for it alone, for the generation it was
    /// sealed for alone; an enrolment answer opens with the house key alone.
    @Test func sealedKeysOpenForTheirMemberAndGenerationOnly() throws {
        let a = MemberKey.generate(id: 1), b = MemberKey.generate(id: 2)
        let stream = SRTPMasterKey.generate()
        let sealed = a.sealStreamKey(stream, generation: 5)
        #expect(sealed.count == ControlMessage.sealedStreamKeySize)
        #expect(a.openStreamKey(sealed, generation: 5) == stream)
        #expect(b.openStreamKey(sealed, generation: 5) == nil)
        #expect(a.openStreamKey(sealed, generation: 6) == nil)
        var changed = sealed
        changed[20] ^= 1
        #expect(a.openStreamKey(changed, generation: 5) == nil)

        let house = HouseKey.generate()
        let enrolment = house.sealEnrolment(b)
        #expect(enrolment.count == ControlMessage.sealedSecretSize)
        #expect(house.openEnrolment(member: 2, sealed: enrolment) == b)
        #expect(house.openEnrolment(member: 3, sealed: enrolment) == nil, "an id is sealed with its secret")
        #expect(HouseKey.generate().openEnrolment(member: 2, sealed: enrolment) == nil)
        let forMemberZero = house.sealStreamKey(stream, generation: 5)
        #expect(house.openStreamKey(forMemberZero, generation: 5) == stream)
        #expect(a.openStreamKey(forMemberZero, generation: 5) == nil)
    }

    /// A member's stream moves to a newer key with the first packet sealed with it.
    @Test func theStreamOpensWithTheNewerKeyFromItsFirstPacket() throws {
        let old = SRTPMasterKey.generate(), new = SRTPMasterKey.generate()
        var sender = SRTPContext(old)
        var keys = StreamKeys(old)
        let packet: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 2, 3]
        #expect(try keys.unprotectRTP(sender.protectRTP(packet, rollover: 0)) == packet)
        sender = SRTPContext(new)
        var next = packet
        next[3] = 2
        #expect(throws: SRTPError.unauthenticated) { try keys.unprotectRTP(sender.protectRTP(next, rollover: 0)) }
        keys.take(new, generation: 1)
        next[3] = 3
        #expect(try keys.unprotectRTP(sender.protectRTP(next, rollover: 0)) == next)
        #expect(keys.generation == 1)
    }

    /// Opened where it lies (the follower's every packet), as a copy would open it: with no
    /// newer key waiting, and with one waiting that an old packet must not lose its way to.
    @Test func aPacketOpensInPlaceAsFromACopy() throws {
        let old = SRTPMasterKey.generate(), new = SRTPMasterKey.generate()
        let sender = SRTPContext(old)
        var keys = StreamKeys(old)
        let packet: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 2, 3, 4, 5]
        var wire = try sender.protectRTP(packet, rollover: 0)
        try keys.unprotectRTP(inPlace: &wire)
        #expect(wire == packet)
        // A tampered body is refused, and the packet that came is not taken for its contents.
        var next = packet
        next[3] = 2
        wire = try sender.protectRTP(next, rollover: 0)
        wire[14] ^= 1
        #expect(throws: SRTPError.unauthenticated) { try keys.unprotectRTP(inPlace: &wire) }
        // A newer key waits: a packet of the old key still opens (from a copy, the old key
        // first), then one of the new key, which the stream moves to.
        keys.take(new, generation: 1)
        next[3] = 3
        wire = try sender.protectRTP(next, rollover: 0)
        try keys.unprotectRTP(inPlace: &wire)
        #expect(wire == next && keys.generation == 0)
        let newer = SRTPContext(new)
        next[3] = 4
        wire = try newer.protectRTP(next, rollover: 0)
        try keys.unprotectRTP(inPlace: &wire)
        #expect(wire == next && keys.generation == 1)
    }

    /// What the coordinator keeps: members come and go, a name enrolling again takes its old
    /// place, a member speaks for one room, and everything survives a restart.
    @Test func theKeyringKeepsItsMembers() throws {
        let saved = Mutex<HouseKeyring.Saved?>(nil)
        let house = HouseKey.generate()
        let ring = HouseKeyring(houseKey: house, saved: nil, wallClock: { 1_000 }) { s in saved.withLock { $0 = s } }
        #expect(ring.clockKey(member: 0) != nil, "holders of the house key may enrol")
        let (id, sealed) = try #require(ring.enroll(name: "Kitchen", at: 0))
        let kitchen = try #require(house.openEnrolment(member: id, sealed: sealed))
        let tag = kitchen.clockPort.tag([1, 2, 3])
        #expect(ring.clockKey(member: id)?.verify(tag[...], for: [1, 2, 3]) == true)
        #expect(ring.clockKey(member: id + 1) == nil)
        #expect(ring.mayReport(member: id, room: "Kitchen") && !ring.mayReport(member: id, room: "Study"), "one room per member")
        #expect(ring.mayReport(member: 0, room: "Study"), "member 0 while enrolment is open")
        let (again, _) = try #require(ring.enroll(name: "Kitchen", at: 40_000_000_000), "not heard for 40 s")
        #expect(ring.members.map(\.id) == [again], "enrolling again under its name takes the old member's place")
        // ... unless that member is heard lately: a second machine of the name is a member of its own.
        ring.heard(member: again, at: 50_000_000_000)
        let (second, _) = try #require(ring.enroll(name: "Kitchen", at: 60_000_000_000))
        #expect(ring.members.map(\.id).sorted() == [again, second].sorted())
        ring.revoke(member: second)
        ring.setEnrolment(true)

        let paired = try #require(ring.add(name: "Patio", viaPairing: true))
        let restored = HouseKeyring(houseKey: house, saved: saved.withLock { $0 }, wallClock: { 2_000 }) { _ in }
        #expect(restored.members.map(\.name) == ["Kitchen", "Patio"] && restored.members.map(\.added) == [1_000, 1_000])
        #expect(restored.clockKey(member: paired.id)?.verify(paired.clockPort.tag([9])[...], for: [9]) == true)

        // Restarted at 1,000 s: its members count as heard then, so another machine enrolling
        // as "Kitchen" 10 s on is a member of its own; 40 s on, it takes the silent one's place.
        let restarted = HouseKeyring(houseKey: house, saved: saved.withLock { $0 }, loadedAt: 1_000_000_000_000, wallClock: { 3_000 }) { _ in }
        restarted.setEnrolment(true)
        let kitchenID = try #require(restarted.members.first { $0.name == "Kitchen" }?.id)
        let (early, _) = try #require(restarted.enroll(name: "Kitchen", at: 1_010_000_000_000))
        #expect(restarted.members.map(\.id).contains(kitchenID) && early != kitchenID, "the name was not taken over at once")
        let (late, _) = try #require(restarted.enroll(name: "Kitchen", at: 1_045_000_000_000))
        #expect(restarted.members.filter { $0.name == "Kitchen" }.count == 2 && [kitchenID, early].contains(late),
                "a silent one's place is taken (its id with it)")
    }

    /// Revoking forgets the member's key, closes enrolment (the revoked member holds the
    /// house key) and starts a new generation of the stream's key, which the stream takes
    /// once every member heard lately holds it, or after the deadline.
    @Test func revokingRekeysAndClosesEnrolment() throws {
        let house = HouseKey.generate()
        let ring = HouseKeyring(houseKey: house, saved: nil, wallClock: { 0 }) { _ in }
        let a = try #require(ring.add(name: "a")), b = try #require(ring.add(name: "b")), c = try #require(ring.add(name: "c"))
        #expect(ring.mayReport(member: b.id, room: "b"))
        #expect(ring.streamInUse.generation == 0 && ring.streamInUse.key == house.stream)
        let t: Int64 = 100_000_000_000
        ring.holds(member: a.id, generation: 0, at: t)
        ring.holds(member: b.id, generation: 0, at: t)
        #expect(ring.revoke(room: "b") == [b.id])
        #expect(ring.clockKey(member: b.id) == nil && ring.clockKey(member: 0) == nil && !ring.enrolmentOpen)
        #expect(ring.enroll(name: "b", at: 0) == nil, "no way back by the house key")
        #expect(ring.streamKey(for: b.id) == nil && ring.streamKey(for: 0) == nil)
        let (generation, sealed) = try #require(ring.streamKey(for: a.id))
        #expect(generation == 1 && ring.streamGeneration == 1)
        let next = try #require(a.openStreamKey(sealed, generation: 1))
        #expect(next != house.stream)
        #expect(ring.switchDue(at: t + 1_000_000_000) == nil, "a, heard lately, does not hold it yet")
        ring.heard(member: a.id, at: t + 1_200_000_000)
        #expect(ring.switchDue(at: t + 1_300_000_000) == nil, "a, heard again, still does not")
        ring.holds(member: a.id, generation: 1, at: t + 1_500_000_000)
        let moved = try #require(ring.switchDue(at: t + 2_000_000_000), "c was never heard: not waited for")
        #expect(moved.generation == 1 && moved.key == next && ring.streamInUse.key == next)

        // Another revocation: c is silent, a never takes the key: the deadline moves the stream.
        #expect(ring.revoke(member: c.id))
        #expect(ring.switchDue(at: t + 3_000_000_000) == nil)
        #expect(ring.switchDue(at: t + 3_000_000_000 + HouseKeyring.switchDeadline)?.generation == 2)
        #expect(!ring.revoke(member: c.id), "revoked already")
        // Pairing still makes members.
        #expect(ring.add(name: "new") == nil && ring.add(name: "new", viaPairing: true) != nil)
    }

    @Test func aHouseHasAtMostItsLimitOfMembers() {
        let ring = HouseKeyring(houseKey: HouseKey.generate(), saved: nil, wallClock: { 0 }) { _ in }
        for i in 0..<HouseKeyring.limit { #expect(ring.add(name: "m\(i)") != nil) }
        #expect(ring.enroll(name: "one more", at: 0) == nil && ring.add(name: "one more", viaPairing: true) == nil)
        #expect(ring.members.count == HouseKeyring.limit)
    }
}
