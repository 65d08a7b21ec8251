import Synchronization
import TuttiCore
import TuttiNet
import TuttiSecurity

/// The house's streams, one per zone, by SSRC: where the clock service files a follower's
/// subscription (in the stream it asks for, and in no other) and a retransmission request
/// (in the stream whose packets it names). The default zone's stream is there from the
/// start and answers for an SSRC the house does not have (0, or an earlier run's). It makes
/// the other zones' streams too (`makeOutlet`): the senders ask it, not the coordinator.
final class StreamDirectory: Sendable {
    /// How a new zone's stream is made: sealed with the stream's key in use (nil: plain
    /// RTP), to these destinations (the multicast group), keeping this many packets.
    struct Making: Sendable {
        var master: @Sendable () -> SRTPMasterKey?
        var destinations: [SocketAddress]
        var resending: Retransmitter<SocketAddress>.Configuration
        var members: @Sendable (_ ssrc: UInt32, _ now: Int64) -> [StreamTagKey]
    }

    private let outlets: Mutex<[UInt32: StreamOutlet]>
    let defaultOutlet: StreamOutlet
    private let making: Making

    /// The default zone's stream, made as `making` says, on `wire`, and also to `defaultAlsoTo`.
    init(making: Making, wire: StreamWire, defaultAlsoTo extra: [SocketAddress] = []) {
        self.making = making
        let outlet = Self.make(making, ssrc: UInt32.random(in: 1...UInt32.max), wire: wire, alsoTo: extra)
        defaultOutlet = outlet
        outlets = Mutex([outlet.ssrc: outlet])
    }

    private static func make(_ making: Making, ssrc: UInt32, wire: StreamWire, alsoTo extra: [SocketAddress] = []) -> StreamOutlet {
        StreamOutlet(ssrc: ssrc, master: making.master(), destinations: extra + making.destinations, wire: wire,
                     resending: making.resending, members: making.members)
    }

    /// A new zone's stream, with an SSRC of its own (none of the house's), on the default's
    /// wire; listed here until `remove`.
    func makeOutlet() -> StreamOutlet {
        outlets.withLock { table in
            var ssrc = UInt32.random(in: 1...UInt32.max)
            while table[ssrc] != nil || ssrc == defaultOutlet.ssrc { ssrc = UInt32.random(in: 1...UInt32.max) }
            let outlet = Self.make(making, ssrc: ssrc, wire: defaultOutlet.wire)
            table[ssrc] = outlet
            return outlet
        }
    }

    func remove(ssrc: UInt32) {
        guard ssrc != defaultOutlet.ssrc else { return }
        outlets.withLock { _ = $0.removeValue(forKey: ssrc) }
    }

    /// The stream with SSRC `ssrc`, else the default zone's.
    func outlet(_ ssrc: UInt32) -> StreamOutlet { outlets.withLock { $0[ssrc] } ?? defaultOutlet }

    /// The SSRC of the stream a follower gets when it asks for `ssrc`.
    func resolve(_ ssrc: UInt32) -> UInt32 { outlet(ssrc).ssrc }

    var all: [StreamOutlet] { outlets.withLock { Array($0.values) } }

    /// `target` receives stream `ssrc` until `expiry`, and no other stream from now on (a
    /// room that moved to another zone): whether it was taken, and whether it is new to it.
    func subscribe(_ target: SocketAddress, to ssrc: UInt32, until expiry: Int64, at time: Int64) -> (accepted: Bool, isNew: Bool) {
        let chosen = outlet(ssrc)
        for other in all where other !== chosen { _ = other.subscribe(target, until: time, at: time) }
        return chosen.subscribe(target, until: expiry, at: time)
    }

    /// What the streams' retransmitters did so far, together.
    var retransmissions: Retransmitter<SocketAddress>.Statistics {
        all.reduce(into: .init()) { sum, outlet in
            let s = outlet.retransmissions
            sum.requested += s.requested
            sum.resent += s.resent
            sum.unknown += s.unknown
            sum.refused += s.refused
            sum.foreign += s.foreign
        }
    }

    func subscriberCount(at time: Int64) -> Int { all.reduce(0) { $0 + $1.subscriberCount(at: time) } }
}
