import Testing
@testable import TuttiCore

/// A live input in the queue: its name, where its frames go on the timeline, and what the
/// transport allows with it.
@Suite("Live inputs")
struct LiveInputTests {
    static let ms: Int64 = 1_000_000
    static func t(_ ms: Int64) -> CoordinatorTime { CoordinatorTime(nanoseconds: 1_000_000_000_000 + ms * Self.ms) }
    /// Frames in `ms` milliseconds.
    static func frames(_ ms: Int64) -> Int64 { ms * 48 }

    // MARK: - Naming

    @Test(arguments: [
        ("pcm:-", LiveInput(path: "-")),
        ("pcm:/run/tutti/mpd.fifo", LiveInput(path: "/run/tutti/mpd.fifo")),
        ("pcm:/run/mpd.fifo?format=f32le", LiveInput(path: "/run/mpd.fifo", format: .f32le)),
        ("pcm:in.raw?format=s16le&rate=48000", LiveInput(path: "in.raw")),
        ("pcm:/run/mpd.fifo?rate=44100", LiveInput(path: "/run/mpd.fifo", rate: 44_100)),
    ])
    func entriesAreRead(entry: String, expected: LiveInput) throws {
        let input = try LiveInput(parsing: entry)
        #expect(input == expected)
        #expect(try LiveInput(parsing: input.entry) == input, "the kept entry reads back the same")
    }

    @Test(arguments: [
        ("/music/a.mp3", LiveInputError.notLive("/music/a.mp3")),
        ("pcm:", .noPath("pcm:")),
        ("pcm:?format=s16le", .noPath("pcm:?format=s16le")),
        ("pcm:/x?format=u8", .badFormat("u8")),
        ("pcm:/x?rate=22050", .badRate("22050")),
        ("pcm:/x?rate=", .badRate("")),
        ("pcm:/x?channels=2", .unknownSetting("channels")),
    ])
    func badEntriesSayWhatIsWrong(entry: String, error: LiveInputError) {
        #expect(throws: error) { try LiveInput(parsing: entry) }
        #expect(!error.description.isEmpty)
    }

    @Test func itIsCalledByWhatItIs() throws {
        #expect(try LiveInput(parsing: "pcm:-").title == "PCM input (standard input)")
        #expect(try LiveInput(parsing: "pcm:/run/mpd.fifo?format=f32le").title == "PCM input /run/mpd.fifo")
        #expect(QueueItem(id: 1, path: "pcm:-").isLive && !QueueItem(id: 2, path: "/a.mp3").isLive)
    }

    // MARK: - Receivers

    @Test func receiversAreNamedAndLive() throws {
        #expect(try ReceiverEntry(parsing: "librespot:Stofa") == ReceiverEntry(kind: .librespot, name: "Stofa"))
        #expect(try ReceiverEntry(parsing: "librespot") == ReceiverEntry(kind: .librespot, name: "tutti"))
        #expect(try ReceiverEntry(parsing: "librespot:") == ReceiverEntry(kind: .librespot, name: "tutti"))
        #expect(try ReceiverEntry(parsing: "librespot:Stofa").title == "Spotify Connect: Stofa")
        #expect(LiveInput.isLive("librespot:Stofa") && QueueItem(id: 1, path: "librespot:x").isLive)
        #expect(!ReceiverEntry.isReceiver("librespotty") && !ReceiverEntry.isReceiver("/music/librespot:a.mp3"))
        #expect(throws: LiveInputError.badReceiverName(String(repeating: "x", count: 64))) {
            try ReceiverEntry(parsing: "librespot:" + String(repeating: "x", count: 64))
        }
        #expect(throws: LiveInputError.badReceiverName("  ")) { try ReceiverEntry(parsing: "librespot:  ") }
        #expect(throws: LiveInputError.notLive("librespot:x")) { try LiveInput(parsing: "librespot:x") }
    }

    /// librespot's events as its hook writes them (fields ended by NULs, an event by one
    /// more), in pieces of any size: the track it names, whether it plays; a malformed or
    /// oversized event is dropped and the next is read.
    @Test func aReceiversEventsSayWhatPlays() {
        func event(_ fields: [String]) -> [UInt8] { fields.flatMap { Array($0.utf8) + [0] } + [0] }
        let stream = event(["PLAYER_EVENT=session_connected", "NAME="])
            + event(["PLAYER_EVENT=track_changed", "NAME=Hljómalind", "ARTISTS=Sigur Rós\nJónsi", "ALBUM=Með suð"])
            + event(["PLAYER_EVENT=playing", "POSITION_MS=0"])
            + event(["no equals sign"])
            + Array(repeating: UInt8(ascii: "x"), count: ReceiverEvents.maximumEvent + 10) + [0, 0]
            + event(["PLAYER_EVENT=paused"])
        for piece in [1, 7, 4_096, stream.count] {
            var events = ReceiverEvents()
            var at = 0
            while at < stream.count {
                events.take(stream[at..<min(stream.count, at + piece)])
                at += piece
            }
            #expect(events.track.title == "Hljómalind" && events.track.artist == "Sigur Rós, Jónsi" && events.track.album == "Með suð")
            #expect(events.playing == false && events.read == 4 && events.dropped == 2, "\(events.read) read, \(events.dropped) dropped")
        }
        var gone = ReceiverEvents()
        gone.take(event(["PLAYER_EVENT=track_changed", "NAME=A"]) + event(["PLAYER_EVENT=session_disconnected"]))
        #expect(gone.track.title == nil && gone.playing == false)
    }

    /// shairport-sync's metadata pipe, as it wrote it while PulseAudio's RAOP sink played to
    /// it (recorded in AirPlayTests' rig): a session that began, paused, went on and ended.
    static let recordedAirPlay = #"""
<item><type>73736e63</type><code>736e7561</code><length>26</length>
<data encoding="base64">
aVR1bmVzLzExLjAuNCAoV2luZG93czsgTik=</data></item>
<item><type>73736e63</type><code>636c6970</code><length>9</length>
<data encoding="base64">
MTAuNzkuMC4y</data></item>
<item><type>73736e63</type><code>73766970</code><length>9</length>
<data encoding="base64">
MTAuNzkuMC4x</data></item>
<item><type>73736e63</type><code>61626567</code><length>0</length></item>
<item><type>73736e63</type><code>70626567</code><length>0</length></item>
<item><type>73736e63</type><code>70666c73</code><length>10</length>
<data encoding="base64">
MzI2NzYyMjI4NQ==</data></item>
<item><type>73736e63</type><code>70766f6c</code><length>21</length>
<data encoding="base64">
MC4wMCwwLjAwLC05Ni4zMCwwLjAw</data></item>
<item><type>73736e63</type><code>70766f6c</code><length>21</length>
<data encoding="base64">
MC4wMCwwLjAwLC05Ni4zMCwwLjAw</data></item>
<item><type>73736e63</type><code>70666672</code><length>0</length></item>
<item><type>73736e63</type><code>7072736d</code><length>0</length></item>
<item><type>73736e63</type><code>70666c73</code><length>10</length>
<data encoding="base64">
MzI2Nzg4Njk4OQ==</data></item>
<item><type>73736e63</type><code>70656e64</code><length>0</length></item>
"""#

    /// What an iTunes-like sender adds (written in the pipe's format: a track's fields
    /// between mdst and mden, then its cover art), and two items it cannot read.
    static let senderAirPlay = #"""
<item><type>73736e63</type><code>6d647374</code><length>0</length></item>
<item><type>636f7265</type><code>6d696e6d</code><length>11</length>
<data encoding="base64">
SG9wcMOtcG9sbGE=</data></item>
<item><type>636f7265</type><code>61736172</code><length>10</length>
<data encoding="base64">
U2lndXIgUsOzcw==</data></item>
<item><type>636f7265</type><code>6173616c</code><length>7</length>
<data encoding="base64">
VGFray4uLg==</data></item>
<item><type>73736e63</type><code>6d64656e</code><length>0</length></item>
<item><type>73736e63</type><code>50494354</code><length>11</length>
<data encoding="base64">
iVBORw0KGgoBAgM=</data></item>
<item><type>73736e63</type><code>7072736d</code><length>0</length></item>
<item><type>636f7265</type><code>6d696e6d</code><length>5</length>
<data encoding="base64">
!!!!</data></item>
<item><type>636f7265</type><code>6d696e6d</code><length>9</length>
<data encoding="base64">
SGk=</data></item>
"""#

    /// The metadata pipe read in pieces of any size: the session's state from the recorded
    /// bytes, then the track, its cover art and that it plays again; a malformed item is
    /// dropped and the next read.
    @Test func airPlayMetadataSaysWhatPlays() {
        let recorded = Array(Self.recordedAirPlay.utf8), sender = Array(Self.senderAirPlay.utf8)
        for piece in [1, 13, 4_096, recorded.count + sender.count] {
            var metadata = AirPlayMetadata()
            let all = recorded + sender
            var at = 0
            while at < all.count {
                metadata.take(all[at..<min(all.count, at + piece)])
                at += piece
            }
            #expect(metadata.read == 12 + 7 && metadata.dropped == 2, "\(metadata.read) read, \(metadata.dropped) dropped")
            #expect(metadata.track.title == "Hoppípolla" && metadata.track.artist == "Sigur Rós" && metadata.track.album == "Takk...")
            #expect(metadata.track.pictures.first?.mimeType == "image/png" && metadata.track.pictures.first?.data.count == 11)
            #expect(metadata.playing == true)
        }
        var session = AirPlayMetadata()
        session.take(Array(Self.recordedAirPlay.utf8))
        #expect(session.read == 12 && session.playing == false && session.track.title == nil)
        // An item that never ends does not grow the reader past its bound.
        var endless = AirPlayMetadata()
        endless.take(Array("<item><type>".utf8) + [UInt8](repeating: 0x41, count: AirPlayMetadata.maximumItem + 100))
        endless.take(Array(Self.senderAirPlay.utf8))
        #expect(endless.track.title == "Hoppípolla")
    }

    /// What an iPhone adds to a session (written in the pipe's format): its remote's token,
    /// identity, address and port; then a session that ended, and a token that tries to
    /// write a second header.
    static let remoteAirPlay = #"""
<item><type>73736e63</type><code>61637265</code><length>10</length>
<data encoding="base64">
Mjg3NjMxOTg3MQ==</data></item>
<item><type>73736e63</type><code>64616964</code><length>16</length>
<data encoding="base64">
MUEyQjNDNEQ1RTZGNzA4MQ==</data></item>
<item><type>73736e63</type><code>636c6970</code><length>19</length>
<data encoding="base64">
OjpmZmZmOjE5Mi4xNjguMS4yMw==</data></item>
"""#
    static let remotePort = #"""
<item><type>73736e63</type><code>6461706f</code><length>4</length>
<data encoding="base64">
MzY4OQ==</data></item>
"""#
    static let remoteEnds = #"""
<item><type>73736e63</type><code>70656e64</code><length>0</length></item>
"""#
    static let remoteInjected = #"""
<item><type>73736e63</type><code>61637265</code><length>12</length>
<data encoding="base64">
MQ0KWC1FdmlsOiAx</data></item>
"""#

    /// A sender without a remote (PulseAudio's RAOP sink) has none; an iPhone's is what it
    /// said, its port once shairport-sync found it, gone with its session; a field that is
    /// not what it should be makes none.
    @Test func anAirPlaySendersRemoteIsWhatItSaidAndNothingMore() throws {
        var metadata = AirPlayMetadata()
        metadata.take(Array(Self.recordedAirPlay.utf8))
        #expect(metadata.remote == nil)
        metadata.take(Array(Self.remoteAirPlay.utf8))
        let remote = try #require(metadata.remote)
        #expect(remote.host == "192.168.1.23" && remote.port == nil && remote.dacpID == "1A2B3C4D5E6F7081" && remote.activeRemote == "2876319871")
        metadata.take(Array(Self.remotePort.utf8))
        #expect(metadata.remote?.port == 3689)
        #expect(SenderRemote.path(.pause) == "/ctrl-int/1/pause" && metadata.remote?.headers == ["Active-Remote": "2876319871"])
        metadata.take(Array(Self.remoteEnds.utf8))
        #expect(metadata.remote == nil)
        metadata.take(Array((Self.remoteAirPlay + Self.remoteInjected).utf8))
        #expect(metadata.remote == nil, "a token with a line break")
        #expect(remote.isService(named: "iTunes_Ctrl_1A2B3C4D5E6F7081") && remote.isService(named: "iTunes_Ctrl_001a2b3c4d5e6f7081"))
        #expect(!remote.isService(named: "iTunes_Ctrl_1A2B3C4D5E6F7082") && !remote.isService(named: "1A2B3C4D5E6F7081"))
        #expect(SenderRemote(host: "example.com", port: "1", dacpID: "AB", activeRemote: "1") == nil)
        #expect(SenderRemote(host: "10.0.0.1", port: "0", dacpID: "AB", activeRemote: "1")?.port == nil)
        #expect(SenderRemote.command(for: .next, housePlays: true) == .next)
        #expect(SenderRemote.command(for: .toggle, housePlays: true) == .pause && SenderRemote.command(for: .toggle, housePlays: false) == .play)
        #expect(SenderRemote.command(for: .stop, housePlays: true) == .pause && SenderRemote.command(for: .seek(to: 0), housePlays: true) == nil)
    }

    // MARK: - The timeline

    let timeline = LiveTimeline(latency: 150 * Self.ms)

    @Test func theFirstFrameAnchorsTheEpochLatencyAfterItArrived() {
        // 5 ms of input buffered: its first frame arrived 5 ms before the last read.
        var t = timeline
        let d = t.decide(planned: nil, start: Self.t(60), now: Self.t(3), arrived: Self.t(0), bufferedFrames: Self.frames(5))
        #expect(d == .anchor(at: Self.t(145)))
        #expect(t.writer == .unknown)
    }

    @Test func framesOnTheTimelineGoOutAndSmallWobbleIsTolerated() {
        let now = Self.t(1000)
        for wobble: Int64 in [-19, -5, 0, 5, 19] {
            var t = timeline
            let d = t.decide(planned: Self.t(1150 + wobble), start: Self.t(0), now: now, arrived: now, bufferedFrames: 0)
            #expect(d == .send, "\(wobble) ms off")
            #expect(t.writer == .paced)
        }
    }

    @Test func aWriterThatPausedRealignsTheTimeline() {
        // The writer paused for a second: its new frames arrive long after the timeline's.
        var t = timeline
        let late = t.decide(planned: Self.t(1150), start: Self.t(0), now: Self.t(2000), arrived: Self.t(2000), bufferedFrames: 0)
        #expect(late == .realign(at: Self.t(2150)))
        // The sender itself stalled: frames that came in time would reach the rooms too late.
        let stalled = t.decide(planned: Self.t(1150), start: Self.t(0), now: Self.t(1120), arrived: Self.t(1000),
                               bufferedFrames: 0)
        #expect(stalled == .realign(at: Self.t(1270)))
    }

    /// A writer that misses a beat by 40 ms and catches up: its late frames go (the rooms
    /// wait half the latency), with no new epoch and the latency kept. One that stays 40 ms
    /// late for good has the latency take what it lost once its frames kept late for
    /// `lateFor`; its next frames are on time again.
    @Test func aMissedBeatIsSentAndATimeLostForGoodBecomesTheLatency() {
        var t = timeline
        let missed = t.decide(planned: Self.t(1110), start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: 0)
        #expect(missed == .send && t.latency == 150 * Self.ms && t.writer == .paced)
        let caughtUp = t.decide(planned: Self.t(1170), start: Self.t(0), now: Self.t(1020), arrived: Self.t(1020), bufferedFrames: 0)
        #expect(caughtUp == .send && t.latency == 150 * Self.ms)
        var ms: Int64 = 1_040
        while ms <= 1_040 + 300 {
            #expect(t.decide(planned: Self.t(ms + 110), start: Self.t(0), now: Self.t(ms), arrived: Self.t(ms), bufferedFrames: 0) == .send)
            ms += 20
        }
        #expect(t.latency == 110 * Self.ms)
        #expect(t.decide(planned: Self.t(ms + 110), start: Self.t(0), now: Self.t(ms), arrived: Self.t(ms), bufferedFrames: 0) == .send)
        #expect(t.writer == .paced && t.latency == 110 * Self.ms)
        // Late by more than half the latency: the writer paused.
        let paused = t.decide(planned: Self.t(ms + 130), start: Self.t(0), now: Self.t(ms + 100), arrived: Self.t(ms + 100),
                              bufferedFrames: 0)
        #expect(paused == .realign(at: Self.t(ms + 210)))
    }

    /// While the latency grows, a frame somewhat later than the tolerance is the stretch
    /// falling short of what was counted: the latency becomes what the timeline holds and
    /// the frame goes. A writer that paused (a second) still starts a new epoch.
    @Test func aGrowingLatencyTakesItsShortfallAndAPauseStillRealigns() {
        var t = LiveTimeline(latency: 150 * Self.ms)
        t.setLatency(300 * Self.ms)
        let short = t.decide(planned: Self.t(1270), start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: 0,
                             growing: true)
        #expect(short == .send && t.latency == 270 * Self.ms && t.writer == .paced)
        let paused = t.decide(planned: Self.t(1270), start: Self.t(0), now: Self.t(2000), arrived: Self.t(2000), bufferedFrames: 0,
                              growing: true)
        #expect(paused == .realign(at: Self.t(2270)))
    }

    /// A writer that runs ahead (its frames come 170 ms before the timeline needs them) is
    /// read at the stream's rate: its frames go when the timeline says, with no new epoch.
    /// Once known, it starts its next epoch a latency from now with nothing dropped: what
    /// it gave waited for the input to be read.
    @Test func aWriterThatRunsAheadWaitsForTheTimeline() {
        var t = timeline
        let early = t.decide(planned: Self.t(1320), start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: 0)
        #expect(early == .send)
        #expect(t.writer == .ahead)
        // 300 ms buffered would be stale for a paced writer; not for this one.
        let next = t.decide(planned: nil, start: Self.t(1100), now: Self.t(2000), arrived: Self.t(2000),
                            bufferedFrames: Self.frames(300))
        #expect(next == .anchor(at: Self.t(2150)))
        t.restart()
        #expect(t.writer == .unknown)
    }

    /// A writer that gives 80 ms blocks: the first frame of each arrives with 70 ms to go,
    /// less than the half latency the rooms need and a packet's wait for its last frame;
    /// its timeline is placed 25 ms later, for good, and its next blocks keep to it.
    @Test func aWriterOfLargeBlocksIsPlacedLaterForGood() {
        var t = timeline
        let first = t.decide(planned: nil, start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: Self.frames(80))
        #expect(first == .anchor(at: Self.t(1095)))
        // The next block, 80 ms later, placed where the timeline has it.
        let next = t.decide(planned: Self.t(1175), start: Self.t(0), now: Self.t(1080), arrived: Self.t(1080), bufferedFrames: Self.frames(80))
        #expect(next == .send)
        #expect(t.writer == .paced)
    }

    @Test func inputThatSatInThePipeIsDropped() {
        var t = timeline
        // 300 ms buffered (written while nobody read): heard 150 ms ago: too late.
        let stale = t.decide(planned: nil, start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: Self.frames(300))
        #expect(stale == .skip)
        // Heard before the epoch starts (the rooms need longer than the latency to switch).
        let early = t.decide(planned: nil, start: Self.t(400), now: Self.t(0), arrived: Self.t(0), bufferedFrames: 0)
        #expect(early == .skip)
    }

    /// More than a latency of input, all of it stale, at once: no writer in real time gives
    /// that. It ran ahead (or filled the pipe while nobody read it) and waits: what is left
    /// goes on a latency from now.
    @Test func aPipeFullOfOldInputIsAWriterThatRanAhead() {
        var t = timeline
        var decisions: [LiveTimeline.Decision] = []
        repeat {
            decisions.append(t.decide(planned: nil, start: Self.t(0), now: Self.t(1000), arrived: Self.t(1000), bufferedFrames: Self.frames(340)))
        } while decisions.last == .skip && decisions.count < 20
        #expect(decisions.count == 8, "skipped \(decisions.count - 1) packets")
        #expect(decisions.last == .anchor(at: Self.t(1150)))
        #expect(t.writer == .ahead)
    }

    /// A paced writer whose clock runs 300 ppm slow or fast, or on the house's, fed to the
    /// timeline one 20 ms frame at a time for ten minutes, its arrivals 2 ms early or late
    /// at random: the stretch learns its clock (on average within 5 ppm from the third
    /// minute, never more than 60 ppm off: a tenth of a cent, inaudible), and its frames never part from the
    /// timeline by more than 5 ms.
    @Test(arguments: [-300.0, 0, 300])
    func aPacedWritersClockIsLearntAndFollowed(ppm: Double) {
        var t = timeline
        var random = SeededRandom(seed: 7)
        var placed = 0.0  // input frames the timeline has taken
        var worst: Int64 = 0
        var settled: [Double] = []
        let start = Self.t(0)
        for k in 0..<(600 * 50) {
            let now = start + Int64(k) * 20 * Self.ms
            // Input frames arrive at the writer's rate (fewer than the house's when its
            // clock is slow); each 20 ms frame of output takes 960 / (1 + stretch) of them.
            let arrived = Double(k + 1) * 960 * (1 - ppm * 1e-6)
            placed += 960 / (1 + t.stretch * 1e-6)
            // When the input this frame needs arrived, against its planned time.
            let late = Int64((placed - arrived) / 48 * 1_000_000)
            let noise = Int64.random(in: -2_000_000...2_000_000, using: &random)
            let d = t.decide(planned: now + 150 * Self.ms, start: start, now: now + max(0, late + noise),
                             arrived: now + late + noise, bufferedFrames: 0)
            #expect(d == .send)
            if d != .send { break }
            worst = max(worst, abs(late))
            if k >= 120 * 50 {
                settled.append(t.stretch)
                #expect(abs(t.stretch - ppm) < 60, "stretch \(t.stretch) ppm at \(k / 50) s")
            }
        }
        let mean = settled.reduce(0, +) / Double(max(1, settled.count))
        #expect(abs(mean - ppm) < 5, "stretch \(mean) ppm on average")
        #expect(worst < 5 * Self.ms, "parted from the timeline by \(Double(worst) / 1e6) ms")
        #expect(t.writer == .paced)
    }

    // MARK: - The transport

    static func liveTransport() throws -> (Transport, QueueItem) {
        var tr = Transport()
        let items = tr.add(["/a.mp3", "pcm:/run/mpd.fifo", "/b.mp3"])
        tr.setLoopMode(.all)
        _ = try tr.handle(.playItem(index: 1), now: Self.t(0))
        return (tr, items[1])
    }

    @Test func aLiveInputCannotSeekOrSkipButPreviousGoesBack() throws {
        var (tr, live) = try Self.liveTransport()
        #expect(throws: TransportError.cannotSeek("\(live.path) is a live input")) { try tr.handle(.seek(to: 48_000), now: Self.t(10_000)) }
        #expect(throws: TransportError.cannotSeek("\(live.path) is a live input")) { try tr.handle(.skip(by: 48_000), now: Self.t(10_000)) }
        #expect(tr.snapshot(at: Self.t(10_000)).state == .playing, "a refused seek changes nothing")
        // Ten seconds in, "previous" on a track restarts it; on a live input it goes back.
        let actions = try tr.handle(.previous, now: Self.t(10_000))
        #expect(tr.queue.current?.path == "/a.mp3")
        #expect(actions.count == 2)
    }

    @Test func realigningCutsTheEpochAndGoesOnWithTheInputItsPositionRunningOn() throws {
        var (tr, live) = try Self.liveTransport()  // heard from 85 ms, epoch 1
        let actions = tr.realign(itemID: live.id, at: Self.t(2085))
        let next = TimelineSegment(epoch: 2, itemID: live.id, position: 2 * 48_000, at: Self.t(2085))
        #expect(actions == [.cut(epoch: 1, at: Self.t(2085)), .start(next)])
        #expect(tr.snapshot(at: Self.t(3085)).position == MediaFrames(3 * 48_000))
        #expect(tr.snapshot(at: Self.t(3085)).state == .playing)
        // Not the item streaming, or not streaming: nothing to realign.
        #expect(tr.realign(itemID: live.id + 1, at: Self.t(4000)).isEmpty)
        _ = try tr.handle(.pause, now: Self.t(5000))
        #expect(tr.realign(itemID: live.id, at: Self.t(6000)).isEmpty)
    }
}
