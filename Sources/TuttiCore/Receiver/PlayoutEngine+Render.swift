extension PlayoutEngine {
    /// Appends `frames` stereo frames to `out`: the frames that must be heard from local
    /// time `heardAt` on (that is, now plus the device latency).
    public func render(frames: Int, heardAt: LocalTime, into out: inout [Float]) {
        let interval = lastRenderAt.map { Double(heardAt - $0) / 1e9 } ?? 0
        lastRenderAt = heardAt
        guard let estimate = clock.estimate else {
            return silence(frames, into: &out)
        }
        var heard = estimate.coordinatorTime(at: heardAt)
        let first = out.count, blockHeard = heard
        defer { mixProbes(from: first, frames: frames, heard: blockHeard, into: &out) }
        resampler.rendering(drift: estimate.drift)
        var remaining = frames
        var servoInterval = interval
        while remaining > 0 {
            if segments.switchIfOver(at: heard, playing: cursor != nil) { stopPlayback() }
            if cursor == nil {
                let pad = min(remaining, start(at: heard, available: remaining, joining: clockAllowsJoining(estimate, heardAt: heardAt)))
                silence(pad, into: &out)
                remaining -= pad
                heard = heard + AudioFormat.nanoseconds(forFrames: Int64(pad))
                if cursor == nil { continue }
            }
            // Play up to the segment's end (a cut) or the next one's start, whichever is first.
            var n = remaining
            if let limit = segments.boundary {
                n = min(remaining, max(0, Int(AudioFormat.frames(forNanoseconds: limit - heard))))
            }
            if n == 0 {
                stopPlayback()
                segments.current?.jitter.removeAll()
                continue
            }
            let first = out.count
            guard play(n, heard: heard, interval: servoInterval, into: &out) else { continue }
            servoInterval = 0
            fader.apply(from: first, count: n, heard: heard, boundary: segments.boundary, into: &out)
            remaining -= n
            heard = heard + AudioFormat.nanoseconds(forFrames: Int64(n))
        }
        statistics.buffered = segments.buffered
    }

    /// Adds the calibration probes heard in the block that starts at `heard` (over the music
    /// or the silence there), and forgets those over.
    private func mixProbes(from offset: Int, frames: Int, heard: CoordinatorTime, into out: inout [Float]) {
        guard !probes.isEmpty else { return }
        for (probe, at) in probes {
            probe.mix(at: at.nanoseconds, into: &out, offset: offset, frames: frames, heard: heard.nanoseconds)
        }
        let end = heard + AudioFormat.nanoseconds(forFrames: Int64(frames))
        probes.removeAll { $0.at + AudioFormat.nanoseconds(forFrames: Int64(CalibrationProbe.length)) < end }
    }

    /// Renders `frames` frames of the current segment through the decode, monitor and
    /// resampler stages. Returns false (having rendered nothing) when playback had to stop
    /// (an outage, a resync).
    private func play(_ frames: Int, heard: CoordinatorTime, interval: Double, into out: inout [Float]) -> Bool {
        guard var position = cursor, let segment = segments.current, let due = segment.presentation(of: position) else { return false }
        if decoding.dryFrames >= configuration.outageFrames {
            // The stream stopped coming (an outage): stop, faded out already; when packets
            // return, playback starts again exactly where they belong.
            statistics.outages += 1
            stopPlayback(.streamStopped)
            segments.current?.jitter.removeAll()
            return false
        }
        let error: Int64
        switch monitor.assess(heard - due, now: lastRenderAt ?? LocalTime(nanoseconds: 0), statistics: &statistics) {
        case .resync:
            stopPlayback(.resynced)
            return false
        case let .play(step, remaining):
            if let step {
                position = max(Double(queue.start), position + AudioFormat.exactFrames(forNanoseconds: step))
                cursor = position
            }
            error = remaining
        }
        let ratio = resampler.ratio(error: error, interval: interval, settling: monitor.settling)
        statistics.ratio = ratio
        let needed = Int64((position + ratio * Double(frames)).rounded(.up)) + 2
        if queue.end < needed, segments.current != nil {
            decoding.fill(until: needed, from: &segments.current!.jitter, into: &queue, statistics: &statistics)
        }
        resampler.resample(queue, from: position, step: ratio, count: frames, into: &out)
        position += ratio * Double(frames)
        cursor = position
        queue.discard(before: Int64(position) - 4_800)  // keep 100 ms to step back into
        return true
    }

    /// Whether the clock is good enough to join a stream already playing: its bound is
    /// narrow, or its opening burst of exchanges is over (`Configuration.joinWait`).
    private func clockAllowsJoining(_ estimate: ClockEstimate, heardAt: LocalTime) -> Bool {
        if estimate.uncertainty <= configuration.joinUncertainty { return true }
        guard let since = clock.lockedSince else { return true }
        return heardAt - since >= configuration.joinWait
    }

    func silence(_ frames: Int, into out: inout [Float]) {
        out.append(contentsOf: repeatElement(0, count: frames * 2))
    }

    /// Starts playback of the current segment for coordinator time `heard`: returns the
    /// frames of silence to play before its first buffered packet is due. Sets `cursor` only
    /// when playback begins within `available` frames. A stream already playing is joined
    /// only when `joining` allows: a room that joins a little later loses nothing, one that
    /// joins on a rough clock plays off by its error until it has slewed it out. A stream
    /// that starts is not held back, whether its first packet is still to come or was due
    /// a moment before this render (it is buffered, marked as its epoch's first): waiting
    /// would cut off its beginning. (A moment: packets are let in only once the clock is
    /// locked and before they are due, so while the gate holds, that packet was due less
    /// than `joinWait` before.) Nor does a room place its first sound on a device timeline
    /// not yet settled (`deviceSettled`), unless the stream starts with it: the room has just
    /// opened its device, and the device's first report can be tens of microseconds off.
    private func start(at heard: CoordinatorTime, available: Int, joining: Bool) -> Int {
        guard let segment = segments.current, let first = segment.jitter.first, let desired = segment.position(at: heard) else {
            return Int.max
        }
        if let end = segment.end, heard >= end { return Int.max }
        guard deviceSettled || first.startsEpoch else { return Int.max }
        if desired < Double(first.timestamp) {
            let lead = Int((Double(first.timestamp) - desired).rounded(.up))
            if lead < available {
                cursor = desired + Double(lead)
                begin(at: first)
            }
            return lead
        }
        // Joining late: skip to the packet holding `desired`.
        guard joining || first.startsEpoch else { return Int.max }
        guard let last = segment.jitter.last, desired < Double(last.timestamp + Int64(decoding.lastFrameCount)) else {
            segments.current?.jitter.removeAll()
            return Int.max
        }
        var target = first
        for p in segment.jitter.packetsInOrder where Double(p.timestamp) <= desired { target = p }
        cursor = desired
        begin(at: target)
        return 0
    }

    private func begin(at packet: BufferedPacket) {
        segments.current?.jitter.skip(to: packet.sequence)
        decoding.reset()
        queue.reset(start: packet.timestamp)
        resampler.reset()
        fader.started()
        receiver.handle(.started)
    }
}
