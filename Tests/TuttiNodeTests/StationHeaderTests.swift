import AsyncHTTPClient
import Testing
import TuttiCore
@testable import TuttiRemote

/// What a station's answer head says, with every boundary number a hostile one can put in
/// its lengths, ranges and ICY headers: read within range or as unknown, never a trap.
@Suite("A station's headers")
struct StationHeaderTests {
    static let numbers = ["0", "-1", "1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                          "18446744073709551615", "99999999999999999", "1e308", "inf", "nan", "0x10", "", " 12 ", "1,2",
                          String(repeating: "9", count: 400)]

    static func answer(_ headers: [(String, String)], status: Int = 200) -> RemoteFetcher.Answer {
        RemoteFetcher.Answer(status: status, headers: [("Content-Type", "audio/mpeg")] + headers, url: "http://radio.example/x",
                             body: HTTPClientResponse.Body())
    }

    @Test func lengthsRangesAndBitRatesAreBoundedWhereTheyAreRead() throws {
        for value in Self.numbers {
            for offset: Int64 in [0, 1, Int64.max - 1, 1 << 50] {
                for headers in [[("Content-Length", value)], [("Content-Range", "bytes 5-9/\(value)")],
                                [("Content-Length", value), ("Accept-Ranges", "bytes")], [("icy-br", value), ("icy-metaint", value)],
                                [("icy-br", value + ",128")]] {
                    let facts = try RemoteStream.facts(of: Self.answer(headers, status: offset > 0 ? 206 : 200), url: "http://radio.example/x",
                                                       offset: offset, known: nil)
                    if let size = facts.size { #expect(size >= 0, "\(headers) +\(offset)") }
                    if let rate = facts.announcedBitRate {
                        #expect(OutsideNumber.kilobitsPerSecond.contains(rate))
                        _ = rate * 1000  // what the player does with it
                    }
                }
            }
        }
        let honest = try RemoteStream.facts(of: Self.answer([("Content-Length", "1000"), ("icy-br", "128")]), url: "x", offset: 0, known: nil)
        #expect(honest.announcedBitRate == 128)
        let resumed = try RemoteStream.facts(of: Self.answer([("Content-Length", "9223372036854775807")], status: 206), url: "x",
                                             offset: 20_000, known: nil)
        #expect(resumed.size == nil, "a length past a petabyte is no length")
        let ranged = try RemoteStream.facts(of: Self.answer([("Content-Length", "800"), ("Content-Range", "bytes 200-999/1000")], status: 206),
                                            url: "x", offset: 200, known: nil)
        #expect(ranged.size == 1000)
    }
}
