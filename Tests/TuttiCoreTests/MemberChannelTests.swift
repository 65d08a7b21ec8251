import Synchronization
import Testing
import TuttiCore
import TuttiTesting

/// The clock port with members of their own: each signs with its own key and numbers what it
/// sends; the coordinator answers each with its key; holders of the house key enrol; the
/// stream's key is handed out by generation.
@Suite("Members on the clock port")
struct MemberChannelTests {
    /// A house with two members (1 and 2) and, while enrolment is open, holders of the house
    /// key (member 0); the stream's newest key is generation 4.
    final class Members: MemberKeys {
        let open = Atomic<Bool>(true)
        let held = Mutex<[UInt16: UInt32]>([:])
        static let keys: [UInt16: SumTag] = [0: SumTag(key: 7), 1: SumTag(key: 11), 2: SumTag(key: 12), 3: SumTag(key: 13)]
        func clockKey(member id: UInt16) -> (any MessageAuthenticator)? {
            id == 0 && !open.load(ordering: .relaxed) ? nil : Self.keys[id]
        }
        func enroll(name: String, at now: Int64) -> (member: UInt16, sealed: [UInt8])? {
            open.load(ordering: .relaxed) ? (3, Array(name.utf8)) : nil
        }
        var streamGeneration: UInt32 { 4 }
        func streamKey(for id: UInt16) -> (generation: UInt32, sealed: [UInt8])? { (4, [UInt8(id)]) }
        func holds(member id: UInt16, generation: UInt32, at now: Int64) { held.withLock { $0[id] = generation } }
        func heard(member id: UInt16, at now: Int64) {}
        func mayReport(member id: UInt16, room name: String) -> Bool { id == 0 || name == "room \(id)" }
    }

    typealias Service = ControlChannelService<Int>
    let members = Members()
    let clock = ManualClock(start: 5_000_000_000)
    let t: Int64 = 5_000_000_000

    func service() -> Service {
        Service(keys: members, cookieKey: SumTag(key: 99), stream: { _ in 0xAB }, payloadType: 96,
                addressBytes: { [UInt8(truncatingIfNeeded: $0)] }, atPort: { $0 + 1000 * Int($1) })
    }

    /// `message` from `member` at `peer`, sealed with its key, numbered `sequence`.
    func send(_ service: inout Service, _ message: ControlMessage, member: UInt16, sequence: UInt64 = 0, cookie: UInt64 = 0,
              peer: Int = 1) -> [Service.Action] {
        service.receive(message.seal(stamp: cookie, member: member, sequence: sequence, with: Members.keys[member]!), from: peer, at: t,
                        clock: clock)
    }

    /// A time exchange as `member`: the answer, opened with its key alone; its cookie.
    func cookie(_ service: inout Service, member: UInt16, peer: Int = 1) throws -> UInt64 {
        let actions = send(&service, .timeRequest(originate: 1), member: member, peer: peer)
        guard case let .send(bytes, _) = try #require(actions.first) else { return 0 }
        for (other, key) in Members.keys where other != member {
            #expect(throws: PacketError.unauthenticated) { try ControlMessage.open(bytes, with: key) }
        }
        let opened = try ControlMessage.open(bytes) { $0 == member ? Members.keys[member] : nil }
        #expect(opened.member == member && opened.sequence == 4, "the header names the member and the stream key's generation")
        guard case let .timeResponse(_, _, _, cookie) = opened.message else { return 0 }
        return cookie
    }

    /// Whether an action sends an answer (not a "not paired" notice).
    static func answers(_ action: Service.Action) -> Bool {
        if case let .send(bytes, _) = action { bytes[5] != 8 } else { false }
    }

    @Test func answersAreSealedWithTheAskersKeyAndUnknownMembersAreStrangers() throws {
        var service = service()
        _ = try cookie(&service, member: 1)
        _ = try cookie(&service, member: 2)
        // Member 9 is not the house's: its request is a stranger's.
        let unknown = ControlMessage.timeRequest(originate: 1).seal(stamp: 0, member: 9, with: SumTag(key: 11))
        #expect(service.receive(unknown, from: 1, at: t, clock: clock).contains { if case .firstStranger = $0 { true } else { false } })
        // Member 1's key naming member 2: refused.
        let posing = ControlMessage.timeRequest(originate: 1).seal(stamp: 0, member: 2, with: Members.keys[1]!)
        #expect(!service.receive(posing, from: 1, at: t + 2_000_000_000, clock: clock).contains(where: Self.answers))
        #expect(service.counts.unauthenticated == 2)
    }

    /// A member revoked on another thread while its message is being answered: the answer is
    /// sealed with the key the message was checked with (the house looks it up once).
    @Test func aMemberRevokedMeanwhileIsAnsweredWithTheKeyItsMessageWasCheckedWith() throws {
        final class Revoking: MemberKeys {
            let lookups = Atomic<Int>(0)
            func clockKey(member id: UInt16) -> (any MessageAuthenticator)? {
                lookups.add(1, ordering: .relaxed) == (1, 1) ? Members.keys[id] : nil
            }
            func enroll(name: String, at now: Int64) -> (member: UInt16, sealed: [UInt8])? { nil }
            var streamGeneration: UInt32 { 0 }
            func streamKey(for id: UInt16) -> (generation: UInt32, sealed: [UInt8])? { nil }
            func holds(member id: UInt16, generation: UInt32, at now: Int64) {}
            func heard(member id: UInt16, at now: Int64) {}
            func mayReport(member id: UInt16, room name: String) -> Bool { true }
        }
        var service = Service(keys: Revoking(), cookieKey: SumTag(key: 99), stream: { _ in 0xAB }, payloadType: 96,
                              addressBytes: { [UInt8(truncatingIfNeeded: $0)] }, atPort: { $0 + 1000 * Int($1) })
        let actions = send(&service, .timeRequest(originate: 1), member: 1)
        guard case let .send(bytes, _) = try #require(actions.first) else { return }
        #expect(try ControlMessage.open(bytes) { $0 == 1 ? Members.keys[1] : nil }.member == 1)
    }

    /// Each sequence number counts once; 64 of reordering are allowed; time requests go unnumbered.
    @Test func aMembersMessagesAreTakenOnceEach() throws {
        var service = service()
        let cookie = try cookie(&service, member: 1)
        let report = ControlMessage.roomReport(RoomReport(name: "room 1"))
        #expect(send(&service, report, member: 1, sequence: 1_000, cookie: cookie).count == 1)
        #expect(send(&service, report, member: 1, sequence: 1_000, cookie: cookie).isEmpty, "a replay")
        #expect(send(&service, report, member: 1, sequence: 990, cookie: cookie).count == 1, "overtaken on the way")
        #expect(send(&service, report, member: 1, sequence: 936, cookie: cookie).isEmpty, "too old to tell")
        #expect(send(&service, report, member: 1, sequence: 0, cookie: cookie).isEmpty, "unnumbered")
        #expect(service.counts.replayed == 3)
        // Another member's numbers are its own.
        let other = try self.cookie(&service, member: 2, peer: 2)
        #expect(send(&service, .roomReport(RoomReport(name: "room 2")), member: 2, sequence: 5, cookie: other, peer: 2).count == 1)
        // Time requests carry no number, and are answered again and again.
        for _ in 0..<3 { _ = try self.cookie(&service, member: 1) }
        // Member 0 (the house key, shared by every holder) numbers nothing.
        let zero = try self.cookie(&service, member: 0, peer: 3)
        #expect(send(&service, .roomReport(RoomReport(name: "any")), member: 0, cookie: zero, peer: 3).count == 1)
        #expect(send(&service, .roomReport(RoomReport(name: "any")), member: 0, cookie: zero, peer: 3).count == 1)
    }

    @Test func aMemberSpeaksForItsOwnRoomOnly() throws {
        var service = service()
        let cookie = try cookie(&service, member: 1)
        let passed = send(&service, .roomReport(RoomReport(name: "room 1")), member: 1, sequence: 1, cookie: cookie)
        guard case let .report(report, _, member, _) = try #require(passed.first) else { return }
        #expect(report.name == "room 1" && member == 1)
        #expect(send(&service, .roomReport(RoomReport(name: "room 2")), member: 1, sequence: 2, cookie: cookie).isEmpty)
        #expect(service.counts.refused == 1)
    }

    /// A holder of the house key enrols (with its cookie), while enrolment is open; after
    /// that, it is a stranger.
    @Test func holdersOfTheHouseKeyEnrolWhileItIsOpen() throws {
        var service = service()
        let enrol = ControlMessage.enroll(nonce: 77, name: "Patio")
        #expect(send(&service, enrol, member: 0).isEmpty, "no cookie yet")
        let cookie = try cookie(&service, member: 0)
        let actions = send(&service, enrol, member: 0, cookie: cookie)
        #expect(actions.count == 2)
        guard case let .send(bytes, to) = try #require(actions.last) else { return }
        #expect(to == 1 && bytes.count <= enrol.seal(stamp: 0, with: Members.keys[0]!).count, "no larger than the request")
        #expect(try ControlMessage.open(bytes, with: Members.keys[0]!).message == .enrolled(nonce: 77, member: 3, sealed: Array("Patio".utf8)))
        guard case .enrolled(member: 3, name: "Patio", from: 1) = actions[0] else {
            Issue.record("\(actions[0])")
            return
        }
        // A member enrols no further.
        let member = try self.cookie(&service, member: 1, peer: 2)
        #expect(send(&service, enrol, member: 1, sequence: 1, cookie: member, peer: 2).isEmpty)
        members.open.store(false, ordering: .relaxed)
        #expect(!send(&service, .timeRequest(originate: 1), member: 0).contains(where: Self.answers))
    }

    /// A member that holds an older generation of the stream's key is sent the newest,
    /// sealed for it; one that holds it is sent nothing, and the house hears that it does.
    @Test func theStreamsKeyGoesToMembersThatAskForIt() throws {
        var service = service()
        let cookie = try cookie(&service, member: 2)
        let request = ControlMessage.keyRequest(generation: 3)
        let actions = send(&service, request, member: 2, sequence: 1, cookie: cookie)
        guard case let .send(bytes, _) = try #require(actions.first) else { return }
        #expect(bytes.count <= request.seal(stamp: 0, with: Members.keys[2]!).count, "no larger than the request")
        #expect(try ControlMessage.open(bytes, with: Members.keys[2]!).message == .streamKey(generation: 4, sealed: [2]))
        #expect(send(&service, .keyRequest(generation: 4), member: 2, sequence: 2, cookie: cookie).isEmpty)
        #expect(members.held.withLock { $0 } == [2: 4])
    }

    /// A member's session: enrols after its first answer, reports meanwhile, asks for the
    /// stream's key when the coordinator names a newer generation, numbers its messages
    /// with the coordinator's clock.
    @Test func aSessionEnrolsAndAsksForTheStreamsKey() throws {
        var session = CoordinatorSession(unicastPort: nil, reportsRoom: true, enrollAs: "Patio", nonce: 5, heldGeneration: 0)
        let start: Int64 = 1_000_000_000
        #expect(session.turn(now: start, lock: ClockLock(uncertainty: nil, suspect: false)) == [.requestTime])
        session.requestSent(originate: start)
        let at = NTPTimestamp(CoordinatorTime(nanoseconds: 9_000_000_000))
        _ = session.receive(.timeResponse(originate: UInt64(start), receive: at, transmit: at, cookie: 8), stamp: 0, generation: 2,
                            arrived: LocalTime(nanoseconds: start + 100_000))
        let turn = session.turn(now: start + 200_000, lock: ClockLock(uncertainty: 10_000, suspect: false))
        #expect(turn.contains(.send(.enroll(nonce: 5, name: "Patio"))) && turn.contains(.sendReport))
        #expect(!turn.contains { if case .send(.keyRequest) = $0 { true } else { false } }, "not before it is a member")
        let first = session.sequence(at: start + 200_000)
        #expect(first == 9_000_100_000, "the coordinator's clock then")
        #expect(session.sequence(at: start + 200_000) == first + 1)
        let stamp = NTPTimestamp(CoordinatorTime(nanoseconds: 9_000_300_000)).rawValue
        #expect(session.receive(.enrolled(nonce: 6, member: 3, sealed: []), stamp: stamp, arrived: LocalTime(nanoseconds: start + 300_000)).isEmpty,
                "another enrolment's answer")
        #expect(session.receive(.enrolled(nonce: 5, member: 3, sealed: [1]), stamp: stamp, arrived: LocalTime(nanoseconds: start + 300_000))
            == [.enrolled(member: 3, sealed: [1])])
        #expect(session.enrollingAs == nil)
        // Generation 2 is newer than the one it holds: it asks, then holds it and says so once.
        #expect(session.turn(now: start + 400_000, lock: ClockLock(uncertainty: 10_000, suspect: false)).contains(.send(.keyRequest(generation: 0))))
        #expect(session.receive(.streamKey(generation: 2, sealed: [9]), stamp: stamp, arrived: LocalTime(nanoseconds: start + 500_000))
            == [.streamKey(generation: 2, sealed: [9])])
        session.holdKey(generation: 2)
        #expect(session.turn(now: start + 600_000, lock: ClockLock(uncertainty: 10_000, suspect: false)).contains(.send(.keyRequest(generation: 2))))
        #expect(!session.turn(now: start + 3_000_000_000, lock: ClockLock(uncertainty: 10_000, suspect: false))
            .contains { if case .send(.keyRequest) = $0 { true } else { false } })
    }
}
