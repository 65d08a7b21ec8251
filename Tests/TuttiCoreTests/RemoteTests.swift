import Testing
@testable import TuttiCore

/// Internet radio's in-band metadata, playlists in every format and place, and the rules
/// remote sources follow.
@Suite("Remote sources")
struct RemoteTests {
    /// An ICY stream: `interval` audio bytes (counting up), then a metadata block, repeated.
    static func icyStream(interval: Int, blocks: [String?], audioAfter: Int = 0) -> (bytes: [UInt8], audio: [UInt8]) {
        var bytes: [UInt8] = [], audio: [UInt8] = []
        var n: UInt8 = 0
        func addAudio(_ count: Int) {
            for _ in 0..<count {
                bytes.append(n)
                audio.append(n)
                n &+= 1
            }
        }
        for block in blocks {
            addAudio(interval)
            guard let block else {
                bytes.append(0)
                continue
            }
            var text = Array(block.utf8)
            text += [UInt8](repeating: 0, count: (16 - text.count % 16) % 16)
            bytes.append(UInt8(text.count / 16))
            bytes += text
        }
        addAudio(audioAfter)
        return (bytes, audio)
    }

    @Test(arguments: [1, 2, 7, 100, 10_000])
    func icyMetadataComesOutAndTheAudioStaysWholeInAnyChunking(chunk: Int) throws {
        let (stream, expected) = Self.icyStream(interval: 50, blocks: [
            "StreamTitle='Alpha - One';StreamUrl='';", nil, "StreamTitle='Beta - Two';", nil, nil,
        ], audioAfter: 20)
        var demuxer = try #require(IcyDemuxer(interval: 50))
        var audio: [UInt8] = [], titles: [String?] = []
        var index = 0
        while index < stream.count {
            let end = min(stream.count, index + chunk)
            titles += demuxer.push(stream[index..<end], audio: &audio).map(\.streamTitle)
            index = end
        }
        #expect(audio == expected)
        #expect(titles == ["Alpha - One", "Beta - Two"])
    }

    @Test func aStreamCutInsideABlockGivesNoHalfTitle() throws {
        let (stream, _) = Self.icyStream(interval: 10, blocks: ["StreamTitle='Alpha - One';"])
        var demuxer = try #require(IcyDemuxer(interval: 10))
        var audio: [UInt8] = []
        #expect(demuxer.push(stream.dropLast(3), audio: &audio).isEmpty)
        #expect(audio.count == 10)
    }

    @Test func badIntervalsAreRefused() {
        #expect(IcyDemuxer(interval: 0) == nil)
        #expect(IcyDemuxer(interval: -5) == nil)
        #expect(IcyDemuxer(interval: 2 << 20) == nil)
    }

    @Test func titlesKeepTheirOwnQuotesAndSplitIntoArtistAndTitle() {
        let block = IcyMetadata(Array("StreamTitle='Guns N' Roses - Don't Cry';StreamUrl='http://x';".utf8) + [0, 0, 0])
        #expect(block.streamTitle == "Guns N' Roses - Don't Cry")
        #expect(block.fields["StreamUrl"] == "http://x")
        #expect(block.artistAndTitle! == ("Guns N' Roses", "Don't Cry"))
        #expect(IcyMetadata(Array("StreamTitle='Just a show';".utf8)).artistAndTitle! == (nil, "Just a show"))
        #expect(IcyMetadata(Array("StreamTitle='';".utf8)).streamTitle == nil)
        #expect(IcyMetadata(Array("garbage without fields".utf8)).fields.isEmpty)
        // Found by the fuzzer: a value opened at the very end (its range ran backwards).
        #expect(IcyMetadata(Array("St=eamTitle='".utf8)).fields == ["St=eamTitle": ""])
        #expect(IcyMetadata(Array("StreamTitle='".utf8)).streamTitle == nil)
        // Latin-1, as older servers send it.
        #expect(IcyMetadata([UInt8]("StreamTitle='Caf".utf8) + [0xE9] + [UInt8]("';".utf8)).streamTitle == "Café")
    }

    @Test func m3uWithTitlesAndRelativeEntriesAgainstAURL() {
        let text = "#EXTM3U\n#EXTINF:123,Artist - First\nfirst.mp3\n../up/second.mp3\n/root.mp3\nhttps://other.example/x.mp3\n"
        let entries = PlaylistParser.parse(text, format: .m3u, base: "http://host:8000/lists/today.m3u?x=1")
        #expect(entries == [
            .init(location: "http://host:8000/lists/first.mp3", title: "Artist - First"),
            .init(location: "http://host:8000/up/second.mp3"),
            .init(location: "http://host:8000/root.mp3"),
            .init(location: "https://other.example/x.mp3"),
        ])
    }

    @Test func plsInTheOrderOfItsNumbers() {
        let text = "[playlist]\nNumberOfEntries=3\nFile2=b.mp3\nTitle2=Second\nFile1=http://radio.example/stream\nTitle1=Radio\nLength1=-1\nFile3=/abs/c.mp3\nVersion=2\n"
        #expect(PlaylistParser.parse(text, format: .pls, base: "/music") == [
            .init(location: "http://radio.example/stream", title: "Radio"),
            .init(location: "/music/b.mp3", title: "Second"),
            .init(location: "/abs/c.mp3"),
        ])
    }

    @Test func formatsByExtensionContentTypeAndFirstLine() {
        #expect(PlaylistParser.Format(location: "/a/b.M3U8") == .m3u)
        #expect(PlaylistParser.Format(location: "http://h/list.pls?session=3") == .pls)
        #expect(PlaylistParser.Format(location: "http://h/stream") == nil)
        #expect(PlaylistParser.Format(location: "/dir.pls/file.mp3") == nil)
        #expect(PlaylistParser.Format(contentType: "audio/x-scpls; charset=utf-8") == .pls)
        #expect(PlaylistParser.Format(contentType: "application/vnd.apple.mpegurl") == .m3u)
        #expect(PlaylistParser.Format(contentType: "audio/mpeg") == nil)
        #expect(PlaylistParser.Format(sniffing: "\u{FEFF}[playlist]\nFile1=x") == .pls)
        #expect(PlaylistParser.Format(sniffing: "#EXTM3U\n") == .m3u)
        #expect(PlaylistParser.Format(sniffing: "x.mp3") == nil)
    }

    @Test func urlsAreResolvedAsRFC3986Says() {
        let base = "http://a/b/c/d;p?q"
        #expect(PlaylistParser.resolveURL("g", against: base) == "http://a/b/c/g")
        #expect(PlaylistParser.resolveURL("./g", against: base) == "http://a/b/c/g")
        #expect(PlaylistParser.resolveURL("g/", against: base) == "http://a/b/c/g/")
        #expect(PlaylistParser.resolveURL("/g", against: base) == "http://a/g")
        #expect(PlaylistParser.resolveURL("//g", against: base) == "http://g")
        #expect(PlaylistParser.resolveURL("g?y", against: base) == "http://a/b/c/g?y")
        #expect(PlaylistParser.resolveURL("../g", against: base) == "http://a/b/g")
        #expect(PlaylistParser.resolveURL("../../g", against: base) == "http://a/g")
        #expect(PlaylistParser.resolveURL("../../../g", against: base) == "http://a/g")
        #expect(PlaylistParser.resolveURL("..", against: base) == "http://a/b/")
        #expect(PlaylistParser.resolve("pcm:/fifo", against: "/m") == "pcm:/fifo")
        #expect(PlaylistParser.resolve("file:///x/y.mp3", against: "/m") == "/x/y.mp3")
    }

    @Test func remoteEntriesAndTheirNames() {
        #expect(RemoteLocation.isRemote("HTTPS://host/x"))
        #expect(RemoteLocation.isRemote("http://host"))
        #expect(!RemoteLocation.isRemote("/music/http://x"))
        #expect(!RemoteLocation.isRemote("pcm:-"))
        #expect(RemoteLocation.displayName("http://host:8000/music/My%20Song.mp3?token=1") == "My Song")
        #expect(RemoteLocation.displayName("http://radio.example:8000/") == "radio.example:8000")
        #expect(RemoteLocation.displayName("http://host/bad%zz.mp3") == "bad%zz")
        #expect(RemoteLocation.displayName("http://host/Rock+Roll.mp3") == "Rock+Roll", "a path's + is itself")
    }

    @Test func theBufferStartsFullEnoughAndPlaysUntilDry() {
        let policy = BufferPolicy(start: 1.0)
        #expect(!policy.shouldPlay(playing: false, seconds: 0.5, hasData: true, complete: false))
        #expect(policy.shouldPlay(playing: false, seconds: 1.0, hasData: true, complete: false))
        #expect(policy.shouldPlay(playing: false, seconds: 0.1, hasData: true, complete: true), "a short file plays whole")
        #expect(!policy.shouldPlay(playing: false, seconds: 0, hasData: false, complete: true))
        #expect(policy.shouldPlay(playing: true, seconds: 0.01, hasData: true, complete: false))
        #expect(!policy.shouldPlay(playing: true, seconds: 0, hasData: false, complete: false))
    }

    @Test func statusRoundsToWhatABarShows() {
        let waiting = StreamStatus(phase: .buffering, bufferedSeconds: 1.234, loadedFraction: 0.4567).rounded
        #expect(waiting.bufferedSeconds == 1.2 && waiting.loadedFraction == 0.46)
        #expect(StreamStatus(phase: .buffering, bufferedSeconds: 7.6).rounded.bufferedSeconds == 8)
        // Playing, coarser: a steady stream's buffer wobbles without an event each time.
        let playing = StreamStatus(phase: .ready, bufferedSeconds: 1.234, loadedFraction: 0.4567).rounded
        #expect(playing.bufferedSeconds == 1 && playing.loadedFraction == 0.45)
    }

    /// A source that gives nothing only briefly goes on; one that misses its packet's send
    /// time has its epoch's end told once, and goes on anew when it has audio again.
    @Test func aDrySourceIsToldOnceAndGoesOnAnew() {
        let ms: Int64 = 1_000_000
        let t = TransportTests.t
        let next = t(1_000)
        var watch = DryWatch(latency: 150 * ms)
        // Nothing at 800 ms: the packet for 1000 ms is not due until 850 ms. Back at 820 ms,
        // still in time (it must leave by 925 ms to reach the rooms).
        let early = watch.ranDry(now: t(800), next: next)
        let inTime = watch.resumed(now: t(820), next: next)
        let notStalled = watch.resumed(now: t(830), next: next)
        #expect(early == nil && !inTime && !notStalled)
        // Nothing at 860 ms: past its send time, the rooms are told, once.
        let told = watch.ranDry(now: t(860), next: next)
        let again = watch.ranDry(now: t(900), next: next)
        #expect(told == next && again == nil)
        // Back at 880 ms: the rooms were told, so it goes on anew however close it is.
        let anew = watch.resumed(now: t(880), next: next)
        #expect(anew)
        // A stall that never reached the send time, back too late, goes on anew too.
        var late = DryWatch(latency: 150 * ms)
        _ = late.ranDry(now: t(800), next: next)
        let tooLate = late.resumed(now: t(940), next: next)
        #expect(tooLate)
    }

    @Test func statusesAreToldWhenTheyChangeAndTheBufferAtMostTwiceASecond() {
        var throttle = StatusThrottle()
        let ms: Int64 = 1_000_000
        var s = StreamStatus(phase: .buffering, isLive: true, station: "FM", bufferedSeconds: 0.2)
        var told: [StreamStatus?] = []
        told.append(throttle.filter(s, now: 0))  // the first: told
        told.append(throttle.filter(s, now: 10 * ms))  // nothing new
        s.bufferedSeconds = 0.5
        told.append(throttle.filter(s, now: 100 * ms))  // the buffer, too soon
        told.append(throttle.filter(s, now: 600 * ms))  // the buffer, half a second on
        #expect(told.map { $0 != nil } == [true, false, false, true])
        s.phase = .ready
        let phase = throttle.filter(s, now: 610 * ms)
        s.streamTitle = "A - B"
        let title = throttle.filter(s, now: 620 * ms)
        #expect(phase?.phase == .ready && title?.streamTitle == "A - B", "changes a listener sees, at once")
        s.bufferedSeconds = 0.7
        let wobble = throttle.filter(s, now: 2_000 * ms)
        #expect(wobble == nil, "playing, 0.7 s rounds to the 1 s already told")
        throttle.reset()
        let fresh = throttle.filter(s, now: 2_010 * ms)
        #expect(fresh != nil, "a new source is told at once")
    }

    @Test func aSourceThatRanDryGoesOnFromWhereItWasAndAStreamCannotSeek() throws {
        var tr = TransportTests.make(2)
        let start = try #require(TransportTests.startSegment(try tr.handle(.play, now: TransportTests.t(0))))
        // At 5 s the source ran dry at 3 s of audio: it goes on from there at 5.15 s.
        let actions = tr.realign(itemID: start.itemID, at: TransportTests.t(5150), position: 3 * TransportTests.second)
        let resumed = try #require(TransportTests.startSegment(actions))
        #expect(resumed.position == 3 * TransportTests.second && resumed.itemID == start.itemID && resumed.epoch == start.epoch + 1)
        #expect(tr.snapshot(at: TransportTests.t(6150)).position == 4 * TransportTests.second)
        tr.setSeekable(itemID: start.itemID, false, reason: "http://radio is a live stream")
        #expect(throws: TransportError.cannotSeek("http://radio is a live stream")) {
            try tr.handle(.seek(to: 0), now: TransportTests.t(7000))
        }
        // "previous" does not restart a stream that cannot seek: it goes to the previous item.
        let back = try tr.handle(.previous, now: TransportTests.t(8000))
        #expect(TransportTests.startSegment(back)?.itemID == tr.queue.items[1].id)
        tr.setSeekable(itemID: start.itemID, true, reason: "")
        _ = try tr.handle(.playItem(index: 0), now: TransportTests.t(9000))
        #expect(try !tr.handle(.seek(to: 0), now: TransportTests.t(9500)).isEmpty)
    }
}

/// Where the coordinator fetches from: the addresses a host resolves to, by scope.
@Suite struct FetchScopeTests {
    static func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> NetworkAddress {
        .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d))
    }
    static func v6(_ head: [UInt8], tail: [UInt8] = []) -> NetworkAddress {
        .v6(head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail)
    }

    @Test func eachScopeRefusesWhatItShould() {
        let cases: [(NetworkAddress, lan: Bool, public: Bool)] = [
            (Self.v4(93, 184, 216, 34), true, true),          // the internet
            (Self.v4(192, 168, 1, 20), true, false),          // a NAS at home
            (Self.v4(10, 0, 0, 5), true, false),
            (Self.v4(172, 16, 0, 1), true, false), (Self.v4(172, 31, 255, 255), true, false), (Self.v4(172, 32, 0, 1), true, true),
            (Self.v4(100, 64, 0, 1), true, false),            // carrier-grade NAT
            (Self.v4(127, 0, 0, 1), true, false),             // this machine
            (Self.v4(169, 254, 169, 254), false, false),      // a cloud's metadata service
            (Self.v4(224, 0, 0, 251), false, false), (Self.v4(255, 255, 255, 255), false, false), (Self.v4(0, 0, 0, 0), false, false),
            (Self.v6([0x26, 0x06, 0x28, 0x00]), true, true),  // the internet, IPv6
            (Self.v6([], tail: [1]), true, false),            // ::1
            (Self.v6([0xFD, 0x12]), true, false),             // unique local
            (Self.v6([0xFE, 0x80]), false, false),            // link-local
            (Self.v6([0xFF, 0x02]), false, false), (Self.v6([]), false, false),
            (Self.v6([], tail: [0xFF, 0xFF, 169, 254, 169, 254]), false, false),  // ::ffff:169.254.169.254
            (Self.v6([], tail: [0xFF, 0xFF, 127, 0, 0, 1]), true, false),
        ]
        for (address, lan, open) in cases {
            #expect((FetchScope.lan.refusal(address) == nil) == lan, "lan: \(address)")
            #expect((FetchScope.public.refusal(address) == nil) == open, "public: \(address)")
            #expect(FetchScope.any.refusal(address) == nil)
        }
        #expect(Self.v4(169, 254, 169, 254).description == "169.254.169.254")
        #expect(FetchScope.public.refusal(Self.v4(127, 0, 0, 1)) == "this machine")
    }

    /// `public` refuses the whole of IANA's special-purpose registries, both families, and
    /// the IPv6 forms that carry an IPv4 address; `lan` still reaches them (a lab's
    /// benchmarking range is someone's LAN).
    @Test func publicRefusesTheSpecialPurposeRegistry() throws {
        let special = ["198.18.0.1", "198.19.255.255", "240.0.0.1", "250.1.2.3", "192.0.0.9", "192.0.0.170", "192.0.2.7",
                       "198.51.100.1", "203.0.113.200", "192.88.99.1", "192.31.196.1", "192.52.193.1", "192.175.48.1",
                       "64:ff9b::808:808", "64:ff9b:1::1", "::8.8.8.8", "::ffff:198.18.0.1", "100::1", "2001::1",
                       "2001:db8::1", "2002:c0a8:101::1", "3fff::1", "5f00::1", "2620:4f:8000::1", "2001:2::1"]
        for text in special {
            let address = try #require(NetworkAddress(parsing: text), "\(text)")
            #expect(address.isSpecialPurpose, "\(text)")
            #expect(FetchScope.public.refusal(address) != nil, "public: \(text)")
        }
        for text in ["93.184.216.34", "8.8.8.8", "198.20.0.1", "192.0.1.1", "2606:2800:220:1::1", "2a00:1450::1", "2001:4860::1",
                     "::ffff:8.8.8.8"] {
            let address = try #require(NetworkAddress(parsing: text), "\(text)")
            #expect(!address.isSpecialPurpose, "\(text)")
            #expect(FetchScope.public.refusal(address) == nil, "public: \(text)")
        }
        #expect(FetchScope.lan.refusal(try #require(NetworkAddress(parsing: "198.18.0.1"))) == nil)
    }

    /// Addresses as sockets and resolvers write them; anything else is none. A sender is an
    /// IPv4 address or an IPv6 /64.
    @Test func addressesParseAndGroupBySender() {
        #expect(NetworkAddress(parsing: "10.0.0.1") == Self.v4(10, 0, 0, 1))
        #expect(NetworkAddress(parsing: "::1") == Self.v6([], tail: [1]))
        #expect(NetworkAddress(parsing: "fe80::1:2") == Self.v6([0xFE, 0x80], tail: [0, 1, 0, 2]))
        #expect(NetworkAddress(parsing: "1:2:3:4:5:6:7:8") == .v6([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]))
        #expect(NetworkAddress(parsing: "::ffff:1.2.3.4") == Self.v6([], tail: [0xFF, 0xFF, 1, 2, 3, 4]))
        #expect(NetworkAddress(parsing: "1::") == Self.v6([0, 1]))
        for bad in ["", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01.2.3.4x", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::",
                    "g::1", ":1:2:3:4:5:6:7", "1.2.3.4::", "::1.2.3.4.5", "+1::", "[::1]", "fe80::1%eth0", " 1.2.3.4"] {
            #expect(NetworkAddress(parsing: bad) == nil, "\(bad)")
        }
        #expect(NetworkAddress(parsing: "10.0.0.1")?.sender == "10.0.0.1")
        #expect(NetworkAddress(parsing: "::ffff:10.0.0.1")?.sender == "10.0.0.1")
        #expect(NetworkAddress(parsing: "2001:db8:1:2:aaaa::1")?.sender == NetworkAddress(parsing: "2001:db8:1:2:bbbb::9")?.sender)
        #expect(NetworkAddress(parsing: "2001:db8:1:2::1")?.sender != NetworkAddress(parsing: "2001:db8:1:3::1")?.sender)
    }
}

/// Numbers from outside: within their reader's range, or none.
@Suite struct OutsideNumberTests {
    @Test func onlyDecimalNumbersWithinTheirRange() {
        #expect(OutsideNumber.integer(" 42 ", in: 0...100) == 42)
        #expect(OutsideNumber.integer("9223372036854775807", in: OutsideNumber.bytes) == nil)
        #expect(OutsideNumber.integer("99999999999999999999999", in: Int64.min...Int64.max) == nil)
        #expect(OutsideNumber.integer("-1", in: OutsideNumber.bytes) == nil)
        #expect(OutsideNumber.integer("1125899906842624", in: OutsideNumber.bytes) == 1 << 50)
        #expect(OutsideNumber.integer("99999999999999999", in: OutsideNumber.kilobitsPerSecond) == nil)
        #expect(OutsideNumber.integer("0x10", in: 0...100) == nil)
        #expect(OutsideNumber.integer(String(repeating: "0", count: 41) + "1", in: 0...100) == nil)
        for text in ["inf", "-inf", "nan", "1e308", "0x1p3", "86400.5", "-0.5", "", "  ", "1,5"] {
            #expect(OutsideNumber.decimal(text, in: OutsideNumber.playlistSeconds) == nil, "\(text)")
        }
        #expect(OutsideNumber.decimal("6.006", in: OutsideNumber.playlistSeconds) == 6.006)
        #expect(OutsideNumber.decimal("1e3", in: OutsideNumber.playlistSeconds) == 1000)
    }
}
