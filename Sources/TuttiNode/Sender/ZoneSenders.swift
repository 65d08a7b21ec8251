import Foundation
import Synchronization
import TuttiCodecs
import TuttiCore
import TuttiNet

/// Makes and ends the zones' senders: the house asks for one when a zone is made (and for
/// each zone at start), and ends it when the zone goes.
protocol ZoneSenders: Sendable {
    /// A running sender for zone `zone`, whose news goes to `news`: its stream's SSRC and
    /// its player.
    func start(zone: String, news: @escaping @Sendable (PlayerNews) -> Void) throws -> (ssrc: UInt32, player: Player)
    /// Ends the sender of stream `ssrc` (its thread stops, its stream is forgotten).
    func stop(ssrc: UInt32)
    /// What zone `zone`'s stream carries.
    func codec(zone: String) -> StreamCodec
}

/// The coordinator's senders: one player per zone, each on a thread of its own, each
/// filling its own stream (`StreamOutlet`: its SSRC, retransmissions, seal). The default
/// zone's stream is the coordinator's first. `stopAll` ends every one of them;
/// `waitUntilStopped` returns once they all have ended (the service group's shutdown waits for it).
final class CoordinatorSenders: ZoneSenders, Sendable {
    /// The zones' streams, and the maker of new ones.
    private let streams: StreamDirectory
    private let clock: any MonotonicClock
    private let configuration: Player.Configuration
    /// Which codec each zone's stream carries.
    private let codecs: ZoneCodecs
    private let opener: @Sendable (String) throws -> any FrameSource
    /// Makes each zone's encoder (nil: Opus, as the configuration says).
    private let makeEncoder: (@Sendable (OpusFrameEncoder.Settings) throws -> any FrameEncoding)?
    /// The default zone's stream began an epoch (the SDP file describes its timing).
    private let onDefaultEpoch: @Sendable (StreamPacketizer) -> Void
    /// Each zone's audio, for the Sendspin players.
    let taps: ZoneTaps
    /// Running players by SSRC, their threads, and whether they are all to stop.
    private struct Running {
        var players: [UInt32: (player: Player, stop: StopFlag)] = [:]
        var threads = 0
        var stopping = false
    }
    private let running = Inbox(Running())
    /// Who turns the players: each its own thread (a program), or the caller (`turn`: a
    /// simulated house, on its manual clock).
    enum Turning: Sendable { case threads, byCaller }
    private let turning: Turning

    init(streams: StreamDirectory, clock: any MonotonicClock, configuration: Player.Configuration, codecs: ZoneCodecs = ZoneCodecs(),
         opener: @escaping @Sendable (String) throws -> any FrameSource,
         makeEncoder: (@Sendable (OpusFrameEncoder.Settings) throws -> any FrameEncoding)? = nil,
         onDefaultEpoch: @escaping @Sendable (StreamPacketizer) -> Void = { _ in }, turning: Turning = .threads, taps: ZoneTaps = ZoneTaps()) {
        self.turning = turning
        self.taps = taps
        self.streams = streams
        self.clock = clock
        self.configuration = configuration
        self.codecs = codecs
        self.opener = opener
        self.makeEncoder = makeEncoder
        self.onDefaultEpoch = onDefaultEpoch
    }

    func start(zone: String, news: @escaping @Sendable (PlayerNews) -> Void) throws -> (ssrc: UInt32, player: Player) {
        let isDefault = zone == ZoneInfo.defaultID
        let outlet = isDefault ? streams.defaultOutlet : streams.makeOutlet()
        let stop = StopFlag()
        let player: Player
        let onDefaultEpoch = onDefaultEpoch
        var configuration = configuration
        configuration.codec = codecs.codec(forZone: zone)
        do {
            // The player sends straight to its stream's outlet.
            player = try Player(
                configuration: configuration, ssrc: outlet.ssrc, stopFlag: stop, clock: clock, opener: opener,
                encoder: try makeEncoder?(configuration.encoder),
                send: { packet in outlet.transmit(packet) },
                sendReport: { report in outlet.transmit(report: report) },
                onEpoch: { packetizer in if isDefault { onDefaultEpoch(packetizer) } }, tap: taps.tap(zone))
        } catch {
            streams.remove(ssrc: outlet.ssrc)
            throw error
        }
        player.onNews = news
        let running = running
        let threaded = turning == .threads
        running.withLock { state in
            if state.stopping { stop.set() }
            state.players[outlet.ssrc] = (player, stop)
            if threaded { state.threads += 1 }
        }
        guard threaded else { return (outlet.ssrc, player) }
        startThread(isDefault ? "tutti-player" : "tutti-zone") {
            player.run()
            running.post { $0.threads -= 1 }
        }
        return (outlet.ssrc, player)
    }

    func codec(zone: String) -> StreamCodec { codecs.codec(forZone: zone) }

    func stop(ssrc: UInt32) {
        let entry = running.withLock { $0.players.removeValue(forKey: ssrc) }
        entry?.stop.set()
        entry?.player.wake()
        streams.remove(ssrc: ssrc)
    }

    /// Asks every sender to stop (any thread).
    func stopAll() {
        let all = running.post { state in
            state.stopping = true
            return state.players.values
        }
        for (player, stop) in all {
            stop.set()
            player.wake()
        }
    }

    /// Turns every player once (`.byCaller`): what each has to do now is done; returns the
    /// earliest time one must turn again.
    func turn() -> Int64 {
        let players = running.withLock { $0.players.values.map(\.player) }
        return players.map { $0.turn() }.min() ?? .max
    }

    /// Blocks until `stopAll` was called and every sender's thread has ended.
    func waitUntilStopped() {
        running.wait(timeout: nil) { $0.stopping && $0.threads == 0 }
    }
}
