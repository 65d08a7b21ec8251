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

    // MARK: - The timeline

    let timeline = LiveTimeline(latency: 150 * Self.ms)

    @Test func theFirstFrameAnchorsTheEpochLatencyAfterItArrived() {
        // 5 ms of input buffered: its first frame arrived 5 ms ago.
        let d = timeline.decide(planned: nil, start: Self.t(60), now: Self.t(0), bufferedFrames: Self.frames(5))
        #expect(d == .anchor(at: Self.t(145)))
    }

    @Test func framesOnTheTimelineGoOutAndSmallWobbleIsTolerated() {
        let now = Self.t(1000)
        for wobble: Int64 in [-19, -5, 0, 5, 19] {
            let d = timeline.decide(planned: Self.t(1150 + wobble), start: Self.t(0), now: now, bufferedFrames: 0)
            #expect(d == .send, "\(wobble) ms off")
        }
    }

    @Test func aWriterThatPausedOrRunsFastRealignsTheTimeline() {
        // The writer paused for a second: its new frames arrive long after the timeline's.
        let late = timeline.decide(planned: Self.t(1150), start: Self.t(0), now: Self.t(2000), bufferedFrames: 0)
        #expect(late == .realign(at: Self.t(2150)))
        // Its clock runs fast: frames arrive 25 ms before the timeline expects them.
        let early = timeline.decide(planned: Self.t(1175), start: Self.t(0), now: Self.t(1000), bufferedFrames: 0)
        #expect(early == .realign(at: Self.t(1150)))
    }

    @Test func inputThatSatInThePipeIsDropped() {
        // 300 ms buffered (written while nobody read): heard 150 ms ago: too late.
        let stale = timeline.decide(planned: nil, start: Self.t(0), now: Self.t(1000), bufferedFrames: Self.frames(300))
        #expect(stale == .skip)
        // Less than half the latency left before it is heard: too late for the rooms too.
        let tight = timeline.decide(planned: Self.t(1070), start: Self.t(0), now: Self.t(1000), bufferedFrames: Self.frames(80))
        #expect(tight == .skip)
        // Heard before the epoch starts (the rooms need longer than the latency to switch).
        let early = timeline.decide(planned: nil, start: Self.t(400), now: Self.t(0), bufferedFrames: 0)
        #expect(early == .skip)
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
        #expect(tr.snapshot(at: Self.t(3085)).position == 3 * 48_000)
        #expect(tr.snapshot(at: Self.t(3085)).state == .playing)
        // Not the item streaming, or not streaming: nothing to realign.
        #expect(tr.realign(itemID: live.id + 1, at: Self.t(4000)).isEmpty)
        _ = try tr.handle(.pause, now: Self.t(5000))
        #expect(tr.realign(itemID: live.id, at: Self.t(6000)).isEmpty)
    }
}
