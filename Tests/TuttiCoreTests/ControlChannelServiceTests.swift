import Testing
import TuttiCore
import TuttiTesting

/// The coordinator's side of the control channel, alone: datagrams in, actions out.
@Suite("The coordinator's control channel")
struct ControlChannelServiceTests {
    static let key = SumTag(key: 7)
    /// Peers are numbers; a peer at another port is the number plus 1000 × the port.
    typealias Service = ControlChannelService<Int>

    func service() -> Service {
        // The house's streams: the default zone's (0xAB) and another zone's (0xCD).
        Service(key: Self.key, cookieKey: SumTag(key: 99), stream: { $0 == 0xCD ? 0xCD : 0xAB }, payloadType: 96,
                addressBytes: { [UInt8(truncatingIfNeeded: $0 % 1000)] }, atPort: { $0 % 1000 + 1000 * Int($1) })
    }

    /// Asks the time at `t2` as `peer` with `cookie`; returns the answer's cookie.
    func exchange(_ service: inout Service, peer: Int, cookie: UInt64 = 0, at t2: Int64) throws -> UInt64 {
        let clock = ManualClock(start: t2 + 15_000)
        let actions = service.receive(ControlMessage.timeRequest(originate: 42).seal(stamp: cookie, with: Self.key),
                                      from: peer, at: t2, clock: clock)
        guard case let .send(bytes, to) = try #require(actions.first), actions.count == 1, to == peer else {
            Issue.record("no single answer: \(actions)")
            return 0
        }
        let (message, stamp) = try ControlMessage.open(bytes, with: Self.key)
        guard case let .timeResponse(originate, receive, transmit, answerCookie) = message else {
            Issue.record("not a time response: \(message)")
            return 0
        }
        #expect(originate == 42)
        #expect(receive.coordinatorTime.nanoseconds == t2)
        #expect(transmit.coordinatorTime.nanoseconds == t2 + 15_000 && stamp == transmit.rawValue)
        #expect(answerCookie != 0)
        return answerCookie
    }

    @Test func timeRequestsAreAnsweredWithTheirReceiveAndTransmitTimesAndACookie() throws {
        var service = service()
        let first = try exchange(&service, peer: 1, at: 1_000_000_000)
        // The same address gets the same cookie within its slot; another address another one.
        #expect(try exchange(&service, peer: 1, cookie: first, at: 2_000_000_000) == first)
        #expect(try exchange(&service, peer: 2, at: 2_000_000_000) != first)
    }

    /// Subscriptions and room reports need the cookie of the address they come from; so do
    /// retransmission requests (the peer must have exchanged time with it lately).
    @Test func onlyPeersWithTheirCookieSubscribeReportAndAskAgain() throws {
        var service = service()
        let clock = ManualClock(start: 5_000_000_000)
        let t: Int64 = 5_000_000_000
        let subscribe = ControlMessage.subscribe(rtpPort: 5004, leaseSeconds: 600)
        let report = ControlMessage.roomReport(RoomReport(name: "Kitchen", state: .playing))
        #expect(service.receive(subscribe.seal(stamp: 0, with: Self.key), from: 1, at: t, clock: clock).isEmpty)
        #expect(service.receive(report.seal(stamp: 12345, with: Self.key), from: 1, at: t, clock: clock).isEmpty)
        #expect(service.counts.unverified == 2)
        #expect(!service.admitsFeedback(from: 1, at: t))

        let cookie = try exchange(&service, peer: 1, cookie: 0, at: t)
        // The answer's cookie alone does not admit: a message carrying it does.
        #expect(!service.admitsFeedback(from: 1, at: t))
        let actions = service.receive(subscribe.seal(stamp: cookie, with: Self.key), from: 1, at: t, clock: clock)
        guard case let .subscribe(target, until, stream, reply, to) = try #require(actions.first) else {
            Issue.record("no subscription: \(actions)")
            return
        }
        #expect(target == 1 + 5004 * 1000 && to == 1)
        #expect(until == t + 60_000_000_000, "a lease is 60 s at most")
        #expect(stream == 0xAB)
        // Another zone's stream, asked for by its SSRC; one the house does not have is the default zone's.
        for (wanted, given) in [(UInt32(0xCD), UInt32(0xCD)), (0x99, 0xAB)] {
            let asked = ControlMessage.subscribe(rtpPort: 5004, leaseSeconds: 30, stream: wanted).seal(stamp: cookie, with: Self.key)
            guard case let .subscribe(_, _, filed, answer, _) = try #require(service.receive(asked, from: 1, at: t, clock: clock).first) else {
                Issue.record("no subscription to \(wanted)")
                continue
            }
            #expect(filed == given)
            #expect(try ControlMessage.open(answer, with: Self.key).message == .subscribed(ssrc: given, payloadType: 96))
        }
        #expect(try ControlMessage.open(reply, with: Self.key).message == .subscribed(ssrc: 0xAB, payloadType: 96))
        #expect(service.admitsFeedback(from: 1, at: t + 9_000_000_000))
        #expect(!service.admitsFeedback(from: 1, at: t + 10_000_000_000))
        #expect(!service.admitsFeedback(from: 2, at: t))
        // Another address with this one's cookie is not this one.
        #expect(service.receive(report.seal(stamp: cookie, with: Self.key), from: 2, at: t, clock: clock).isEmpty)
        let passed = service.receive(report.seal(stamp: cookie, with: Self.key), from: 1, at: t, clock: clock)
        guard case let .report(room, from, _, at) = try #require(passed.first) else {
            Issue.record("the report was not passed on: \(passed)")
            return
        }
        #expect(room.name == "Kitchen" && room.state == .playing && from == 1 && at == t)
    }

    /// A stranger's messages are counted and dropped; a time request signed with another
    /// key is told, once a second at most, that this house does not know it.
    @Test func strangersAreCountedAndToldOnceASecond() {
        var service = service()
        let clock = ManualClock()
        let stranger = ControlMessage.timeRequest(originate: 1).seal(stamp: 0, with: SumTag(key: 8))
        let first = service.receive(stranger, from: 3, at: 1_000_000_000, clock: clock)
        #expect(first.first == .firstStranger(3))
        #expect(first.contains(.send(ControlMessage.notPaired.seal(stamp: 0, with: Self.key), to: 3)))
        #expect(service.receive(stranger, from: 3, at: 1_500_000_000, clock: clock).isEmpty)
        #expect(service.receive(stranger, from: 4, at: 2_000_000_000, clock: clock).count == 1)
        // Anything else from a stranger, and garbage, gets nothing.
        let report = ControlMessage.roomReport(RoomReport(name: "x", state: .playing)).seal(stamp: 0, with: SumTag(key: 8))
        #expect(service.receive(report, from: 3, at: 4_000_000_000, clock: clock).isEmpty)
        #expect(service.receive([1, 2, 3], from: 3, at: 4_000_000_000, clock: clock).isEmpty)
        #expect(service.counts.unauthenticated == 4 && service.counts.rejected == 1)
        // Messages only a coordinator sends are refused, even signed.
        let forged = ControlMessage.epochEnd(epoch: 1, at: NTPTimestamp(nanoseconds: 1)).seal(stamp: 0, with: Self.key)
        #expect(service.receive(forged, from: 3, at: 4_000_000_000, clock: clock).isEmpty)
        #expect(service.counts.rejected == 2)
    }
}
