import Testing
@testable import TuttiDiscovery
import TuttiSecurity

@Suite struct DiscoveryChoiceTests {
    static func found(_ name: String, _ port: UInt16, key: String?) -> Discovery.Found {
        Discovery.Found(name: name, host: "10.0.0.1", clockPort: port, records: key.map { ["house-key": $0, "control": "8485"] } ?? [:])
    }

    @Test func theOnlyOneIsTakenAndOfSeveralTheOneOfThisHousesKey() {
        let lake = Self.found("Lake House", 5005, key: "aa11"), city = Self.found("City Flat", 5105, key: "bb22")
        #expect(Discovery.choose([lake], houseKey: nil) == .success(lake))
        #expect(Discovery.choose([lake, city], houseKey: "bb22") == .success(city))
        #expect(Discovery.choose([lake, city], houseKey: nil) == .failure(.several([lake, city])))
        #expect(Discovery.choose([lake, city], houseKey: "cc33") == .failure(.several([lake, city])))
        #expect(Discovery.choose([], houseKey: "aa11") == .failure(.none))
        #expect(Discovery.Choice.several([lake, city]).description
            == "2 coordinators on the network: 'Lake House' at 10.0.0.1:5005 (house key aa11); 'City Flat' at 10.0.0.1:5105 (house key bb22); choose one with --coordinator HOST[:PORT]")
        #expect(Discovery.Choice.none.description(naming: "--server http://HOST:PORT").hasSuffix("give its address with --server http://HOST:PORT"))
    }

    @Test func txtRecordsAreReadAsRFC6763SaysAndTheControlAddressMadeOfThem() {
        // Keys are case-insensitive, the first of a key counts, a bare key is present and empty.
        let records = Discovery.records(["v=1", "Control=8485", "control=9999", "tls=1", "flag", "=nokey", "house-key=a=b"])
        #expect(records == ["v": "1", "control": "8485", "tls": "1", "flag": "", "house-key": "a=b"])
        let found = Discovery.Found(name: "x", host: "10.0.0.7", clockPort: 5005, records: records)
        #expect(found.controlURL == "https://10.0.0.7:8485")
        #expect(Discovery.Found(name: "x", host: "10.0.0.7", clockPort: 5005, records: ["control": "x"]).controlURL == nil)
        #expect(Discovery.strings(["v": "1", "control": "8485"]) == ["control=8485", "v=1"])
    }

    /// A room's machine that starts before the coordinator (or before avahi-daemon) waits
    /// for it, saying once why; several houses of other keys are an error at once.
    @Test func aFollowerWithoutAnAddressWaitsForTheCoordinatorSayingSoOnce() throws {
        let lake = Self.found("Lake House", 5005, key: "aa11"), city = Self.found("City Flat", 5105, key: "bb22")
        var answers: [Result<[Discovery.Found], Discovery.Failure>] = [
            .failure(.noDaemon("Daemon not running")), .success([]), .success([]), .success([lake]),
        ]
        var notices: [String] = [], pauses: [Double] = []
        let chosen = try Discovery.awaitCoordinator(houseKey: nil, interval: 5, notice: { notices.append($0) },
                                                    lookup: { () throws(Discovery.Failure) in try answers.removeFirst().get() },
                                                    pause: { pauses.append($0) })
        #expect(chosen == lake && answers.isEmpty)
        #expect(pauses == [5, 5, 5])
        #expect(notices == ["cannot look for a coordinator on the network: avahi-daemon is not running (Daemon not running); "
                            + "looking again every 5 s (or give its address with --coordinator HOST[:PORT])"])

        answers = [.success([]), .success([lake, city])]
        notices = []
        #expect(throws: Discovery.LookupError.self) {
            try Discovery.awaitCoordinator(houseKey: "cc33", notice: { notices.append($0) },
                                           lookup: { () throws(Discovery.Failure) in try answers.removeFirst().get() }, pause: { _ in })
        }
        #expect(notices.count == 1 && notices[0].hasPrefix("no coordinator is announced on the network yet (mDNS, _tutti._udp)"))
        answers = [.success([lake, city])]
        #expect(try Discovery.awaitCoordinator(houseKey: "bb22", notice: { _ in Issue.record("no notice") },
                                               lookup: { () throws(Discovery.Failure) in try answers.removeFirst().get() }, pause: { _ in }) == city)
    }
}

/// The proof in an announcement (docs/security.md, "Discovery"): a member takes a coordinator
/// only if it proves the house key, a controller only if it proves the token; a changed
/// record, another house's key, or an announcement replayed from another host proves nothing.
@Suite struct DiscoveryProofTests {
    static let key = HouseKey(bytes: Array(repeating: 7, count: 32))!
    static let token = "0123456789abcdef"

    /// An announcement as the coordinator makes it, from `host`, with proofs made with `key` and `token`.
    static let now: Int64 = 1_795_000_000
    static func announced(host: String = "10.0.0.1", addresses: String = "10.0.0.1,192.168.1.5", key: HouseKey = key,
                          token: String = token, made: Int64 = now - 600) -> Discovery.Found {
        var records = ["v": "1", "control": "8485", "tls": "0", "house-key": key.fingerprint, "addresses": addresses, "t": String(made)]
        let message = Discovery.proofMessage(clockPort: 5005, records: records)
        records["proof"] = DiscoveryProof(houseKey: key).tag(message)
        records["proof-token"] = DiscoveryProof(token: token).tag(message)
        return Discovery.Found(name: "Lake House", host: host, clockPort: 5005, records: records)
    }

    static func member(_ found: Discovery.Found, key: HouseKey = key) -> Bool {
        found.proves("proof", with: DiscoveryProof(houseKey: key).verifies, now: now)
    }
    static func controller(_ found: Discovery.Found, token: String = token) -> Bool {
        found.proves("proof-token", with: DiscoveryProof(token: token).verifies, now: now)
    }

    /// A proof made more than a day ago (a recorded announcement replayed) proves nothing;
    /// one made "in the future" (the finder's clock is behind) is taken; one with no time,
    /// or its time changed, proves nothing.
    @Test func aStaleAnnouncementProvesNothing() {
        #expect(Self.member(Self.announced(made: Self.now - 86_000)))
        #expect(!Self.member(Self.announced(made: Self.now - 90_000)) && !Self.controller(Self.announced(made: Self.now - 90_000)))
        #expect(Self.member(Self.announced(made: Self.now + 3 * 86_400)))
        var untimed = Self.announced()
        untimed.records["t"] = nil
        #expect(!Self.member(untimed))
        var moved = Self.announced(made: Self.now - 90_000)
        moved.records["t"] = String(Self.now)
        #expect(!Self.member(moved), "its time is signed with the rest")
    }

    @Test func theHousesCoordinatorProvesItselfAndNoOtherDoes() {
        let genuine = Self.announced()
        #expect(Self.member(genuine) && Self.controller(genuine))
        #expect(genuine.records["proof"]?.count == 32 && genuine.records["proof"] != genuine.records["proof-token"])
        // From its other address too; renamed by avahi-daemon, still itself.
        var renamed = Self.announced(host: "192.168.1.5")
        renamed.name = "Lake House #2"
        #expect(Self.member(renamed))

        // Another house's key or token.
        let other = HouseKey(bytes: Array(repeating: 9, count: 32))!
        #expect(!Self.member(genuine, key: other) && !Self.controller(genuine, token: "another token"))
        #expect(!Self.member(Self.announced(key: other)) && !Self.controller(Self.announced(token: "guess")))
        // Its records replayed from another host, or one of them changed (TLS off, another port).
        #expect(!Self.member(Self.announced(host: "10.0.0.66")) && !Self.controller(Self.announced(host: "10.0.0.66")))
        for (record, value) in [("tls", "1"), ("control", "9999"), ("addresses", "10.0.0.1,10.0.0.66")] {
            var changed = genuine
            changed.records[record] = value
            #expect(!Self.member(changed) && !Self.controller(changed), "\(record) changed")
        }
        var moved = genuine
        moved.clockPort = 5105
        #expect(!Self.member(moved))
        // No proof, or garbage where it goes.
        for tag in [nil, "", "zz", String(repeating: "0", count: 32), String(repeating: "é", count: 16)] {
            var forged = genuine
            forged.records["proof"] = tag
            forged.records["proof-token"] = tag
            #expect(!Self.member(forged) && !Self.controller(forged))
        }
    }

    @Test func aClientWithAKeyOrTokenChoosesOnlyAProvenCoordinator() {
        let genuine = Self.announced()
        let stranger = Self.announced(host: "10.0.0.66", addresses: "10.0.0.66", key: HouseKey(bytes: Array(repeating: 9, count: 32))!,
                                      token: "another")
        let member: (Discovery.Found) -> Bool = { Self.member($0) }
        #expect(Discovery.choose([stranger, genuine], houseKey: nil, proven: member) == .success(genuine))
        #expect(Discovery.choose([stranger], houseKey: nil, proven: member) == .failure(.unproven([stranger])))
        #expect(Discovery.Choice.unproven([stranger]).description(naming: "--server http://HOST:PORT")
            .contains("none proves it is this house's"))
        // Without a key or token a client sends nothing secret: it may take either.
        #expect(Discovery.choose([stranger], houseKey: nil) == .success(stranger))
    }
}

/// A follower's `--sendspin mdns`: the one Sendspin server announced, by its address and
/// path; it waits (saying so once) while there is none; of several it names them all.
@Suite struct SendspinServerChoiceTests {
    @Test func theOneServerIsTakenAndSeveralAreNamed() throws {
        var notices: [String] = []
        var lookups = 0
        let one = try Discovery.awaitSendspinServer(notice: { notices.append($0) }, lookup: { () throws(Discovery.Failure) in
            lookups += 1
            return lookups < 3 ? [] : [Discovery.Found(name: "Lake House", host: "10.79.0.1", clockPort: 8927, records: ["path": "/sendspin"])]
        }, pause: { _ in })
        #expect(one == "ws://10.79.0.1:8927/sendspin" && lookups == 3)
        #expect(notices == ["no Sendspin server is announced on the network yet (mDNS, _sendspin-server._tcp); looking again every 5 s "
                            + "(or give its address with --sendspin ws://HOST:PORT/sendspin)"])
        let pathless = try Discovery.awaitSendspinServer(notice: { _ in }, lookup: { () throws(Discovery.Failure) in
            [Discovery.Found(name: "MA", host: "10.0.0.9", clockPort: 8927, records: [:])]
        })
        #expect(pathless == "ws://10.0.0.9:8927/sendspin")
        #expect(throws: Discovery.LookupError.self) {
            try Discovery.awaitSendspinServer(notice: { _ in }, lookup: { () throws(Discovery.Failure) in
                [Discovery.Found(name: "A", host: "10.0.0.1", clockPort: 8927, records: [:]),
                 Discovery.Found(name: "B", host: "10.0.0.2", clockPort: 8927, records: [:])]
            })
        }
    }
}
