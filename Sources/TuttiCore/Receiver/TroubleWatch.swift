/// What a quiet follower says about its playout: nothing while it plays cleanly, and a
/// line for each check period in which something went wrong (packets lost for good,
/// frames concealed, packets late, outages, steps of the position, resyncs, undecodable or
/// unsealed packets), then one line when a period passes clean again. Retransmitted and
/// FEC-recovered packets are the network's trouble mended in time: not trouble heard.
public struct TroubleWatch: Sendable {
    /// The counters a period is judged by.
    public struct Counts: Equatable, Sendable {
        public var lost = 0, concealed = 0, late = 0, outages = 0, steps = 0, resyncs = 0, decodeErrors = 0, unsealed = 0
        /// Times the sound device ran dry while the room played.
        public var holes = 0

        public init(_ s: PlayoutStatistics, unsealed: Int, holes: Int = 0) {
            self.holes = holes
            lost = s.lost
            concealed = s.concealedFrames
            late = s.late
            outages = s.outages
            steps = s.steps
            resyncs = s.resyncs
            decodeErrors = s.decodeErrors
            self.unsealed = unsealed
        }

        public init() {}

        static func - (a: Counts, b: Counts) -> Counts {
            var d = Counts()
            d.lost = a.lost - b.lost
            d.concealed = a.concealed - b.concealed
            d.late = a.late - b.late
            d.outages = a.outages - b.outages
            d.steps = a.steps - b.steps
            d.resyncs = a.resyncs - b.resyncs
            d.decodeErrors = a.decodeErrors - b.decodeErrors
            d.unsealed = a.unsealed - b.unsealed
            d.holes = a.holes - b.holes
            return d
        }

        /// What went wrong, in words; empty when nothing did.
        var words: [String] {
            [(holes, "holes (the sound device ran dry)"), (lost, "lost"), (concealed, "frames concealed"), (late, "late"), (outages, "outages"), (steps, "steps"),
             (resyncs, "resyncs"), (decodeErrors, "undecodable"), (unsealed, "unsealed")]
                .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        }
    }

    public enum Verdict: Equatable, Sendable {
        case quiet
        /// Something went wrong this period: what, in words.
        case trouble(String)
        /// The first clean period after trouble.
        case recovered
    }

    private var last = Counts()
    private var troubled = false

    public init() {}

    /// Judges the period that ends with these counters. `clockSuspect`: the clock's lock is
    /// in doubt (its answers disagree). `settling`: the room started playing in this period,
    /// when steps of the position are how it settles, not trouble.
    public mutating func judge(_ counts: Counts, clockSuspect: Bool, settling: Bool = false) -> Verdict {
        var period = counts - last
        if settling { period.steps = 0 }
        let words = period.words + (clockSuspect ? ["the clock in doubt"] : [])
        last = counts
        if !words.isEmpty {
            troubled = true
            return .trouble(words.joined(separator: ", "))
        }
        if troubled {
            troubled = false
            return .recovered
        }
        return .quiet
    }
}
