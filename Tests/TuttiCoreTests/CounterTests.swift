import Testing
@testable import TuttiCore

@Suite("Wrapping counters")
struct CounterTests {
    @Test func sequenceAndTimestampDistancesAcrossTheWrap() {
        #expect(SequenceNumber(65_535).distance(to: SequenceNumber(2)) == 3)
        #expect(SequenceNumber(2).distance(to: SequenceNumber(65_535)) == -3)
        #expect(StreamTimestamp(UInt32.max - 959).distance(to: StreamTimestamp(0)) == 960)
        #expect(StreamTimestamp(UInt32.max).advanced(by: 961).rawValue == 960)
    }

    @Test func unwrapperExtendsSequenceNumbersThroughWrapsAndReordering() {
        var u = Unwrapper(bits: 16)
        do { let r = u.unwrap(65_534); #expect(r == 65_534) }
        do { let r = u.unwrap(65_535); #expect(r == 65_535) }
        do { let r = u.unwrap(1); #expect(r == 65_537) }  // skipped 0
        do { let r = u.unwrap(0); #expect(r == 65_536) }  // late: placed before, not after
        do { let r = u.unwrap(2); #expect(r == 65_538) }
        // Many wraps in order.
        var v = Unwrapper(bits: 16)
        var last: Int64 = 0
        for i in stride(from: Int64(0), to: 1_000_000, by: 1000) {
            last = v.unwrap(UInt64(i & 0xFFFF))
            #expect(last == i)
        }
    }

    @Test func unwrapperExtendsTimestamps() {
        var u = Unwrapper(bits: 32)
        let start = UInt64(UInt32.max) - 1919
        do { let r = u.unwrap(start); #expect(r == Int64(start)) }
        do { let r = u.unwrap(UInt64(UInt32.max) - 959); #expect(r == Int64(start) + 960) }
        do { let r = u.unwrap(0); #expect(r == Int64(start) + 1920) }
        do { let r = u.unwrap(960); #expect(r == Int64(start) + 2880) }
    }

    @Test func leaseTableExpiresRenewsAndCancels() {
        var t = LeaseTable<String>(maximumEntries: 2)
        do { let r = t.renew("a", until: 100, now: 0); #expect(r) }
        do { let r = t.renew("b", until: 50, now: 0); #expect(r) }
        do { let r = t.renew("c", until: 100, now: 0); #expect(!r) }  // full
        #expect(Set(t.active(now: 60)) == ["a"])
        do { let r = t.renew("c", until: 200, now: 60); #expect(r) }  // b expired, room again
        do { let r = t.renew("a", until: 0, now: 70); #expect(r) }  // cancel
        #expect(t.active(now: 70) == ["c"])
    }

    @Test func playlistParserResolvesRelativePathsAndTitles() {
        let text = "\u{FEFF}#EXTM3U\r\n#EXTINF:123,Artist - Song\r\nsong.mp3\r\n\r\n# comment\n/abs/other.mp3\nfile:///x/y.mp3\nhttp://radio.example/stream\n"
        let entries = PlaylistParser.parse(text, baseDirectory: "/music/list")
        #expect(entries.map(\.location) == ["/music/list/song.mp3", "/abs/other.mp3", "/x/y.mp3", "http://radio.example/stream"])
        #expect(entries[0].title == "Artist - Song")
        #expect(entries[1].title == nil)
    }
}

@Suite("SRTP indices")
struct SRTPIndexTests {
    @Test func theRolloverCounterGrowsWhenTheSequenceWraps() {
        var counter = RolloverCounter()
        #expect(counter.next(65_534) == 0)
        #expect(counter.next(65_535) == 0)
        #expect(counter.next(0) == 1)
        #expect(counter.next(1) == 1)
        #expect(counter.next(200) == 1)
        #expect(counter.next(100) == 2, "a step back (a new start at a random number) never reuses an index")
    }

    @Test func theWindowRefusesReplaysAndTheTooOld() {
        var window = ReplayWindow()
        #expect(window.isFresh(1000))
        window.accept(1000)
        #expect(!window.isFresh(1000))
        #expect(window.isFresh(999) && window.isFresh(1001))
        window.accept(1003)
        #expect(window.isFresh(1001) && window.isFresh(1002) && !window.isFresh(1000) && !window.isFresh(1003))
        window.accept(1001)
        #expect(!window.isFresh(1001))
        #expect(window.isFresh(1003 - 63) && !window.isFresh(1003 - 64), "64 behind the newest is too old to tell")
        window.accept(1003 + 500)
        #expect(!window.isFresh(1003) && window.isFresh(1003 + 499))
    }

    @Test func theIndexIsGuessedNearTheNewest() {
        var window = ReplayWindow()
        #expect(window.index(of: 7) == 7, "a new stream starts at rollover 0")
        window.accept(3 << 16 | 65_530)
        #expect(window.index(of: 65_531) == 3 << 16 | 65_531)
        #expect(window.index(of: 2) == 4 << 16 | 2, "just wrapped")
        window.accept(4 << 16 | 2)
        #expect(window.index(of: 65_533) == 3 << 16 | 65_533, "late, from before the wrap")
        #expect(window.index(of: 40_000) == 3 << 16 | 40_000)
    }
}

@Suite("Failed token limit")
struct FailedTokenLimitTests {
    @Test func tenFailuresAMinuteThenNothingUntilTheFirstAgesOut() {
        var limit = FailedTokenLimit<String>(allowed: 10, window: 60_000_000_000)
        let s: Int64 = 1_000_000_000
        for i in 0..<10 {
            #expect(limit.wait(for: "a", at: Int64(i) * s) == nil)
            limit.failed("a", at: Int64(i) * s)
        }
        #expect(limit.wait(for: "a", at: 10 * s) == 50 * s, "blocked until the first failure is a minute old")
        #expect(limit.wait(for: "b", at: 10 * s) == nil, "others are not")
        #expect(limit.wait(for: "a", at: 60 * s) == nil, "one failure aged out: one more try")
        limit.failed("a", at: 60 * s)
        #expect(limit.wait(for: "a", at: 60 * s + s / 2) != nil)
        #expect(limit.refused == 2)
    }

    @Test func manyAddressesCannotGrowIt() {
        var limit = FailedTokenLimit<Int>(allowed: 2, window: 60_000_000_000, capacity: 8)
        for peer in 0..<1_000 { limit.failed(peer, at: Int64(peer)) }
        limit.failed(999, at: 1_000)
        #expect(limit.wait(for: 999, at: 1_001) != nil, "the newest are remembered")
        #expect(limit.wait(for: 0, at: 1_001) == nil, "the quietest forgotten")
    }
}

@Suite("Pairing window")
struct PairingWindowTests {
    /// Strangers' wrong proofs do not close the code on the member it was shown for: each
    /// sender may make ten of them and no more (the code stays open for everyone else);
    /// 100,000, a brute force's budget from 10,000 senders, spend it.
    @Test func oneCodeForFiveMinutesAndFiveTriesPerSender() {
        var window = PairingWindow()
        #expect(window.state(at: 0) == .closed)
        #expect(window.failed(by: "10.0.0.9") == 0, "no code open: nothing to spend")
        window.open("AAAAAAAAAA", at: 0)
        #expect(window.state(at: 1) == .open(code: "AAAAAAAAAA", triesLeft: 100_000))
        #expect(window.secondsLeft(at: 60_000_000_000) == 240)
        for sender in 0..<100 {
            for _ in 0..<15 where window.admits("10.0.\(sender / 256).\(sender % 256)") { _ = window.failed(by: "10.0.\(sender / 256).\(sender % 256)") }
        }
        #expect(window.state(at: 2) == .open(code: "AAAAAAAAAA", triesLeft: 99_000), "ten from each of 100 senders")
        #expect(!window.admits("10.0.0.1") && window.admits("192.168.1.20"), "the member's own address may still pair")
        for sender in 100..<10_000 {
            for _ in 0..<10 { _ = window.failed(by: "s\(sender)") }
        }
        #expect(window.state(at: 2) == .closed, "spent by 10,000 senders' wrong tries")
        window.open("DDDDDDDDDD", at: 3)
        #expect(window.admits("10.0.0.1"), "a new code: every sender may try again")
        window.open("BBBBBBBBBB", at: 10)
        window.used()
        #expect(window.state(at: 11) == .closed, "spent by a pairing")
        window.open("CCCCCCCCCC", at: 0)
        #expect(window.state(at: PairingWindow.lifetime) == .expired)
        #expect(window.state(at: PairingWindow.lifetime + 1) == .closed)
    }
}

@Suite("Bounded cache")
struct BoundedCacheTests {
    /// At most its capacity: past it, a tenth goes, those used longest ago; one read lately stays.
    @Test func holdsItsCapacityAndForgetsTheLeastUsed() {
        var cache = BoundedCache<Int, String>(capacity: 100)
        for n in 0..<100 { cache[n] = "\(n)" }
        _ = cache[0]  // read: used now
        cache[100] = "100"
        #expect(cache.count == 90)
        #expect(cache[0] == "0" && cache[100] == "100")
        #expect(cache[1] == nil && cache[11] == nil && cache[12] == "12", "1 to 11 went (0 was read)")
        cache.update(12) { $0 += "!" }
        #expect(cache[12] == "12!")
        cache[12] = nil
        #expect(cache[12] == nil)
        for n in 0..<10_000 { cache[1_000 + n] = "x" }
        #expect(cache.count <= 100)
    }
}
