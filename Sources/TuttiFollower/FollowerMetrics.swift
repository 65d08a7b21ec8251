import TuttiCore
import TuttiMetrics

/// A follower's metrics (docs/metrics.md), brought up to date from the playout's snapshots
/// (every 100 ms, on the playout thread; the registry's values are atomic, and the
/// metrics listener's thread reads them).
final class FollowerMetrics: Sendable {
    private let received = TotalCounter("tutti_follower_packets_received_total", "Stream packets received (sealed with the house key, or plain RTP with --plain-rtp).")
    private let missed = TotalCounter("tutti_follower_packets_missed_total", "Stream packets the network lost: overdue or a gap in the sequence (before any retransmission).")
    private let retransmitted = TotalCounter("tutti_follower_packets_retransmitted_total", "Missed packets that came back by retransmission in time.")
    private let lost = TotalCounter("tutti_follower_packets_lost_total", "Packets missing when their turn came: concealed or recovered by FEC.")
    private let recovered = TotalCounter("tutti_follower_packets_fec_recovered_total", "Lost packets rebuilt from the next packet's forward error correction.")
    private let concealed = TotalCounter("tutti_follower_frames_concealed_total", "Audio frames the decoder made up for lost packets (packet loss concealment).")
    private let concealments = TotalCounter("tutti_follower_concealments_total", "Packets' worth of audio made up for missing ones (concealed, or silence): each a hole heard.")
    private let holes = TotalCounter("tutti_follower_holes_total", "Times the sound device ran dry while the room played (an underrun): holes this follower caused.")
    private let nearMisses = TotalCounter("tutti_follower_output_near_misses_total", "Writes that came within half the floor of the sound device running dry (each grew the floor).")
    private let floor = GaugeValue("tutti_follower_output_floor_seconds", "The margin kept between a write and the sound device running dry: grows when this machine wakes the follower late.")
    private let late = TotalCounter("tutti_follower_packets_late_total", "Packets that arrived after their turn.")
    private let unsealed = TotalCounter("tutti_follower_packets_unsealed_total", "Packets dropped as not sealed with the house key (strangers, replays).")
    private let untagged = TotalCounter("tutti_follower_packets_untagged_total", "Packets dropped that opened with the stream's key but carried no tag for this member (another member playing into this room).")
    private let steps = TotalCounter("tutti_follower_steps_total", "Timing errors corrected by a jump of the position.")
    private let slews = TotalCounter("tutti_follower_slews_total", "Timing errors beyond a sample corrected by resampling.")
    private let outages = TotalCounter("tutti_follower_outages_total", "Times the stream stopped coming and playback stopped until it returned.")
    private let offset = GaugeValue("tutti_follower_clock_offset_seconds", "The coordinator's clock minus this machine's, as estimated.")
    private let uncertainty = GaugeValue("tutti_follower_clock_uncertainty_seconds", "The bound of the clock estimate's error.")
    private let roundTrip = GaugeValue("tutti_follower_clock_round_trip_seconds", "The shortest recent round trip of a clock exchange.")
    private let locked = GaugeValue("tutti_follower_clock_locked", "1 when the clock is locked to the coordinator's, else 0.")
    private let timingError = GaugeValue("tutti_follower_timing_error_seconds", "The last measured playback error (positive: late).")
    private let rate = GaugeValue("tutti_follower_rate_ppm", "The resampler's correction of the playback rate, parts per million.")
    private let buffered = GaugeValue("tutti_follower_buffered_packets", "Packets waiting in the jitter buffer.")
    private let outputLatency = GaugeValue("tutti_follower_output_latency_seconds", "How far ahead of being heard the room decides its audio (sound server latency plus one write).")
    private let playing = GaugeValue("tutti_follower_playing", "1 while the room plays the stream, else 0.")

    init() {}

    func update(_ s: PlayoutSnapshot, unsealed count: Int, untagged notForUs: Int) {
        let st = s.statistics
        received.update(total: st.packetsReceived)
        missed.update(total: s.requests.missed)
        retransmitted.update(total: st.retransmitted)
        lost.update(total: st.lost)
        recovered.update(total: st.recoveredByFEC)
        concealed.update(total: st.concealedFrames)
        concealments.update(total: st.concealments)
        holes.update(total: s.holes)
        nearMisses.update(total: s.nearMisses)
        floor.set(Double(s.floor) / 1e9)
        late.update(total: st.late)
        unsealed.update(total: count)
        untagged.update(total: notForUs)
        steps.update(total: st.steps)
        slews.update(total: st.slews)
        outages.update(total: st.outages)
        offset.set(Double(s.estimate?.offset ?? 0) / 1e9)
        uncertainty.set(Double(s.estimate?.uncertainty ?? 0) / 1e9)
        roundTrip.set(Double(s.estimate?.minimumRoundTrip ?? 0) / 1e9)
        locked.set(s.estimate == nil ? 0 : 1)
        timingError.set(Double(st.lastError) / 1e9)
        rate.set((st.ratio - 1) * 1e6)
        buffered.set(Double(st.buffered))
        outputLatency.set(Double(s.committedAhead) / 1e9)
        playing.set(s.state == .playing ? 1 : 0)
    }
}
