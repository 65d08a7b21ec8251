import Testing
@testable import TuttiDiscovery

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
