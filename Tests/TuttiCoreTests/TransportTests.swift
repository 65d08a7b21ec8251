import Testing
@testable import TuttiCore

/// Every transport command in every state, loop modes at track ends, and the timeline.
@Suite("Transport")
struct TransportTests {
    static let second = MediaFrames(Int64(AudioFormat.sampleRate))
    static let lead: Int64 = 85_000_000
    static func t(_ ms: Int64) -> CoordinatorTime { CoordinatorTime(nanoseconds: 1_000_000_000_000 + ms * 1_000_000) }

    /// A transport with `n` tracks of 60 s each, in the given loop mode.
    static func make(_ n: Int = 3, mode: LoopMode = .all) -> Transport {
        var transport = Transport()
        for item in transport.add((1...n).map { "/t\($0).mp3" }) {
            transport.setDuration(itemID: item.id, frames: 60 * second)
        }
        transport.setLoopMode(mode)
        return transport
    }

    static func startSegment(_ actions: [TransportAction]) -> TimelineSegment? {
        for case let .start(segment) in actions { return segment }
        return nil
    }

    @Test func playStartsANewEpochCutLeadFromNowAndLoadsUntilThen() throws {
        var tr = Self.make()
        let actions = try tr.handle(.play, now: Self.t(0))
        let segment = try #require(Self.startSegment(actions))
        #expect(segment == TimelineSegment(epoch: 1, itemID: tr.queue.items[0].id, position: 0, at: Self.t(85)))
        #expect(tr.snapshot(at: Self.t(10)).state == .loading)
        #expect(tr.snapshot(at: Self.t(10)).position == 0)
        let playing = tr.snapshot(at: Self.t(1085))
        #expect(playing.state == .playing && playing.rate == 1)
        #expect(playing.position == Self.second)
        #expect(playing.trackOrigin == Self.t(85))
        #expect(try tr.handle(.play, now: Self.t(2000)).isEmpty, "play while playing does nothing")
    }

    @Test func playOnAnEmptyQueueIsRefused() {
        var tr = Transport()
        #expect(throws: TransportError.emptyQueue) { try tr.handle(.play, now: Self.t(0)) }
        #expect(throws: TransportError.emptyQueue) { try tr.handle(.next, now: Self.t(0)) }
        #expect(tr.snapshot(at: Self.t(0)).state == .stopped)
    }

    @Test func pauseFreezesWhereTheSoundStopsAndResumeContinuesFromThere() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        let pause = try tr.handle(.pause, now: Self.t(10_000))
        #expect(pause == [.cut(epoch: 1, at: Self.t(10_085))])
        let paused = tr.snapshot(at: Self.t(50_000))
        #expect(paused.state == .paused && paused.rate == 0)
        #expect(paused.position == 10 * Self.second, "heard from 85 ms to 10 085 ms: 10 s")
        let resume = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(60_000))))
        #expect(resume.position == 10 * Self.second && resume.epoch == 2 && resume.at == Self.t(60_085))
        #expect(tr.snapshot(at: Self.t(60_085)).position == 10 * Self.second, "no jump")
    }

    @Test func toggleAlternates() throws {
        var tr = Self.make()
        #expect(Self.startSegment(try tr.handle(.toggle, now: Self.t(0))) != nil)
        #expect(try tr.handle(.toggle, now: Self.t(1000)).first == .cut(epoch: 1, at: Self.t(1085)))
        #expect(Self.startSegment(try tr.handle(.toggle, now: Self.t(2000)))?.position == Self.second)
    }

    @Test func stopCutsAndRewindsToTheStart() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        #expect(try tr.handle(.stop, now: Self.t(5000)) == [.cut(epoch: 1, at: Self.t(5085))])
        #expect(tr.snapshot(at: Self.t(6000)).state == .stopped)
        #expect(Self.startSegment(try tr.handle(.play, now: Self.t(7000)))?.position == 0)
        // Pause then stop: stopped at 0; pause while stopped does nothing.
        _ = try tr.handle(.pause, now: Self.t(8000))
        #expect(try tr.handle(.stop, now: Self.t(9000)).isEmpty)
        #expect(try tr.handle(.pause, now: Self.t(9500)).isEmpty)
        #expect(tr.snapshot(at: Self.t(9500)) .state == .stopped)
    }

    @Test func nextWhilePlayingCutsAndStartsTheNextTrackAtTheSameInstant() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        let actions = try tr.handle(.next, now: Self.t(3000))
        #expect(actions.first == .cut(epoch: 1, at: Self.t(3085)))
        let next = try #require(Self.startSegment(actions))
        #expect(next.itemID == tr.queue.items[1].id && next.at == Self.t(3085) && next.epoch == 2)
    }

    @Test func nextWhilePausedOrStoppedMovesWithoutPlaying() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        _ = try tr.handle(.pause, now: Self.t(2000))
        #expect(try tr.handle(.next, now: Self.t(3000)).isEmpty)
        let s = tr.snapshot(at: Self.t(3000))
        #expect(s.state == .paused && s.position == 0 && s.item?.path == "/t2.mp3")
        _ = try tr.handle(.stop, now: Self.t(4000))
        _ = try tr.handle(.next, now: Self.t(5000))
        #expect(tr.snapshot(at: Self.t(5000)).item?.path == "/t3.mp3")
        #expect(tr.snapshot(at: Self.t(5000)).state == .stopped)
    }

    @Test func previousRestartsAfterThreeSecondsAndGoesBackBefore() throws {
        var tr = Self.make()
        _ = try tr.handle(.playItem(index: 1), now: Self.t(0))
        let restart = try #require(Self.startSegment(try tr.handle(.previous, now: Self.t(5000))))
        #expect(restart.itemID == tr.queue.items[1].id && restart.position == 0)
        let back = try #require(Self.startSegment(try tr.handle(.previous, now: Self.t(6000))))
        #expect(back.itemID == tr.queue.items[0].id)
    }

    @Test func seekIsValidatedAndMovesTheTimeline() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        #expect(throws: TransportError.seekOutOfRange(requested: 61 * Self.second, duration: 60 * Self.second)) {
            try tr.handle(.seek(to: 61 * Self.second), now: Self.t(1000))
        }
        #expect(throws: TransportError.self) { try tr.handle(.seek(to: -1), now: Self.t(1000)) }
        #expect(tr.snapshot(at: Self.t(1000)).epoch == 1, "state unchanged after a refused seek")
        let seek = try #require(Self.startSegment(try tr.handle(.seek(to: 83 * Self.second / 2), now: Self.t(1000))))
        #expect(seek.position == 83 * Self.second / 2 && seek.at == Self.t(1085))
        #expect(tr.snapshot(at: Self.t(2085)).position == 83 * Self.second / 2 + Self.second)
        #expect(TransportError.seekOutOfRange(requested: 61 * Self.second, duration: 60 * Self.second).description
                == "cannot seek to 1:01.0: the track is 1:00.0 long")
    }

    @Test func seekWhilePausedMovesThePausedPosition() throws {
        var tr = Self.make()
        _ = try tr.handle(.seek(to: 5 * Self.second), now: Self.t(0))
        #expect(tr.snapshot(at: Self.t(0)).state == .paused)
        #expect(Self.startSegment(try tr.handle(.play, now: Self.t(1000)))?.position == 5 * Self.second)
    }

    @Test func skipJumpsFromWhereTheChangeIsHeardAndPastTheEndGoesOn() throws {
        var tr = Self.make()
        _ = try tr.handle(.play, now: Self.t(0))
        // Heard at 2 s now, the change lands 85 ms later: at 2.085 s + 10 s.
        let forward = try #require(Self.startSegment(try tr.handle(.skip(by: 10 * Self.second), now: Self.t(2085))))
        #expect(forward.position == 12 * Self.second + 85 * Self.second / 1000)
        let back = try #require(Self.startSegment(try tr.handle(.skip(by: -30 * Self.second), now: Self.t(3085))))
        #expect(back.position == 0, "clamped at the start")
        let past = try #require(Self.startSegment(try tr.handle(.skip(by: 90 * Self.second), now: Self.t(4000))))
        #expect(past.itemID == tr.queue.items[1].id && past.position == 0)
    }

    @Test func playItemPlaysThatItemOrRefusesABadIndex() throws {
        var tr = Self.make()
        #expect(throws: TransportError.queue(.indexOutOfRange(index: 3, count: 3))) {
            try tr.handle(.playItem(index: 3), now: Self.t(0))
        }
        let segment = try #require(Self.startSegment(try tr.handle(.playItem(index: 2), now: Self.t(0))))
        #expect(segment.itemID == tr.queue.items[2].id)
        // While another track plays (in every loop mode): that item, from its start.
        for mode in LoopMode.allCases {
            var playing = Self.make(3, mode: mode)
            _ = try playing.handle(.playItem(index: 1), now: Self.t(0))
            let actions = try playing.handle(.playItem(index: 0), now: Self.t(5_000))
            #expect(actions.first == .cut(epoch: 1, at: Self.t(5_085)))
            #expect(Self.startSegment(actions)?.itemID == playing.queue.items[0].id, "\(mode)")
            #expect(playing.snapshot(at: Self.t(6_000)).item?.id == playing.queue.items[0].id, "\(mode)")
        }
    }

    // MARK: - Track ends and loop modes

    /// Plays from the start, letting every track end by itself; returns the paths heard.
    static func playThrough(_ tr: inout Transport, tracks: Int) throws -> [String] {
        var heard: [String] = []
        var segment = try #require(startSegment(try tr.handle(.play, now: t(0))))
        var id = segment.itemID
        for _ in 0..<tracks {
            heard.append(tr.queue.item(id: id)!.path)
            let end = segment.at + 60_000_000_000
            let actions = tr.trackEnded(itemID: id, at: end)
            guard case let .continueWith(next)? = actions.first else { break }
            id = next
            segment = TimelineSegment(epoch: segment.epoch, itemID: next, position: 0, at: end)
        }
        return heard
    }

    @Test func loopModesAtTheEndOfEachTrack() throws {
        var once = Self.make(3, mode: .once)
        #expect(try Self.playThrough(&once, tracks: 5) == ["/t1.mp3", "/t2.mp3", "/t3.mp3"])
        var all = Self.make(3, mode: .all)
        #expect(try Self.playThrough(&all, tracks: 5) == ["/t1.mp3", "/t2.mp3", "/t3.mp3", "/t1.mp3", "/t2.mp3"])
        var one = Self.make(3, mode: .one)
        #expect(try Self.playThrough(&one, tracks: 3) == ["/t1.mp3", "/t1.mp3", "/t1.mp3"])
        var shuffle = Self.make(3, mode: .shuffle)
        let heard = try Self.playThrough(&shuffle, tracks: 6)
        #expect(Set(heard[0..<3]).count == 3 && Set(heard[3..<6]).count == 3)
    }

    @Test func theQueueRunningOutStopsWhenItsLastSoundEnds() throws {
        var tr = Self.make(1, mode: .once)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        let end = start.at + 60_000_000_000
        #expect(tr.trackEnded(itemID: start.itemID, at: end) == [.cut(epoch: 1, at: end)])
        #expect(tr.snapshot(at: end - 1_000_000).state == .playing)
        tr.tick(now: end)
        #expect(tr.snapshot(at: end).state == .stopped)
        #expect(tr.snapshot(at: end).item?.path == "/t1.mp3", "ready to play from the start")
    }

    @Test func gaplessTrackChangeIsHeardAtItsInstantAndAPauseBeforeItTakesItBack() throws {
        var tr = Self.make(3)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        let end = start.at + 60_000_000_000
        #expect(tr.trackEnded(itemID: start.itemID, at: end) == [.continueWith(itemID: tr.queue.items[1].id)])
        #expect(tr.snapshot(at: end - 1_000_000).item?.path == "/t1.mp3")
        #expect(tr.snapshot(at: end).item?.path == "/t2.mp3")
        #expect(tr.snapshot(at: end + 1_000_000_000).position == Self.second)
        // A pause that takes effect before the change: the second track was never heard.
        _ = try tr.handle(.pause, now: end - 200_000_000)
        let s = tr.snapshot(at: end + 5_000_000_000)
        #expect(s.item?.path == "/t1.mp3" && s.state == .paused)
        #expect(Self.startSegment(try tr.handle(.next, now: end + 6_000_000_000)) == nil)
        #expect(tr.snapshot(at: end).item?.path == "/t2.mp3")
    }

    @Test func aFailedTrackIsReplacedAtTheSameInstantAndAllFailingStops() throws {
        var tr = Self.make(3)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        let replaced = tr.trackFailed(itemID: start.itemID, reason: "corrupt", now: Self.t(1))
        #expect(replaced == [.start(TimelineSegment(epoch: 1, itemID: tr.queue.items[1].id, position: 0, at: start.at))])
        #expect(tr.lastFailure == "corrupt")
        _ = tr.trackFailed(itemID: tr.queue.items[1].id, reason: "corrupt", now: Self.t(2))
        let last = tr.trackFailed(itemID: tr.queue.items[2].id, reason: "corrupt", now: Self.t(3))
        #expect(last == [.cut(epoch: 1, at: start.at)])
        #expect(tr.snapshot(at: Self.t(4)).state == .stopped)
    }

    /// A failure in the middle of the queue is news until the track after it has played to
    /// its end: the queue that then ends has stopped, not failed.
    @Test func aFailureIsForgottenOnceTheNextTrackHasPlayed() throws {
        var tr = Self.make(3)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        #expect(tr.trackEnded(itemID: start.itemID, at: Self.t(1000)) == [.continueWith(itemID: tr.queue.items[1].id)])
        _ = tr.trackFailed(itemID: tr.queue.items[1].id, reason: "not audio", now: Self.t(900))
        #expect(tr.lastFailure == "not audio")
        _ = tr.trackEnded(itemID: tr.queue.items[2].id, at: Self.t(2000))
        #expect(tr.lastFailure == nil)
    }

    // MARK: - Queue edits while playing

    @Test func removingTheTrackBeingHeardMovesOn() throws {
        var tr = Self.make(3)
        _ = try tr.handle(.play, now: Self.t(0))
        let actions = try tr.remove(itemID: tr.queue.items[0].id, now: Self.t(1000))
        #expect(actions.first == .cut(epoch: 1, at: Self.t(1085)))
        #expect(Self.startSegment(actions)?.itemID == tr.queue.items[0].id)  // formerly the second
        #expect(tr.queue.items.count == 2)
        #expect(throws: TransportError.queue(.noSuchItem(id: 999))) { try tr.remove(itemID: 999, now: Self.t(0)) }
    }

    @Test func removingAnotherTrackLeavesThePlaybackAlone() throws {
        var tr = Self.make(3)
        _ = try tr.handle(.play, now: Self.t(0))
        #expect(try tr.remove(itemID: tr.queue.items[2].id, now: Self.t(1000)).isEmpty)
        #expect(tr.snapshot(at: Self.t(1085)).state == .playing)
    }

    /// The player reads a lookahead ahead: track 2 is lined up 2 s before it is heard. Edits
    /// in those 2 s line up what the queue now says (a new epoch where track 2 was to
    /// begin, track 1 untouched), and the queue shows the track heard.
    @Test func editsWhileTheNextTrackIsLinedUpLineItUpAgain() throws {
        var tr = Self.make(3, mode: .once)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        let end = start.at + 60_000_000_000
        let now = end - 2_000_000_000  // the decoder reached track 1's end 2 s before it is heard
        #expect(tr.trackEnded(itemID: tr.queue.items[0].id, at: end) == [.continueWith(itemID: tr.queue.items[1].id)])
        #expect(tr.queue.currentIndex == 1 && tr.queueAsHeard(at: now).currentIndex == 0, "the queue shows the track heard")
        #expect(tr.lineUpAgain(now: now).isEmpty, "nothing changed: nothing to do")
        // Track 3 to play next: cut where track 2 was to begin, track 3 there instead.
        try tr.move(itemID: tr.queue.items[2].id, to: 1)
        let moved = tr.lineUpAgain(now: now)
        #expect(moved == [.cut(epoch: 1, at: end), .start(TimelineSegment(epoch: 2, itemID: tr.queue.items[1].id, position: 0, at: end))])
        #expect(tr.snapshot(at: end - 1_000_000).item?.path == "/t1.mp3" && tr.snapshot(at: end).item?.path == "/t3.mp3")
        #expect(tr.snapshot(at: end - 1_000_000).epoch == 1 && tr.snapshot(at: end).epoch == 2)
        // A pause before the change ends both epochs there, and goes back to track 1.
        var paused = tr
        #expect(try paused.handle(.pause, now: end - 1_000_000_000) == [.cut(epoch: 1, at: end - 915_000_000), .cut(epoch: 2, at: end - 915_000_000)])
        #expect(paused.snapshot(at: end + 1_000_000_000).item?.path == "/t1.mp3")
        // Removing what is lined up: what follows it now plays there.
        let removed = try tr.remove(itemID: tr.queue.items[1].id, now: now + 100_000_000)
        #expect(removed == [.cut(epoch: 2, at: end), .start(TimelineSegment(epoch: 3, itemID: tr.queue.items[1].id, position: 0, at: end))])
        #expect(tr.snapshot(at: end).item?.path == "/t2.mp3" && tr.snapshot(at: end).epoch == 3)
        // Too late to change what is heard: a command given now would act after it starts.
        try tr.move(itemID: tr.queue.items[1].id, to: 0)
        #expect(tr.lineUpAgain(now: end - 50_000_000).isEmpty)
    }

    /// The queue ran out (its end told to the rooms, 2 s ahead): a track added then plays
    /// right after, from that end, in a new epoch; so does a loop mode that goes round.
    @Test func aTrackAddedAfterTheQueueRanOutPlaysAtItsEnd() throws {
        var tr = Self.make(1, mode: .once)
        let start = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        let end = start.at + 60_000_000_000
        #expect(tr.trackEnded(itemID: start.itemID, at: end) == [.cut(epoch: 1, at: end)])
        var looped = tr
        looped.setLoopMode(.all)
        #expect(Self.startSegment(looped.lineUpAgain(now: end - 1_500_000_000)) == TimelineSegment(epoch: 2, itemID: start.itemID, position: 0, at: end))
        let added = tr.add(["/t9.mp3"])[0]
        let actions = tr.lineUpAgain(now: end - 1_500_000_000)
        #expect(Self.startSegment(actions) == TimelineSegment(epoch: 2, itemID: added.id, position: 0, at: end))
        #expect(tr.snapshot(at: end + 1_000_000).state == .playing && tr.snapshot(at: end + 1_000_000).item?.path == "/t9.mp3")
    }

    @Test func clearingStops() throws {
        var tr = Self.make(3)
        _ = try tr.handle(.play, now: Self.t(0))
        #expect(tr.clear(now: Self.t(500)) == [.cut(epoch: 1, at: Self.t(585))])
        #expect(tr.snapshot(at: Self.t(600)).state == .stopped && tr.queue.isEmpty)
    }

    @Test func restoredStateIsPausedWhereTheHouseLeftOff() throws {
        var saved = Self.make(3).queue
        _ = saved.advance(automatic: false)
        var tr = Transport(queue: saved, pausedAt: 30 * Self.second, epoch: 41)
        #expect(tr.snapshot(at: Self.t(0)).state == .paused)
        let resume = try #require(Self.startSegment(try tr.handle(.play, now: Self.t(0))))
        #expect(resume.position == 30 * Self.second && resume.epoch == 42 && resume.itemID == saved.currentID)
    }
}

/// Every command in every state: the invariants hold whatever the order.
@Suite("Transport: every command in every state")
struct TransportMatrixTests {
    enum Start: String, CaseIterable { case stopped, paused, loading, playing, emptyQueue, lastTrackOnce }

    static let commands: [TransportCommand] = [
        .play, .pause, .toggle, .stop, .next, .previous, .seek(to: 48_000 * 10), .seek(to: 48_000 * 999),
        .skip(by: 48_000 * 5), .skip(by: -48_000 * 5), .skip(by: 48_000 * 120), .playItem(index: 1), .playItem(index: 9),
    ]

    static func prepare(_ start: Start) -> (Transport, CoordinatorTime) {
        var tr = start == .emptyQueue ? Transport() : TransportTests.make(3, mode: start == .lastTrackOnce ? .once : .all)
        let t0 = TransportTests.t(0)
        switch start {
        case .stopped, .emptyQueue: break
        case .paused:
            _ = try? tr.handle(.play, now: t0)
            _ = try? tr.handle(.pause, now: TransportTests.t(3_000))
        case .loading: _ = try? tr.handle(.play, now: TransportTests.t(9_960))
        case .playing: _ = try? tr.handle(.play, now: t0)
        case .lastTrackOnce: _ = try? tr.handle(.playItem(index: 2), now: t0)
        }
        return (tr, TransportTests.t(10_000))
    }

    @Test(arguments: Start.allCases, commands)
    func invariantsHold(start: Start, command: TransportCommand) {
        var (tr, now) = Self.prepare(start)
        let before = tr.snapshot(at: now)
        let epochBefore = tr.epoch
        do {
            let actions = try tr.handle(command, now: now)
            let after = tr.snapshot(at: now + 200_000_000)
            // A start is a new epoch, scheduled after now; a cut belongs to the old epoch.
            for action in actions {
                switch action {
                case let .start(segment):
                    #expect(segment.epoch == tr.epoch && tr.epoch != epochBefore)
                    #expect(segment.at > now && segment.position >= 0)
                    #expect(tr.queue.item(id: segment.itemID) != nil)
                case let .cut(epoch, at):
                    #expect(epoch == epochBefore && at > now)
                case .continueWith:
                    Issue.record("a command never continues a track")
                }
            }
            let starts = actions.filter { if case .start = $0 { return true }; return false }.count
            #expect(starts <= 1)
            if starts == 1 { #expect(after.state == .playing) }
            if after.state == .playing || after.state == .loading { #expect(after.item != nil) }
            if after.state == .stopped { #expect(after.position == 0) }
            if let item = after.item, let duration = tr.duration(itemID: item.id) { #expect(after.position < duration) }
        } catch {
            // A refused command changes nothing.
            #expect(tr.snapshot(at: now) == before)
            #expect(tr.epoch == epochBefore)
        }
    }
}
