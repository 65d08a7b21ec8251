import ArgumentParser
import Foundation
import TuttiCore

/// Runs a follower's clock trace (`TUTTI_CLOCK_TRACE`) through the clock estimator of this
/// build, and measures its error against the offset the rig knows to be true (0 for a
/// follower on the coordinator's host with an unscaled clock). For studying the estimator
/// on readings from a real path, again and again.
struct ClockReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock-replay",
        abstract: "Replay a follower's clock trace (TUTTI_CLOCK_TRACE) through the clock estimator and measure its error.")

    @Argument(help: "A clock trace, as a follower writes it with TUTTI_CLOCK_TRACE=PATH.")
    var trace: String

    @Option(help: "The true offset, coordinator minus follower, in nanoseconds.")
    var truth: Int64 = 0

    @Option(help: "Seconds after the first exchange before errors count (settling).")
    var settle: Double = 15

    @Flag(help: "Leave out the stream's readings (exchanges only).")
    var noStream = false

    @Flag(help: "Print the estimate every second, not only the summary.")
    var verbose = false

    @Option(help: "Write every check (seconds, error ns, bound ns, drift ppm) to this CSV file, to set two followers' errors side by side.")
    var csv: String?

    func run() throws {
        guard let text = try? String(contentsOfFile: trace, encoding: .utf8) else {
            throw ValidationError("cannot read \(trace)")
        }
        var estimator = ClockEstimator()
        var start: Int64?
        var nextCheck: Int64 = .min
        var errors: [Int64] = []
        var covered = 0
        var skipped = 0
        var checks = 0
        var rows = ["seconds,error_ns,bound_ns,drift_ppm"]
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map { Int64($0) }
            guard f.count >= 4, let t2 = f[1], let t4 = f[3] else { skipped += 1; continue }
            if let t1 = f[0], let t3 = f[2] {
                start = start ?? t4
                estimator.add(ClockSample(t1: LocalTime(nanoseconds: t1), t2: CoordinatorTime(nanoseconds: t2),
                                          t3: CoordinatorTime(nanoseconds: t3), t4: LocalTime(nanoseconds: t4)))
            } else if !noStream {
                estimator.addStreamReading(sent: CoordinatorTime(nanoseconds: t2), arrived: LocalTime(nanoseconds: t4))
            }
            // Checked every 250 ms of local time, as the estimate then stood.
            guard let start, t4 >= nextCheck, let e = estimator.estimate else { continue }
            nextCheck = t4 + 250_000_000
            let local = LocalTime(nanoseconds: t4)
            let error = e.offset(at: local) - truth
            let bound = e.uncertainty(at: local)
            let seconds = Double(t4 - start) / 1e9
            checks += 1
            if csv != nil { rows.append(String(format: "%.3f,%lld,%lld,%.4f", Double(t4) / 1e9, error, bound, e.drift * 1e6)) }
            if verbose, checks % 4 == 1 {
                print(String(format: "%7.2f s  error %+8.1f µs  bound %7.1f µs  drift %+7.3f ppm ± %.3f", seconds,
                             Double(error) / 1e3, Double(bound) / 1e3, e.drift * 1e6, e.driftUncertainty * 1e6))
            }
            guard seconds >= settle else { continue }
            errors.append(error)
            if abs(error) <= bound { covered += 1 }
        }
        if let csv { try (rows.joined(separator: "\n") + "\n").write(toFile: csv, atomically: true, encoding: .utf8) }
        guard !errors.isEmpty else { throw ValidationError("no estimate after \(settle) s in \(trace)") }
        let magnitudes = errors.map { abs($0) }.sorted()
        func quantile(_ q: Double) -> Double { Double(magnitudes[min(magnitudes.count - 1, Int(q * Double(magnitudes.count)))]) / 1e3 }
        let mean = Double(errors.reduce(0, +)) / Double(errors.count) / 1e3
        print(String(format: "%d checks after %.0f s: |error| p50 %.1f µs, p95 %.1f µs, max %.1f µs; mean %+.1f µs; bound covers %.1f %%",
                     errors.count, settle, quantile(0.5), quantile(0.95), Double(magnitudes.last!) / 1e3, mean,
                     100 * Double(covered) / Double(errors.count)))
        print("stream readings \(estimator.streamReadings) (\(estimator.rejectedStreamReadings) rejected), restarts \(estimator.resets)"
              + (skipped > 0 ? ", \(skipped) lines skipped" : ""))
    }
}
