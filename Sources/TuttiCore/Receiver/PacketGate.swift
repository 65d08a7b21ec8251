/// The receiver's first stage: whether a stream packet may go on to its segment. It must be
/// of a payload type the room decodes (a `StreamCodec`'s) with a presentation time and a payload, arrive once the clock
/// is locked, and be presented neither absurdly far from now (a forged or broken stamp) nor
/// already in the past. What fails is counted, never thrown.
struct PacketGate {
    enum Verdict: Equatable {
        case pass
        /// Valid RTP, but not the house's stream (payload type, no presentation time, empty).
        case foreign
        case beforeClockLock
        case absurd
        case late
    }

    /// The payload types the room has a decoder for.
    let payloadTypes: Set<UInt8>
    /// A packet presented further than this from now is absurd (ns).
    let absurdHorizon: Int64

    /// Its format: the presentation time of a packet of the house's stream, if it is one.
    func presentation(of packet: RTPPacket) -> CoordinatorTime? {
        guard payloadTypes.contains(packet.payloadType), let presentation = packet.presentationTime, !packet.payload.isEmpty else {
            return nil
        }
        return presentation
    }

    /// Whether `presentation` is within the horizon of `now` (coordinator time).
    func isPlausible(_ presentation: CoordinatorTime, now: CoordinatorTime) -> Bool {
        abs(presentation - now) <= absurdHorizon
    }

    /// Its timing, at coordinator time `now` (nil: the clock is not locked yet).
    func verdict(presentation: CoordinatorTime, now: CoordinatorTime?) -> Verdict {
        guard let now else { return .beforeClockLock }
        if !isPlausible(presentation, now: now) { return .absurd }
        if presentation < now { return .late }
        return .pass
    }

    /// Counts a packet that did not pass.
    static func count(_ verdict: Verdict, in statistics: inout PlayoutStatistics) {
        switch verdict {
        case .pass: break
        case .foreign: statistics.foreign += 1
        case .beforeClockLock: statistics.beforeClockLock += 1
        case .absurd: statistics.absurd += 1
        case .late: statistics.late += 1
        }
    }
}
