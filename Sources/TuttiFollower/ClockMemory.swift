import FoundationEssentials
import Synchronization
import TuttiCore
import TuttiNet

/// A follower's clock lock, kept in its state folder (`clock-ROOM.json`) so that a restart
/// resumes it rather than acquiring it again: the way chrony keeps its drift file, but the
/// whole line, since a process restart (an upgrade, a crash, `systemctl restart`) leaves the
/// host's clock running on. On a jittery path a fresh lock is tens of microseconds off for
/// its first seconds; the remembered one is as good as the lock was, less the drift's error
/// and the crystal's wander over the time since.
///
/// It is used only on the same host clock (the same boot, the same test clock) and with the
/// same coordinator and house, and only while the coordinator's answers agree with it
/// (`ClockEstimator.resume(from:)`): a coordinator that rebooted is told apart at its first
/// answer. Saved every minute while locked and when the follower stops; written atomically.
struct ClockMemory: Codable, Equatable {
    static let currentVersion = 1
    /// Beyond this age the remembered line is not worth its bound.
    static let maximumAge: Int64 = 3_600_000_000_000

    var version = Self.currentVersion
    /// The local clock the estimate reads: the host's boot, and the test clock, if any.
    var host: String
    /// The coordinator's address and the house key's fingerprint.
    var coordinator: String
    var offset: Int64
    var reference: Int64
    var drift: Double
    var uncertainty: Int64
    var driftUncertainty: Double
    var minimumRoundTrip: Int64
    var lastExchange: Int64
    /// The sound device played to, and its rate against the local clock as measured then
    /// (`DeviceTimeline.rateOffsetPPM`), if it had been measured.
    var device: String?
    var deviceRatePPM: Double?

    init(_ estimate: ClockEstimate, host: String, coordinator: String, device: String? = nil, deviceRatePPM: Double? = nil) {
        self.host = host
        self.coordinator = coordinator
        self.device = device
        self.deviceRatePPM = deviceRatePPM
        offset = estimate.offset
        reference = estimate.reference.nanoseconds
        drift = estimate.drift
        uncertainty = estimate.uncertainty
        driftUncertainty = estimate.driftUncertainty
        minimumRoundTrip = estimate.minimumRoundTrip
        lastExchange = estimate.lastExchange.nanoseconds
    }

    var estimate: ClockEstimate {
        ClockEstimate(offset: offset, reference: LocalTime(nanoseconds: reference), drift: drift, uncertainty: uncertainty,
                      minimumRoundTrip: minimumRoundTrip, sampleCount: 0, driftUncertainty: driftUncertainty,
                      lastExchange: LocalTime(nanoseconds: lastExchange))
    }

    /// The file for room `room` in `directory`.
    static func path(in directory: String, room: String) -> String {
        let safe = String(room.unicodeScalars.prefix(64).map { scalar -> Character in
            let kept = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_"
            return kept ? Character(scalar) : "_"
        })
        return directory + "/clock-\(safe).json"
    }

    /// This host's local clock: the boot (CLOCK_MONOTONIC starts again at each) and the
    /// process's test clock, which starts at the process's start (so never matches another's).
    static func hostClock() -> String {
        let boot = Files.read("/proc/sys/kernel/random/boot_id").map { String(decoding: $0, as: UTF8.self).trimmingWhitespace() } ?? "unknown"
        let transform = ClockTransform.process
        guard transform.ppm != 0 || transform.offset != 0 else { return boot }
        return "\(boot) scaled \(transform.ppm) ppm, offset \(transform.offset) ns, from \(transform.start)"
    }

    /// Why a saved memory cannot be used now, or nil when it can.
    func unusable(host: String, coordinator: String, now: LocalTime) -> String? {
        if version != Self.currentVersion { return "written by another version of tutti" }
        if self.host != host { return "it read another clock (an earlier boot of this host, or a test clock)" }
        if self.coordinator != coordinator { return "for another coordinator or house" }
        let age = now.nanoseconds - lastExchange
        if age < 0 || age > Self.maximumAge { return "too old" }
        if !ClockEstimator.isPlausible(estimate) || deviceRatePPM.map({ abs($0) > 1_000 }) == true {
            return "its figures are out of range (a damaged file)"
        }
        return nil
    }

    /// The memory at `path`, if readable (a file that is not is ignored: it is only a head start).
    static func load(path: String) -> ClockMemory? {
        guard let bytes = Files.read(path) else { return nil }
        return try? JSONDecoder().decode(ClockMemory.self, from: Data(bytes))
    }

    func save(path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(self), to: path, permissions: 0o600)
    }
}

/// Where and when a follower keeps its clock memory: it loads it once, saves it every minute
/// while locked (on a short thread of its own, never the playout thread) and when it stops, and
/// says once if it cannot.
final class ClockMemoryKeeper: Sendable {
    let path: String
    let host: String
    let coordinator: String
    private let saveInterval: Int64 = 60_000_000_000
    private let state = Mutex<(nextSave: Int64, failed: Bool)>((0, false))
    private let log = Log("follower")

    init(path: String, coordinator: String) {
        self.path = path
        host = ClockMemory.hostClock()
        self.coordinator = coordinator
    }

    /// The remembered clock, if there is one this follower may resume from at `now`.
    func recall(now: LocalTime) -> ClockMemory? {
        guard let memory = ClockMemory.load(path: path) else { return nil }
        if let reason = memory.unusable(host: host, coordinator: coordinator, now: now) {
            log.info("not resuming the clock of the last run (\(path)): \(reason)")
            return nil
        }
        let estimate = memory.estimate
        log.info("resuming the clock of the last run, \((Double(now.nanoseconds - memory.lastExchange) / 1e9).fixed(1)) s ago: "
                 + "offset \((Double(estimate.offset(at: now)) / 1e6).fixed(3)) ms, drift \((estimate.drift * 1e6).fixed(2, sign: true)) ppm, "
                 + "±\((Double(estimate.uncertainty(at: now)) / 1e3).fixed(1)) µs now; checking it against the coordinator's answers")
        return memory
    }

    /// Saves `estimate` (and the device's rate, when measured) if a minute has passed since
    /// the last save, or at once when `now` is nil (at stop).
    func keep(_ estimate: ClockEstimate?, device: String, deviceRatePPM: Double?, now: Int64?) {
        guard let estimate else { return }
        let due = state.withLock { s -> Bool in
            guard let now else { return true }
            guard now >= s.nextSave else { return false }
            s.nextSave = now + saveInterval
            return true
        }
        guard due else { return }
        do {
            try Files.makeFolders(Files.folder(of: path), permissions: 0o700)
            try ClockMemory(estimate, host: host, coordinator: coordinator, device: device, deviceRatePPM: deviceRatePPM).save(path: path)
        } catch {
            let first = state.withLock { s -> Bool in defer { s.failed = true }; return !s.failed }
            if first { log.warning("cannot keep the clock for the next run in \(path): \(error) (a restart locks afresh)") }
        }
    }
}
