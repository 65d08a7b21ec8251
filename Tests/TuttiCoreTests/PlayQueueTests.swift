import Foundation
import Testing
@testable import TuttiCore

@Suite("Play queue and loop modes")
struct PlayQueueTests {
    static func queue(_ n: Int, mode: LoopMode = .all, seed: UInt64 = 1) -> PlayQueue {
        var q = PlayQueue(seed: seed)
        q.add((1...n).map { "/music/\($0).mp3" })
        q.setLoopMode(mode)
        return q
    }

    static func paths(_ q: PlayQueue) -> [String] { q.items.map(\.path) }

    @Test func addingAtTheEndOrAfterTheCurrentTrack() throws {
        var q = Self.queue(3)
        #expect(q.current?.path == "/music/1.mp3")
        _ = q.advance(automatic: false)  // current: 2
        q.add(["/x.mp3"], placement: .afterCurrent)
        q.add(["/y.mp3"])
        #expect(Self.paths(q) == ["/music/1.mp3", "/music/2.mp3", "/x.mp3", "/music/3.mp3", "/y.mp3"])
        #expect(q.advance(automatic: true)?.path == "/x.mp3")
        let ids = q.items.map(\.id)
        #expect(Set(ids).count == ids.count, "ids are unique")
    }

    @Test func removingTheCurrentTrackMakesTheNextOneCurrent() throws {
        var q = Self.queue(3)
        let first = try #require(q.current)
        #expect(try q.remove(id: first.id) == true)
        #expect(q.current?.path == "/music/2.mp3")
        #expect(try q.remove(id: q.items[1].id) == false)
        #expect(try q.remove(id: q.items[0].id) == true)
        #expect(q.current == nil && q.isEmpty)
        #expect(throws: QueueError.noSuchItem(id: 99)) { try q.remove(id: 99) }
    }

    @Test func movingAndSelecting() throws {
        var q = Self.queue(4)
        try q.move(id: q.items[3].id, to: 0)
        #expect(Self.paths(q) == ["/music/4.mp3", "/music/1.mp3", "/music/2.mp3", "/music/3.mp3"])
        #expect(throws: QueueError.indexOutOfRange(index: 4, count: 4)) { try q.move(id: q.items[0].id, to: 4) }
        #expect(throws: QueueError.indexOutOfRange(index: -1, count: 4)) { try q.select(index: -1) }
        try q.select(index: 2)
        #expect(q.current?.path == "/music/2.mp3")
        q.clear()
        #expect(q.current == nil && q.advance(automatic: false) == nil)
    }

    @Test func onceStopsAtTheEndAndIsReadyToPlayAgain() {
        var q = Self.queue(3, mode: .once)
        #expect(q.advance(automatic: true)?.path == "/music/2.mp3")
        #expect(q.advance(automatic: true)?.path == "/music/3.mp3")
        #expect(q.advance(automatic: true) == nil)
        #expect(q.current?.path == "/music/1.mp3")
        #expect(q.retreat()?.path == "/music/1.mp3", "no wrapping backwards either")
    }

    @Test func oneRepeatsByItselfButNextMovesOn() {
        var q = Self.queue(2, mode: .one)
        #expect(q.advance(automatic: true)?.path == "/music/1.mp3")
        #expect(q.advance(automatic: false)?.path == "/music/2.mp3")
        #expect(q.advance(automatic: false)?.path == "/music/1.mp3")
    }

    @Test func allWrapsAroundBothWays() {
        var q = Self.queue(3, mode: .all)
        #expect(q.retreat()?.path == "/music/3.mp3")
        #expect(q.advance(automatic: true)?.path == "/music/1.mp3")
    }

    /// Every cycle plays every track once; no track twice in a row, even across cycles.
    @Test(arguments: [2, 3, 5, 12], [UInt64(1), 7, 42])
    func shufflePlaysEveryTrackOncePerCycleAndNeverRepeatsAtOnce(count: Int, seed: UInt64) {
        var q = Self.queue(count, mode: .shuffle, seed: seed)
        var played = [q.current!.id]
        for _ in 0..<(count * 20 - 1) { played.append(q.advance(automatic: true)!.id) }
        for cycle in stride(from: 0, to: played.count, by: count) {
            #expect(Set(played[cycle..<cycle + count]) == Set(q.items.map(\.id)), "cycle at \(cycle)")
        }
        for (a, b) in zip(played, played.dropFirst()) { #expect(a != b) }
    }

    @Test func shuffleIsRepeatableAndSurvivesSavingMidCycle() throws {
        var a = Self.queue(8, mode: .shuffle, seed: 99)
        var b = Self.queue(8, mode: .shuffle, seed: 99)
        for _ in 0..<5 { #expect(a.advance(automatic: true) == b.advance(automatic: true)) }
        let saved = try JSONEncoder().encode(a)
        var restored = try JSONDecoder().decode(PlayQueue.self, from: saved)
        for _ in 0..<20 { #expect(restored.advance(automatic: true) == a.advance(automatic: true)) }
        #expect(restored == a)
    }

    @Test func shuffleAddsNewTracksToTheRestOfTheCycleAndPreviousGoesBack() {
        var q = Self.queue(4, mode: .shuffle, seed: 3)
        let first = q.current!.id
        let second = q.advance(automatic: true)!.id
        let added = q.add(["/new.mp3"])[0].id
        var rest: [Int] = []
        for _ in 0..<3 { rest.append(q.advance(automatic: true)!.id) }
        #expect(Set([first, second] + rest) == Set(q.items.map(\.id)), "the new track plays this cycle")
        #expect(rest.contains(added))
        _ = q.retreat()
        #expect(q.current?.id == rest[1])
    }

    @Test func choosingATrackInShuffleKeepsTheCycle() throws {
        var q = Self.queue(6, mode: .shuffle, seed: 5)
        var seen = [q.current!.id]
        try q.select(index: 4)
        seen.append(q.current!.id)
        for _ in 0..<4 { seen.append(q.advance(automatic: true)!.id) }
        #expect(Set(seen).count == 6, "the chosen track counts as played this cycle")
    }

    @Test func removingTheCurrentTrackInShuffleFollowsTheOrder() throws {
        var q = Self.queue(5, mode: .shuffle, seed: 11)
        let current = q.current!.id
        var probe = q
        let expected = probe.advance(automatic: true)!.id
        #expect(try q.remove(id: current))
        #expect(q.current?.id == expected)
    }

    /// A playlist's titles stay with the queue's items, through a save; a queue saved before
    /// items had titles reads back without them.
    @Test func playlistTitlesAreKeptWithTheQueue() throws {
        var queue = PlayQueue()
        queue.add(["http://radio/a", "/b.mp3"], titles: ["http://radio/a": "Tutti FM"])
        let back = try JSONDecoder().decode(PlayQueue.self, from: JSONEncoder().encode(queue))
        #expect(back.items.map(\.title) == ["Tutti FM", nil])
        let old = #"{"id": 4, "path": "/old.mp3"}"#
        let item = try JSONDecoder().decode(QueueItem.self, from: Data(old.utf8))
        #expect(item == QueueItem(id: 4, path: "/old.mp3"))
    }

    @Test func errorsSayWhatWasWrong() {
        #expect(QueueError.indexOutOfRange(index: 7, count: 3).description.contains("0 to 2"))
        #expect(QueueError.indexOutOfRange(index: 0, count: 0).description.contains("empty"))
    }
}
