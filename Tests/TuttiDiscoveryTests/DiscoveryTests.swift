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
}
