import Synchronization
import TuttiAPI
import TuttiCore
import TuttiMetrics

/// The coordinator's metrics (docs/metrics.md), at `/metrics` on the control API beside
/// the API's own (requests, errors and durations by route, from Hummingbird's metrics
/// middleware). Counted as they happen (commands, encode times) or sampled at each scrape
/// (packets sent, subscribers, rooms). One set per process: the registry is the process's.
final class CoordinatorMetrics: Sendable {
    static let shared = CoordinatorMetrics()

    let packetsSent = TotalCounter("tutti_stream_packets_sent_total", "Stream packets sent (to at least one destination).")
    let retransmissionsAsked = TotalCounter("tutti_stream_retransmissions_requested_total", "Packets the followers asked for again (NACKs).")
    let retransmissionsSent = TotalCounter("tutti_stream_retransmissions_sent_total", "Packets sent again in answer (RFC 4588).")
    let retransmissionsRefused = TotalCounter("tutti_stream_retransmissions_refused_total", "Requests refused: beyond a follower's rate, or packets no longer held.")
    let strangers = TotalCounter("tutti_clock_port_strangers_total", "Messages on the clock port dropped: not signed with the house key, or without a valid cookie.")
    let subscribers = GaugeValue("tutti_stream_subscribers", "Followers receiving the stream by unicast.")
    let rooms = GaugeValue("tutti_rooms", "Rooms the house knows.")
    let roomsConnected = GaugeValue("tutti_rooms_connected", "Rooms whose follower reported within the last seconds.")
    let roomsPlaying = GaugeValue("tutti_rooms_playing", "Rooms playing the stream.")
    let sendspinRooms = GaugeValue("tutti_sendspin_rooms_connected", "Rooms that are Sendspin players, connected.")
    let playing = GaugeValue("tutti_playing", "1 while any zone of the house plays, else 0.")
    let encode = DurationValues("tutti_encode_seconds", "Time to encode one Opus frame.", buckets: [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(20),
    ])

    /// Per zone, by its id: whether it plays, and its rooms playing (made as zones appear).
    private let zoneGauges = Mutex<[String: (playing: GaugeValue, rooms: GaugeValue, latency: GaugeValue)]>([:])

    private let commands = LabelledCounter("tutti_commands_total", "Commands taken from the control API, by command.", label: "command")

    private init() {}

    /// A command the house took (`play`, `queue-add`, `volume` ...).
    func command(_ name: String) { commands.increment(name) }

    func sample(rooms views: [RoomView], zones: [ZoneView]) {
        rooms.set(Double(views.count))
        roomsConnected.set(Double(views.filter(\.connected).count))
        let playingRooms = views.filter { $0.connected && $0.report?.state == .playing }
        roomsPlaying.set(Double(playingRooms.count))
        sendspinRooms.set(Double(views.filter { $0.connected && $0.report?.via == RoomReport.sendspin }.count))
        playing.set(zones.contains { $0.nowPlaying.state == .playing } ? 1 : 0)
        zoneGauges.withLock { gauges in
            for zone in zones where gauges[zone.id] == nil {
                gauges[zone.id] = (GaugeValue("tutti_zone_playing", "1 while the zone plays, else 0.", labels: [("zone", zone.id)]),
                                   GaugeValue("tutti_zone_rooms_playing", "The zone's rooms playing its stream.", labels: [("zone", zone.id)]),
                                   GaugeValue("tutti_zone_latency_seconds", "How long after it arrives a live input is heard in the zone: the latency in force.",
                                              labels: [("zone", zone.id)]))
            }
            for (id, gauge) in gauges {
                let zone = zones.first { $0.id == id }
                gauge.playing.set(zone?.nowPlaying.state == .playing ? 1 : 0)
                gauge.rooms.set(Double(playingRooms.filter { $0.zone == id }.count))
                if let latency = zone?.nowPlaying.latencyMilliseconds { gauge.latency.set(latency / 1_000) }
            }
        }
    }
}

extension TransportCommand {
    /// The command's name in metrics.
    var metricName: String {
        switch self {
        case .play: "play"
        case .pause: "pause"
        case .toggle: "toggle"
        case .stop: "stop"
        case .next: "next"
        case .previous: "previous"
        case .seek: "seek"
        case .skip: "skip"
        case .playItem: "play-item"
        }
    }
}
