import Foundation
import TuttiCore

/// `TUTTI_TRACE=PATH`: one CSV line per render of the follower's playout loop, for
/// studying the timing loop (bench/ reads it).
final class TimingTrace {
    private let handle: FileHandle

    init?(path: String?) {
        guard let path, FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else { return nil }
        self.handle = handle
        handle.write(Data("local_ns,report_frame,report_heard_ns,report_rtt_ns,frames_written,heard_at_ns,error_ns,ratio,offset_ns,drift\n".utf8))
    }

    func record(now: Int64, timing: DeviceTiming?, written: Int64, heard: LocalTime?, engine: PlayoutEngine) {
        let s = engine.statistics
        let e = engine.clockEstimate
        let report = timing.map { "\($0.frame),\($0.heardAt.nanoseconds),\($0.uncertainty)" } ?? ",,"
        let line = "\(now),\(report),\(written),\(heard?.nanoseconds ?? 0),\(s.lastError),\(s.ratio),\(e?.offset ?? 0),\(e?.drift ?? 0)\n"
        handle.write(Data(line.utf8))
    }
}
