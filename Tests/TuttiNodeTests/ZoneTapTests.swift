import Synchronization
import Testing
@testable import TuttiNode

/// A zone's tap for its Sendspin players: a player that joins first gets what the zone's
/// player sent ahead and is still to be heard (as a tutti room asks again for the packets
/// sent before it joined), then every frame as it comes, in order; a cut voids what is kept
/// past it; a tap that does not keep posts only while someone listens.
@Suite("Zone taps")
struct ZoneTapTests {
    final class Heard: Sendable {
        let events = Mutex<[String]>([])
        func take(_ event: ZoneTap.Event) {
            events.withLock { events in
                switch event {
                case let .audio(samples, heard): events.append("audio \(heard) \(samples.count)")
                case let .cut(at): events.append("cut \(at)")
                }
            }
        }
    }

    @Test func aListenerThatJoinsGetsWhatIsStillToBeHeardFirst() {
        let tap = ZoneTap(keeping: true)
        #expect(tap.isListened)
        for k in 0..<10 { tap.post(.audio([0, 0], heard: Int64(k) * 20_000_000)) }
        // A cut at 150 ms: what was kept from there is void.
        tap.post(.cut(at: 150_000_000))
        let heard = Heard()
        let id = tap.listen(after: 60_000_000) { heard.take($0) }
        tap.post(.audio([1, 1, 1, 1], heard: 1_000_000_000))
        #expect(heard.events.withLock { $0 } == ["audio 80000000 2", "audio 100000000 2", "audio 120000000 2", "audio 140000000 2",
                                               "audio 1000000000 4"])
        tap.stopListening(id)
        tap.post(.audio([2, 2], heard: 1_020_000_000))
        #expect(heard.events.withLock { $0.count } == 5)
        // What is kept reaches 3 s behind the newest frame.
        tap.post(.audio([3, 3], heard: 5_000_000_000))
        let late = Heard()
        _ = tap.listen(after: 0) { late.take($0) }
        #expect(late.events.withLock { $0 } == ["audio 5000000000 2"])
    }

    @Test func aTapThatDoesNotKeepIsQuietUntilSomeoneListens() {
        let taps = ZoneTaps()
        let tap = taps.tap("default")
        #expect(taps.tap("default") === tap && !tap.isListened)
        tap.post(.audio([0, 0], heard: 1))
        let heard = Heard()
        let id = tap.listen(after: 0) { heard.take($0) }
        #expect(tap.isListened && heard.events.withLock { $0.isEmpty })
        tap.post(.cut(at: 5))
        #expect(heard.events.withLock { $0 } == ["cut 5"])
        tap.stopListening(id)
        #expect(!tap.isListened)
    }
}
