import Testing
import TuttiCore
@testable import TuttiRemote

/// The request a remote fetch makes goes to the address its scope checked (docs/security.md,
/// "Remote sources"): the URL names the address, the Host header the name.
@Suite("Remote fetches go to the address checked")
struct FetchPinningTests {
    @Test func plainHTTPNamesTheAddressCheckedAndKeepsTheHost() {
        let request = RemoteFetcher.request(for: "http://radio.example:8000/live.mp3?x=1", connectingTo: .v4(0xC0A8_0102))
        #expect(request.url == "http://192.168.1.2:8000/live.mp3?x=1")
        #expect(request.headers["Host"] == ["radio.example:8000"])
        let noPort = RemoteFetcher.request(for: "http://radio.example/a%20b.mp3", connectingTo: .v4(0x0A00_0001))
        #expect(noPort.url == "http://10.0.0.1/a%20b.mp3" && noPort.headers["Host"] == ["radio.example"])
        let v6 = RemoteFetcher.request(for: "http://radio.example/a.mp3", connectingTo: .v6([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]))
        #expect(v6.url == "http://[2001:db8:0:0:0:0:0:1]/a.mp3")
    }

    @Test func tlsAndAddressesAndUncheckedURLsAreLeftAsTheyAre() {
        // TLS checks the name in the server's certificate: the URL keeps it.
        #expect(RemoteFetcher.request(for: "https://radio.example/a.mp3", connectingTo: .v4(0x0A00_0001)).url == "https://radio.example/a.mp3")
        #expect(RemoteFetcher.request(for: "http://10.0.0.1/a.mp3", connectingTo: .v4(0x0A00_0001)).headers["Host"].isEmpty)
        #expect(RemoteFetcher.request(for: "http://radio.example/a.mp3", connectingTo: nil).url == "http://radio.example/a.mp3")
    }
}
