/// A follower's side of retransmission: notices packets missing from the stream, and decides
/// when to ask the coordinator for each again (RFC 4585 generic NACK), how many copies of the
/// request to send, and when to give up.
///
/// The stream's packets say when they were sent, so the requester knows the send schedule
/// and the path's recent worst delay (about its 99th percentile): a packet counts as missing
/// as soon as it is overdue by that much, whether or not a later one has come (on a jittery
/// path a later one comes late too), and is asked for then, and again after a round trip,
/// for as long as a retransmission can still arrive before the packet must be decoded (its
/// presentation time minus the output's lead). Nothing is expected of an epoch that has ended
/// (a pause: the coordinator stops sending).
/// A follower that joins mid-stream also asks for the packets sent just before the first it
/// received (they are still on their way to their presentation time, `lead` ahead): it can
/// start playing at once rather than a whole lead later.
/// On a lossy path each request goes out in several copies, so that one lost request (or
/// one lost retransmission) does not lose the packet. Times are coordinator times.
public struct RetransmissionRequester: Sendable {
    public struct Configuration: Sendable {
        /// Missing packets tracked at most: a longer gap is an outage, long past saving. A
        /// follower that joins asks for every packet sent before its first that is still
        /// ahead (stored audio comes up to the coordinator's lookahead ahead: 5 s at most, 250
        /// packets of Opus's 20 ms, 1,250 of a lossless zone's 4 ms).
        public var maximumMissing = 1_280
        /// What resending one packet takes the coordinator (sealing it, sending it), and its
        /// arrival the follower: a request for many waits that much longer for its answers (ns).
        public var resendCost: Int64 = 25_000
        /// A room joining asks at once for what it plays within this; the rest of what is on
        /// its way, eight times faster than real time (ns).
        public var joinUrgent: Int64 = 200_000_000
        /// What a room joining asked for is asked for again no sooner than this (ns).
        public var joinRetry: Int64 = 40_000_000
        /// Added to the path's worst recent delay before a packet counts as missing, and to
        /// each wait for a retransmission.
        public var margin: Int64 = 2_000_000
        /// For how long after a loss the follower is woken the moment the next packet is
        /// overdue (`nextDue`). On a path that has lost nothing for that long an overdue
        /// packet is noticed when the follower wakes anyway (its device's demand, every 20 ms
        /// or less): waking 50 times a second more for packets that always come cost a
        /// follower a fifth of its CPU.
        public var watchAfterLoss: Int64 = 10_000_000_000
        /// The longest silence of the path whose losses tell the latency they need
        /// (`recoveries`): a Wi-Fi dropout; a longer one is an outage (ns).
        public var longestDropout: Int64 = 500_000_000
        public init() {}
    }

    public struct Statistics: Equatable, Sendable {
        /// Packets the network lost (overdue, or a gap in the sequence), requests sent (NACK
        /// packets, counting copies), and packets asked for.
        public var missed = 0
        public var requests = 0
        public var requested = 0
        /// Packets no longer asked for: too late for a retransmission to arrive in time.
        public var abandoned = 0
        /// Packets sent before the first one received, asked for on joining the stream (not
        /// losses: counted apart from `missed` and `abandoned`, but in `requested`).
        public var joining = 0
        public init() {}
    }

    private struct Missing {
        var presentation: CoordinatorTime
        var nextRequest: CoordinatorTime
        /// When it was found missing (a loss from then, unless it turns out only late).
        var since: CoordinatorTime
        var requests = 0
        /// Sent before the first packet this follower received: asked for on joining.
        var joining = false
        /// The request that last asked for it (`asks`), and when.
        var askedIn = 0
        var askedAt: CoordinatorTime?
    }

    public let configuration: Configuration
    private var sequences = Unwrapper(bits: 16)
    private var ssrc: UInt32?
    private var missing: [Int64: Missing] = [:]
    private var highest: (sequence: Int64, presentation: CoordinatorTime, epoch: UInt32?)?
    /// Packets up to this sequence number have come or count as missing.
    private var accounted: Int64?
    /// Epochs the coordinator has ended: it sends nothing more of them.
    private var endedEpochs: [UInt32] = []
    /// Presentation time minus send time: how far ahead the coordinator sends (the last
    /// packet's).
    private var lead: Int64?
    /// The least lead of the last 32 packets: when the next packet is due at the latest. A
    /// live input comes in blocks (10 ms on the bench), so the coordinator sends a lossless
    /// zone's 4 ms packets two or three at once, up to a block late by their schedule: by the
    /// last packet's lead, the rest of a block counted overdue, and a room asked for
    /// 400 kbit/s of packets that were only on their way (4,417 asks in 10 s, 4,240 for
    /// packets not yet sent).
    private var latestLead: Int64?
    private var leads: [Int64] = []
    private var nextLead = 0
    /// The last packets' one-way delays (arrival minus send, on the coordinator's clock).
    private var delays: [Int64] = []
    private var nextDelay = 0
    /// Nanoseconds of stream per packet.
    private var packetDuration: Int64 = 20_000_000
    /// Share of packets the network loses, smoothed over about 250 packets.
    public private(set) var lossRate = 0.0
    /// When the last packet that the network did lose was found missing: one that came back
    /// retransmitted, or was given up (not those asked for on joining, nor one that came
    /// after all, only late). Those still missing count too (`lastLoss`).
    private var lastConfirmedLoss: CoordinatorTime?
    /// How early the network's losses were made good: the lead (presentation time minus
    /// arrival) of each retransmission that answered a loss (the first copy of its answer),
    /// one that came after the packet was given up included. Its room reports the least,
    /// less how far ahead it writes, and the house makes a live zone's latency leave a lost
    /// packet time to be asked for again (`LatencyTuner`): first copies' leads alone said
    /// nothing of it, and on a path of 20 ± 10 ms and 10 % loss a room at the house's 150 ms
    /// made good only 29 of the 164 packets it missed in 30 s. (A loss found too late to be
    /// asked for, or an outage's, says nothing of the latency a loss needs.)
    public private(set) var recoveries = LeadWatch()
    /// When the last packet came (a retransmission or a first copy): a path that has
    /// brought nothing for a while is down, and what is missing is asked for less often
    /// until something comes again (`quietAfter(roundTrip:)`).
    private var lastHeard: CoordinatorTime?
    /// Losses given up while asked for (sequence, presentation time, when): an answer that
    /// comes after still tells how late it was. The last 64.
    private var givenUp: [(sequence: Int64, presentation: CoordinatorTime, at: CoordinatorTime)] = []
    public private(set) var statistics = Statistics()
    /// Requests sent (each `due` that asks for something).
    private var asks = 0
    /// The last request of which an answer came, the place of that answer in it (its
    /// sequence number), and when: the coordinator answers a follower's requests in the
    /// order asked, so a packet asked for on joining whose request came before is refused
    /// or lost, and one whose request came after is still on its way (`awaitingAnswer`).
    private var lastAnswer: (ask: Int, sequence: Int64, at: CoordinatorTime)?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The stream whose packets it tracks.
    public var stream: UInt32? { ssrc }

    /// The path's recent worst delay (the second largest of the last 128), and its smallest.
    public var worstDelay: Int64 {
        guard delays.count >= 2 else { return delays.first ?? 0 }
        var top = (Int64.min, Int64.min)
        for d in delays {
            if d > top.0 { top = (d, top.0) } else if d > top.1 { top.1 = d }
        }
        return top.1
    }

    public var quickestDelay: Int64 { delays.min() ?? 0 }

    /// A packet of stream `ssrc` (and of `epoch`) arrived at `arrival`; `sent` is its send
    /// stamp (none on a retransmission, whose delay says nothing of the path's). `duration`:
    /// how long its codec's packets are, where that is known (the lossless codecs' 4 ms):
    /// until a second packet tells, what a first one joining takes for their length.
    public mutating func arrived(ssrc: UInt32, sequence raw: SequenceNumber, epoch: UInt32? = nil, presentation: CoordinatorTime,
                                 sent: CoordinatorTime?, at arrival: CoordinatorTime, retransmitted: Bool, duration: Int64? = nil) {
        if self.ssrc != ssrc { reset(ssrc: ssrc) }
        if highest == nil, let duration { packetDuration = duration }
        // (Three packets' time first: the path's worst delay is not worked out per packet.)
        if let lastHeard, arrival - lastHeard > 3 * packetDuration, arrival - lastHeard > quietAfter(roundTrip: roundTrip) {
            // The path is back: what is missing is asked for again at once. What was given up
            // while it brought nothing would have been answered a round trip from now, had
            // the latency left the time: that is how late (a dropout's first packets need the
            // most, and only the last ones' answers come; told only by those, the latency grew
            // 25 ms a dropout, each a hole).
            for (k, entry) in missing where !entry.joining && entry.requests > 0 { missing[k]!.nextRequest = min(entry.nextRequest, arrival) }
            // (A longer silence is an outage: no latency the house would take makes it good;
            // and a silence between epochs is a pause, whose end tells nothing of the path.)
            let answered = arrival + roundTrip
            let dropout = arrival - lastHeard <= configuration.longestDropout && epoch == highest?.epoch
            for lost in givenUp where dropout && lost.at > lastHeard {
                recoveries.observe(lead: lost.presentation.nanoseconds - answered.nanoseconds, at: arrival.nanoseconds)
            }
            givenUp.removeAll { $0.at > lastHeard }
        }
        lastHeard = max(lastHeard ?? arrival, arrival)
        let sequence = sequences.unwrap(UInt64(raw.rawValue))
        if let found = missing.removeValue(forKey: sequence) {
            if !retransmitted, !found.joining { statistics.missed -= 1 }  // it was only late
            if retransmitted {
                confirmLoss(found)
                if found.requests > 0, (found.askedIn, sequence) > (lastAnswer.map { ($0.ask, $0.sequence) } ?? (-1, .min)) {
                    lastAnswer = (found.askedIn, sequence, arrival)
                }
            }
            if retransmitted, !found.joining { recoveries.arrived(presentation: presentation.nanoseconds, now: arrival.nanoseconds) }
            if sequence > (highest?.sequence ?? .min) { highest = (sequence, presentation, epoch) }
            return
        }
        guard !retransmitted else {
            if let i = givenUp.firstIndex(where: { $0.sequence == sequence }) {
                recoveries.arrived(presentation: givenUp[i].presentation.nanoseconds, now: arrival.nanoseconds)
                givenUp.remove(at: i)
            }
            return
        }
        if let sent {
            if leads.count < 32 { leads.append(presentation - sent) } else { leads[nextLead] = presentation - sent }
            nextLead = (nextLead + 1) % 32
            lead = presentation - sent
            latestLead = leads.min()
            if delays.count < 128 { delays.append(arrival - sent) } else { delays[nextDelay] = arrival - sent }
            nextDelay = (nextDelay + 1) % 128
        }
        guard let h = highest else {
            highest = (sequence, presentation, epoch)
            accounted = sequence
            if let lead { askForThoseBefore(sequence, presentation: presentation, lead: lead, at: arrival) }
            return
        }
        guard sequence > h.sequence else { return }  // reordered: it was not yet missing
        let gap = sequence - h.sequence - 1
        let duration = (presentation - h.presentation) / (gap + 1)
        if duration >= 2_000_000, duration <= 120_000_000 { packetDuration = duration }  // not across a cut
        // Packets between the last one that came and this one that were not yet counted
        // missing: the network lost them.
        let from = max(h.sequence, accounted ?? h.sequence) + 1
        if from < sequence {
            let wait = worstDelay + configuration.margin
            for k in max(from, sequence - Int64(configuration.maximumMissing))..<sequence {
                let p = presentation - (sequence - k) * packetDuration
                missing[k] = Missing(presentation: p, nextRequest: lead.map { p - $0 + wait } ?? arrival, since: arrival)
            }
            statistics.missed += Int(sequence - from)
            trim()
        }
        for _ in 0..<min(gap, 256) { lossRate += (1 - lossRate) / 256 }
        lossRate -= lossRate / 256
        highest = (sequence, presentation, epoch)
        accounted = max(accounted ?? sequence, sequence)
    }

    /// Joining: the packets sent before `first` whose presentation times are still ahead
    /// (those within `lead` of it): those heard within `joinUrgent` asked for at once, the
    /// rest as the coordinator sent them after a start, eight times faster than real time
    /// (two rooms that moved into a lossless zone together asked for 575 packets each at
    /// once; the second's first ones came after all the first's, too late: 7 concealed).
    /// `due` drops those that can no longer arrive before the output needs them.
    private mutating func askForThoseBefore(_ first: Int64, presentation: CoordinatorTime, lead: Int64, at now: CoordinatorTime) {
        let count = min(Int64(configuration.maximumMissing), lead / packetDuration)
        guard count > 0 else { return }
        for k in (first - count)..<first {
            let p = presentation - (first - k) * packetDuration
            let later = max(0, p - now - configuration.joinUrgent) / 8
            missing[k] = Missing(presentation: p, nextRequest: now + later, since: now, joining: true)
        }
    }

    /// The coordinator ended `epoch` at `end` (a pause, a stop, a cut, a live input whose
    /// writer paused): no more of its packets will come. Those already counted missing
    /// after the last that came, presented from `end` on, were never sent: they are not
    /// asked for, nor counted lost. (The news may come after they were overdue: a source
    /// that ran dry is told of once its next packet is due.)
    public mutating func ended(epoch: UInt32, at end: CoordinatorTime? = nil) {
        if !endedEpochs.contains(epoch) {
            endedEpochs.append(epoch)
            if endedEpochs.count > 16 { endedEpochs.removeFirst() }
        }
        guard let end, let h = highest, h.epoch == epoch else { return }
        for (k, entry) in missing where k > h.sequence && entry.presentation >= end {
            missing.removeValue(forKey: k)
            if !entry.joining { statistics.missed -= 1 }
        }
    }

    /// Counts the packets overdue at `now` as missing, by the send schedule: the next after
    /// the last that came, each the last one's duration later, sent `lead` before its time.
    private mutating func expectOverdue(at now: CoordinatorTime) {
        guard let h = highest, let lead = latestLead, var k = accounted.map({ $0 + 1 }) else { return }
        if let epoch = h.epoch, endedEpochs.contains(epoch) { return }
        let overdue = worstDelay + configuration.margin
        while k - h.sequence <= Int64(configuration.maximumMissing) {
            let p = h.presentation + (k - h.sequence) * packetDuration
            guard p - lead + overdue <= now else { break }
            missing[k] = Missing(presentation: p, nextRequest: now, since: now)
            statistics.missed += 1
            accounted = k
            k += 1
        }
        trim()
    }

    private mutating func trim() {
        if missing.count > configuration.maximumMissing {
            for k in missing.keys.sorted().prefix(missing.count - configuration.maximumMissing) {
                if let entry = missing.removeValue(forKey: k) { confirmLoss(entry) }
            }
        }
    }

    /// A packet the network lost (not one asked for on joining): the watch runs from when it
    /// was found missing.
    private mutating func confirmLoss(_ entry: Missing) {
        guard !entry.joining else { return }
        lastConfirmedLoss = max(lastConfirmedLoss ?? entry.since, entry.since)
    }

    /// When a packet was last found missing that the network lost or may yet have lost:
    /// those still missing, and those lost. A packet that came after all, only later than
    /// the path's recent worst delay (a coordinator or a host that stalled a moment: 1 to 5
    /// times a minute on this project's busy build machine), is no loss and starts no watch;
    /// counted, the watch woke a follower on a sound card up to 50 times a second more for
    /// most of a minute, which cost it 0.16 to 0.28 s of CPU a minute (bench/NOTES.md).
    private var lastLoss: CoordinatorTime? {
        let pending = missing.values.lazy.filter { !$0.joining }.map(\.since).max()
        guard let pending else { return lastConfirmedLoss }
        return max(lastConfirmedLoss ?? pending, pending)
    }

    /// When the next request is due, if any packet is missing, or, on a path that lost
    /// packets lately (`watchAfterLoss`), when the next packet will be overdue.
    public var nextDue: CoordinatorTime? {
        var next = missing.values.map(\.nextRequest).min()
        if let lastLoss, let h = highest, let lead = latestLead, let k = accounted.map({ $0 + 1 }), !(h.epoch.map(endedEpochs.contains) ?? false) {
            let overdue = h.presentation + (k - h.sequence) * packetDuration - lead + worstDelay + configuration.margin
            if overdue - lastLoss <= configuration.watchAfterLoss { next = min(next ?? overdue, overdue) }
        }
        return next
    }

    /// The sequence numbers to ask for at `now`, and in how many copies; `outputLead` is how
    /// far ahead of being heard the output decodes (a packet must arrive before that).
    public mutating func due(at now: CoordinatorTime, outputLead: Int64) -> (sequences: [SequenceNumber], copies: Int) {
        expectOverdue(at: now)
        var asked: [Int64] = []
        let roundTrip = self.roundTrip, quickest = quickestDelay
        for (k, entry) in missing {
            if now + quickest >= entry.presentation - outputLead {
                missing.removeValue(forKey: k)
                if !entry.joining { giveUp(k, entry, at: now) }
                continue
            }
            if passedOver(k, entry), let at = entry.askedAt, now - at >= configuration.joinRetry {
                asked.append(k)
                continue
            }
            guard now >= entry.nextRequest else { continue }
            if let later = awaitingAnswer(k, entry, at: now, outputLead: outputLead) {
                missing[k]!.nextRequest = later
                continue
            }
            if entry.joining, entry.requests == 0 { statistics.joining += 1 }
            asked.append(k)
        }
        guard !asked.isEmpty else { return ([], 0) }
        // Asked again a round trip later, and the time the coordinator takes to seal and send
        // this many. Those asked for on joining, no sooner than `joinRetry` and each time
        // twice as late as the last: a room joining a lossless zone asks for 500, and the
        // coordinator answers every copy of a request, from the room's rate (asked again
        // every 2 ms, one asked 95,521 times for 484 packets; two joining together lost 55
        // packets to refusals). A packet lost on the way is asked for again every round
        // trip: its deadline is near.
        // On a path that has brought nothing for a while (a Wi-Fi dropout), twice as late each
        // time too, until a packet comes: every request and answer is lost there, and each
        // answered copy costs the room's allowance at the coordinator (a room that asked for a
        // 200 ms dropout's packets every round trip had the answers refused once the path was
        // back, and got them too late at any latency).
        let wait = roundTrip + Int64(asked.count) * configuration.resendCost
        let quiet = lastHeard.map { now - $0 > quietAfter(roundTrip: roundTrip) } ?? false
        for k in asked {
            let entry = missing[k]!
            missing[k]!.nextRequest = now + (entry.joining ? max(wait, configuration.joinRetry) << min(entry.requests, 5)
                                                           : quiet ? wait << min(entry.requests, 4) : wait)
            missing[k]!.requests += 1
            missing[k]!.askedIn = asks
            missing[k]!.askedAt = now
        }
        asks += 1
        let copies = lossRate < 0.01 ? 1 : lossRate < 0.03 ? 2 : lossRate < 0.07 ? 3 : 4
        statistics.requested += asked.count
        statistics.requests += copies
        return (asked.sorted().map { SequenceNumber(UInt16(truncatingIfNeeded: $0)) }, copies)
    }

    /// When to look again at what was asked for on joining, if it is better waited for than
    /// asked for again now (nil: ask now): no answer has come to a request after its own, nor
    /// to a later packet of the same request (those say it was refused or lost), and either
    /// the answers to the requests before are still coming (one came within `joinRetry`) or
    /// it is not needed for a while yet (more than `joinUrgent` before the output takes it).
    /// Two rooms that moved into a lossless zone together each asked for 500 packets, and a
    /// busy machine (the project's two cores, everything built for debugging, the rooms'
    /// playout threads at real-time priority) answered them 40 to 600 ms later: each asked
    /// for again every `joinRetry`, the second copies ate the rooms' allowances at the
    /// coordinator, which refused 1,200 to 8,400 requests, and the rooms concealed up to 0.8 s
    /// of their first seconds.
    private func awaitingAnswer(_ sequence: Int64, _ entry: Missing, at now: CoordinatorTime, outputLead: Int64) -> CoordinatorTime? {
        guard entry.joining, entry.requests > 0, !passedOver(sequence, entry) else { return nil }
        // (Asked again, it would only go to the back of the queue. An answer that passes it
        // over is seen when the follower next wakes: for its device, at the latest.)
        if let last = lastAnswer, now - last.at < configuration.joinRetry { return last.at + configuration.joinRetry }
        let urgent = entry.presentation - outputLead - configuration.joinUrgent
        return urgent > now ? urgent : nil
    }

    /// Whether an answer came to a request after the one that last asked for a packet asked
    /// for on joining, or to a later packet of the same request: it was refused, or lost.
    private func passedOver(_ sequence: Int64, _ entry: Missing) -> Bool {
        guard entry.joining, entry.requests > 0, let last = lastAnswer else { return false }
        return (last.ask, last.sequence) > (entry.askedIn, sequence)
    }

    /// How long a path may bring nothing before it counts as down: three packets' time, and
    /// at least a round trip.
    private func quietAfter(roundTrip: Int64) -> Int64 { max(3 * packetDuration, roundTrip) }

    /// A request's round trip on this path, at its recent worst, and the margin.
    private var roundTrip: Int64 { 2 * worstDelay + configuration.margin }

    /// A loss that can no longer be made good in time: if it was asked for, its answer may
    /// still come and tell how late (or, on a path that brought nothing meanwhile, the time
    /// it comes back does).
    private mutating func giveUp(_ sequence: Int64, _ entry: Missing, at now: CoordinatorTime) {
        statistics.abandoned += 1
        confirmLoss(entry)
        guard entry.requests > 0 else { return }
        if givenUp.count == 64 { givenUp.removeFirst() }
        givenUp.append((sequence, entry.presentation, now))
    }

    /// Forgets everything about the stream (a new one began).
    public mutating func reset(ssrc: UInt32? = nil) {
        if ssrc != self.ssrc { packetDuration = 20_000_000 }  // another stream: learnt again
        self.ssrc = ssrc
        sequences.reset()
        missing.removeAll()
        givenUp.removeAll()
        lastHeard = nil
        lastAnswer = nil
        highest = nil
        accounted = nil
    }
}
