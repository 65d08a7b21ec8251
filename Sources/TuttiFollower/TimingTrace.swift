import TuttiCore
import TuttiNet

/// A CSV file a trace writes, its header first; nil without a path or when it cannot be made.
final class CSVTrace: @unchecked Sendable {
    private let file: OutputFile

    init?(path: String?, header: String) {
        guard let path, let file = try? OutputFile(creating: path) else { return nil }
        self.file = file
        write(header)
    }

    func write(_ line: String) {
        file.write(line + "\n")
    }
}

/// `TUTTI_TRACE=PATH`: one CSV line per render of the follower's playout loop, for
/// studying the timing loop (bench/ reads it).
final class TimingTrace {
    private let file: CSVTrace

    init?(path: String?) {
        guard let file = CSVTrace(path: path, header: "local_ns,report_frame,report_heard_ns,report_rtt_ns,frames_written,heard_at_ns,error_ns,ratio,offset_ns,drift")
        else { return nil }
        self.file = file
    }

    func record(now: Int64, timing: DeviceTiming?, written: Int64, heard: LocalTime?, engine: PlayoutEngine) {
        let s = engine.statistics
        let e = engine.clockEstimate
        let report = timing.map { "\($0.frame),\($0.heardAt.nanoseconds),\($0.uncertainty)" } ?? ",,"
        file.write("\(now),\(report),\(written),\(heard?.nanoseconds ?? 0),\(s.lastError),\(s.ratio),\(e?.offset ?? 0),\(e?.drift ?? 0)")
    }
}

/// `TUTTI_CLOCK_TRACE=PATH`: one CSV line per time exchange (its four timestamps) and the
/// estimate after it, and one per stream packet stamped with its send time (`t2` the send
/// time, `t4` the kernel's arrival stamp, `t1` and `t3` empty), for studying the clock (the
/// truth is known on a test rig; `tutti clock-replay` runs a trace through the estimator).
final class ClockTrace: Sendable {
    private let file: CSVTrace

    init?(path: String?) {
        guard let file = CSVTrace(path: path, header: "t1,t2,t3,t4,offset_ns,reference_ns,drift,uncertainty_ns") else { return nil }
        self.file = file
    }

    func record(_ s: ClockSample, _ e: ClockEstimate?) {
        let estimate = e.map { "\($0.offset),\($0.reference.nanoseconds),\($0.drift),\($0.uncertainty)" } ?? ",,,"
        file.write("\(s.t1.nanoseconds),\(s.t2.nanoseconds),\(s.t3.nanoseconds),\(s.t4.nanoseconds),\(estimate)")
    }

    /// A stream packet's bytes as they arrived (packets without a send time are not written).
    func recordStream(_ bytes: [UInt8], arrived: Int64) {
        guard let sent = (try? RTPPacket.decode(bytes))?.sendTime, sent.nanoseconds != 0 else { return }
        file.write(",\(sent.nanoseconds),,\(arrived),,,,")
    }
}
