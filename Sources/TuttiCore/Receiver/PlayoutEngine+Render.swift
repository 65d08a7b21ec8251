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
        if let last = lastHeard {
            let measured = Double(heard - last.time) / Double(AudioFormat.nanoseconds(forFrames: Int64(last.frames)))
            if abs(measured - 1) < 0.001 { deviceRatio += (measured - deviceRatio) * 0.05 }  // jumps are not rates
        } else {
            // Until successive renders measure it, the rate the models give: the clock's drift
            // times the device's rate (known once the device's reports span a quarter second,
            // or remembered from an earlier run). From 1.0, a restarted follower on a device
            // 200 ppm off lagged it by some 40 µs before the smoothing caught up.
            deviceRatio = (1 + estimate.drift) * deviceRate
        }
        lastHeard = (heard, frames)
        var remaining = frames
        var servoInterval = interval
        while remaining > 0 {
            if upcoming != nil, currentIsOver(at: heard) {
                current = upcoming
                upcoming = nil
                stopPlayback()
            }
            if cursor == nil {
                let pad = min(remaining, start(at: heard, available: remaining))
                silence(pad, into: &out)
                remaining -= pad
                heard = heard + AudioFormat.nanoseconds(forFrames: Int64(pad))
                if cursor == nil { continue }
            }
            // Play up to the segment's end (a cut) or the next one's start, whichever is first.
            var n = remaining
            if let limit = boundary() {
                n = min(remaining, max(0, Int(AudioFormat.frames(forNanoseconds: limit - heard))))
            }
            if n == 0 {
                stopPlayback()
                current?.jitter.removeAll()
                continue
            }
            let first = out.count
            guard play(n, heard: heard, interval: servoInterval, into: &out) else { continue }
            servoInterval = 0
            applyFades(from: first, frames: n, heard: heard, into: &out)
            remaining -= n
            heard = heard + AudioFormat.nanoseconds(forFrames: Int64(n))
        }
        statistics.buffered = (current?.jitter.count ?? 0) + (upcoming?.jitter.count ?? 0)
    }

    /// Whether the current segment's time is up at `heard`: its end has come, or the next
    /// segment's start.
    private func currentIsOver(at heard: CoordinatorTime) -> Bool {
        guard let current else { return true }
        if let end = current.end, heard >= end { return true }
        if let next = upcoming?.start, heard >= next { return true }
        return cursor == nil && current.jitter.isEmpty
    }

    /// Where the current segment's sound must stop.
    private func boundary() -> CoordinatorTime? {
        switch (current?.end, upcoming?.start) {
        case let (end?, next?): min(end, next)
        case let (end?, nil): end
        case let (nil, next?): next
        case (nil, nil): nil
        }
    }

    /// Renders `frames` frames of the current segment. Returns false (having rendered
    /// nothing) when playback had to stop for a hard resync.
    private func play(_ frames: Int, heard: CoordinatorTime, interval: Double, into out: inout [Float]) -> Bool {
        guard var position = cursor, let segment = current, let due = segment.presentation(of: position) else { return false }
        if dryFrames >= configuration.outageFrames {
            // The stream stopped coming (an outage): stop, faded out already; when packets
            // return, playback starts again exactly where they belong.
            statistics.outages += 1
            stopPlayback()
            current?.jitter.removeAll()
            return false
        }
        let raw = heard - due
        if abs(errorFilter.add(raw)) > configuration.hardResyncThreshold, errorFilter.count >= 3 {
            statistics.resyncs += 1
            stopPlayback()
            return false
        }
        var error = errorFilter.median
        let now = lastRenderAt ?? LocalTime(nanoseconds: 0)
        if settlingUntil == nil { settlingUntil = now + configuration.settlingTime }
        let settling = settlingUntil.map { now < $0 } ?? false
        let threshold = settling ? configuration.stepThreshold : configuration.lateStepThreshold
        if errorFilter.count >= 3, abs(error) > threshold {
            // Step: skip ahead when late, repeat a little when early. The filter's history
            // described the old position, so it starts again.
            position = max(Double(queue.start), position + AudioFormat.exactFrames(forNanoseconds: error))
            cursor = position
            statistics.steps += 1
            errorFilter.reset()
            error = 0
        }
        // A slew: the error went beyond a sample and the resampler is bringing it back.
        if !settling, !slewing, abs(error) > configuration.slewThreshold {
            slewing = true
            statistics.slews += 1
        } else if slewing, abs(error) < configuration.slewThreshold / 2 {
            slewing = false
        }
        statistics.lastError = error
        // Feed forward how fast coordinator time passes per device frame (clock drift and
        // the device's rate); the servo corrects what remains.
        let ratio = deviceRatio * servo.update(error: Double(error) / 1e9, interval: min(interval, 0.1))
        statistics.ratio = ratio
        let needed = Int64((position + ratio * Double(frames)).rounded(.up)) + 2
        fill(until: needed)
        queue.interpolate(from: position, step: ratio, count: frames, into: &out)
        position += ratio * Double(frames)
        cursor = position
        queue.discard(before: Int64(position) - 4_800)  // keep 100 ms to step back into
        return true
    }

    /// Fades in after a start; fades out before the segment's end.
    private func applyFades(from first: Int, frames: Int, heard: CoordinatorTime, into out: inout [Float]) {
        let length = Float(configuration.fadeFrames)
        if fadeIn > 0 {
            for i in 0..<min(fadeIn, frames) {
                let gain = Float(configuration.fadeFrames - fadeIn + i) / length
                out[first + 2 * i] *= gain
                out[first + 2 * i + 1] *= gain
            }
            fadeIn = max(0, fadeIn - frames)
        }
        guard let limit = boundary() else { return }
        let left = AudioFormat.frames(forNanoseconds: limit - heard)  // frames from the first one to the end
        guard left - Int64(frames) < Int64(configuration.fadeFrames) else { return }
        for i in 0..<frames {
            let gain = min(1, max(0, Float(left - Int64(i)) / length))
            out[first + 2 * i] *= gain
            out[first + 2 * i + 1] *= gain
        }
    }

    func silence(_ frames: Int, into out: inout [Float]) {
        out.append(contentsOf: repeatElement(0, count: frames * 2))
    }

    /// Starts playback of the current segment for coordinator time `heard`: returns the
    /// frames of silence to play before its first buffered packet is due. Sets `cursor` only
    /// when playback begins within `available` frames.
    private func start(at heard: CoordinatorTime, available: Int) -> Int {
        guard let segment = current, let first = segment.jitter.first, let desired = segment.position(at: heard) else {
            return Int.max
        }
        if let end = segment.end, heard >= end { return Int.max }
        if desired < Double(first.timestamp) {
            let lead = Int((Double(first.timestamp) - desired).rounded(.up))
            if lead < available {
                cursor = desired + Double(lead)
                begin(at: first)
            }
            return lead
        }
        // Joining late: skip to the packet holding `desired`.
        guard let last = segment.jitter.last, desired < Double(last.timestamp + Int64(lastFrameCount)) else {
            current?.jitter.removeAll()
            return Int.max
        }
        var target = first
        for p in segment.jitter.packetsInOrder where Double(p.timestamp) <= desired { target = p }
        cursor = desired
        begin(at: target)
        return 0
    }

    private func begin(at packet: BufferedPacket) {
        current?.jitter.skip(to: packet.sequence)
        decoder.reset()
        queue.reset(start: packet.timestamp)
        servo.reset()
        concealedInARow = 0
        fadeIn = configuration.fadeFrames
    }

    /// Decodes until the sample queue reaches `timestamp`.
    private func fill(until timestamp: Int64) {
        while queue.end < timestamp {
            switch current?.jitter.pop() ?? .empty(sequence: nil) {
            case let .packet(p):
                if p.timestamp > queue.end {  // a gap the jitter buffer could not see
                    conceal(Int(min(p.timestamp - queue.end, Int64(configuration.maximumConcealment))))
                }
                let from = queue.end
                decodePacket(p)
                if dryFrames > 0 { queue.fadeIn(from: from) }  // back after a faded-out gap
                dryFrames = 0
            case let .missing(_, following):
                dryFrames = 0
                statistics.lost += 1
                if let following, recoverFEC(following) { continue }
                conceal(lastFrameCount)
            case .empty:
                // Nothing buffered at all: the stream has stopped coming. The first missing
                // frame is concealed and faded out; after that, silence, until playback stops.
                if dryFrames == 0 {
                    let from = queue.end
                    conceal(lastFrameCount)
                    queue.fadeOut(from: from)
                } else {
                    queue.appendSilence(frames: lastFrameCount)
                }
                dryFrames += lastFrameCount
            }
        }
    }

    /// Decodes a packet into its slot of the stream: from its timestamp to the next packet's.
    /// A frame that decodes longer (one packet may carry 120 ms) is cut there and counted as
    /// malformed: kept whole, it pushed everything after it later (a forged 46-byte packet
    /// left a room 101.6 ms behind while it measured no error at all).
    private func decodePacket(_ p: BufferedPacket) {
        if queue.end > p.timestamp, p.timestamp >= queue.start { queue.truncate(from: p.timestamp) }
        do {
            let from = queue.end
            var n = try queue.append { try decoder.decode(p.payload, into: &$0) }
            if let next = current?.jitter.packet(p.sequence + 1), next.timestamp > p.timestamp, n > Int(next.timestamp - p.timestamp) {
                n = Int(next.timestamp - p.timestamp)
                queue.truncate(from: from + Int64(n))
                statistics.malformed += 1
            }
            if n > 0 { lastFrameCount = n }
            concealedInARow = 0
        } catch {
            statistics.decodeErrors += 1
            conceal(lastFrameCount)
        }
    }

    private func recoverFEC(_ following: BufferedPacket) -> Bool {
        let frames = lastFrameCount
        let n = (try? queue.append { try decoder.decodeFEC(from: following.payload, frames: frames, into: &$0) }) ?? 0
        if n > 0 {
            statistics.recoveredByFEC += 1
            concealedInARow = 0
            return true
        }
        return false
    }

    private func conceal(_ frames: Int) {
        if concealedInARow < configuration.maximumConcealment,
           let n = try? queue.append({ try decoder.conceal(frames: frames, into: &$0) }), n > 0 {
            statistics.concealedFrames += n
            concealedInARow += n
        } else {
            queue.appendSilence(frames: frames)
            statistics.silenceFrames += frames
        }
    }
}
