import Foundation
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiMedia

/// Calibration: the rooms play probes in turn (`CalibrationPlan`) while a microphone where
/// people listen records them (a phone's, through the web remote, or any Linux machine's,
/// through `tutti ctl calibrate`); the recording comes back here, where the probes are found
/// in it (`ProbeFinder`) and the rooms' offsets turned into output delays.
extension House {
    public func startCalibration(_ request: CalibrationRequest) async throws(ControlError) -> CalibrationStarted {
        CoordinatorMetrics.shared.command("calibrate")
        let level = request.level ?? 0.2
        guard level.isFinite, level > 0, level <= 1 else { throw .badRequest("the probes' level must be above 0 and at most 1, not \(level)") }
        var keys: [String] = []
        if let named = request.rooms, !named.isEmpty {
            for name in named {
                let key: String
                do throws(RoomError) { key = try registry.find(name) } catch { throw ControlError(error) }
                guard registry.rooms[key]?.connected == true else { throw .conflict("room '\(name)' is not connected: it cannot play a probe") }
                if !keys.contains(key) { keys.append(key) }
            }
        } else {
            keys = registry.connected.map(\.key)
        }
        guard !keys.isEmpty else { throw .conflict("no room is connected: there is nothing to calibrate") }
        guard keys.count <= 16 else { throw .badRequest("at most 16 rooms in one calibration, not \(keys.count)") }
        let t = now.nanoseconds
        // Two at once would each hear the other's probes.
        if let running = calibrations.values.map(\.end).filter({ $0 > t }).max() {
            throw .conflict("a calibration is under way: try again in \(Int((Double(running - t) / 1e9).rounded(.up))) s")
        }
        // Every room must have heard of its probe before it is due: the house's command lead.
        let lead = max(CalibrationPlan.lead, registry.commandLead() + 300_000_000)
        let plan = CalibrationPlan(id: UUID().uuidString.lowercased().prefix(8).description, rooms: keys, now: t, level: level, lead: lead)
        for probe in plan.probes {
            messenger.probe(CalibrationProbe(seed: probe.seed, level: Float(plan.level)), at: CoordinatorTime(nanoseconds: probe.at), to: probe.room)
        }
        calibrations[plan.id] = plan
        // Kept for 10 minutes at most (a recording comes within seconds of the end).
        calibrations = calibrations.filter { $0.value.end > t - 600_000_000_000 }
        log.info("calibration \(plan.id): \(keys.count) room\(keys.count == 1 ? "" : "s") play probes from \(Double(lead) / 1e9) s on, "
                 + "level \(Int((level * 100).rounded()))%")
        return CalibrationStarted(id: plan.id, rooms: plan.rooms.map { registry.rooms[$0]?.settings.name ?? $0 }, keys: keys,
                                  firstInSeconds: Double(plan.probes[0].at - t) / 1e9, recordSeconds: Double(plan.end - t) / 1e9,
                                  level: plan.level)
    }

    public func finishCalibration(_ id: String, recording: [Float], apply: Bool, by: String) async throws(ControlError) -> CalibrationReport {
        guard let plan = calibrations[id] else { throw .notFound("no calibration '\(id)' (one is kept for 10 minutes)") }
        let least = Int(Double(plan.end - plan.probes[0].at) / 1e9 * 48_000)
        guard recording.count >= least else {
            throw .badRequest("the recording is \(Double(recording.count) / 48_000) s long, shorter than the probes' \(Double(least) / 48_000) s: "
                              + "record from before the first probe to after the last")
        }
        guard recording.allSatisfy(\.isFinite) else { throw .badRequest("the recording holds samples that are not numbers") }
        let seeds = plan.probes.map(\.seed)
        let arrivals: [ProbeArrival?]
        do {
            arrivals = try await Blocking.run(on: Blocking.analysis) { () throws(MediaError) in try ProbeFinder.find(seeds: seeds, in: recording) }
        } catch {
            throw ControlError(status: 500, "the recording could not be analysed: \(error)")
        }
        var delays: [String: Double] = [:]
        for probe in plan.probes { delays[probe.room] = registry.rooms[probe.room]?.settings.outputDelayMilliseconds ?? 0 }
        let outcome = plan.solve(arrivals, delays: delays)
        guard outcome.steady else {
            log.warning("calibration \(id): the recording's clock ran \(outcome.clockPPM.fixed(0)) ppm off the house's, "
                        + "its reference probes \(outcome.offLineMs.fixed(3)) ms off their neighbours' line: not used")
            if abs(outcome.clockPPM) > CalibrationPlan.steadyPPM {
                throw .conflict("the recording's clock ran \(Int(outcome.clockPPM.rounded())) ppm off the house's between the first probe and the last: "
                                + "it lost or gained sound on the way (a busy browser or recorder), so its offsets are not true; record again")
            }
            throw .conflict("a probe of the first room arrived \(outcome.offLineMs.fixed(2)) ms from where its neighbours put it: the recording lost or gained "
                            + "sound between them (a busy browser or recorder), or the microphone moved; record again, holding it still")
        }
        calibrationOutcomes[id] = outcome
        calibrationOutcomes = calibrationOutcomes.filter { calibrations[$0.key] != nil }
        return try await remember(outcome, apply: apply, by: by)
    }

    public func applyCalibration(_ id: String, by: String) async throws(ControlError) -> CalibrationReport {
        guard let outcome = calibrationOutcomes[id] else { throw .notFound("no calibration '\(id)' was measured (one is kept for 10 minutes)") }
        return try await remember(outcome, apply: true, by: by)
    }

    /// Keeps what a calibration found in each room it heard (and, with `apply`, sets their
    /// output delays to the proposed ones); tells the house's clients.
    private func remember(_ outcome: CalibrationOutcome, apply: Bool, by: String) async throws(ControlError) -> CalibrationReport {
        let id = outcome.id
        let at = SystemClock.unixSeconds()
        let by = String(by.prefix(16).filter { $0.isLetter || $0.isNumber || $0 == "-" })
        var changed = false
        for room in outcome.rooms where room.heard {
            guard registry.rooms[room.room] != nil, let offset = room.offsetMs else { continue }
            var record = RoomCalibration(at: at, by: by.isEmpty ? "api" : by, offsetMs: offset, applied: apply)
            if !apply, let previous = registry.rooms[room.room]?.settings.calibration, previous.applied, at - previous.at < 600 {
                // A pass right after one that was applied verifies it: what it found is what is left.
                record = previous
                record.residualMs = outcome.spreadMs
            }
            do throws(RoomError) {
                try registry.setCalibration(room.room, record, delay: apply ? room.proposedDelayMs : nil)
                changed = true
            } catch {
                throw ControlError(error)
            }
        }
        let heard = outcome.rooms.filter(\.heard).count
        log.info("calibration \(id): \(heard) of \(outcome.rooms.count) rooms heard, spread \(outcome.spreadMs.map { $0.fixed(3) } ?? "-") ms, "
                 + "offsets \(outcome.rooms.map { "\($0.room) \($0.offsetMs.map { $0.fixed(3) } ?? "-") (\($0.confidence.fixed(0)))" }.joined(separator: ", ")), "
                 + "the recorder's clock \(outcome.clockPPM.fixed(1)) ppm"
                 + (apply ? ", output delays applied" : ""))
        if changed {
            deliverSettings(force: true)
            for view in roomViews() where outcome.rooms.contains(where: { $0.room == view.key }) {
                broadcast(Event(.room(view), at: now.nanoseconds, zone: view.zone ?? ZoneInfo.defaultID))
            }
            try await commit()
        }
        var names: [String: String] = [:]
        for room in outcome.rooms { names[room.room] = registry.rooms[room.room]?.settings.name ?? room.room }
        return CalibrationReport(outcome: outcome, names: names, applied: apply)
    }
}
