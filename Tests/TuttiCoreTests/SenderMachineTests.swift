import Testing
import TuttiCore

/// The sender's machine, driven as its shell drives it, over a manual clock and sources of
/// its own: a stored file read in blocks, a live input whose frames arrive in real time, a
/// remote file that runs dry.
@Suite("The sender's machine")
struct SenderMachineTests {
    /// What the shell would be reading from.
    final class FakeSource {
        enum Kind {
            case stored(frames: Int64)
            /// Frames arrive in real time from `startedAt`, none while the writer pauses.
            case live(startedAt: Int64, pause: Range<Int64>)
            case dry(frames: Int64, dryFrom: Int64, dryUntil: Int64)
            /// A writer that runs ahead: the pipe always holds `pipe` frames.
            case ahead(pipe: Int64)
            /// A writer that paces itself by a clock `ppm` slow (negative: fast), in chunks
            /// of `chunk` frames, from `startedAt`, after `burst` frames at once.
            case paced(startedAt: Int64, ppm: Double, chunk: Int64, burst: Int64 = 0)
        }
        let kind: Kind
        var read: Int64 = 0
        init(_ kind: Kind) { self.kind = kind }

        /// Frames a read gives at `now` (nil: nothing yet).
        func take(now: Int64) -> Int? {
            switch kind {
            case let .stored(frames):
                let n = min(1_024, frames - read)
                read += n
                return Int(n)
            case let .live(startedAt, pause):
                let paused = max(0, min(now, pause.upperBound) - pause.lowerBound)
                if pause.contains(now) { return nil }
                let arrived = (now - startedAt - paused) * 48 / 1_000_000
                let n = min(arrived - read, 4_800)
                guard n > 0 else { return nil }
                read += n
                return Int(n)
            case let .dry(frames, dryFrom, dryUntil):
                if read >= dryFrom, now < dryUntil { return nil }
                let n = min(1_024, frames - read)
                read += n
                return Int(n)
            case let .ahead(pipe):
                let n = min(8_192, pipe)
                read += n
                return Int(n)
            case .paced:
                let n = min(8_192, arrived(by: now) - read)
                guard n > 0 else { return nil }
                read += n
                return Int(n)
            }
        }

        /// A paced writer's frames written by `now`.
        func arrived(by now: Int64) -> Int64 {
            guard case let .paced(startedAt, ppm, chunk, burst) = kind, now >= startedAt else { return 0 }
            let frames = Double(now - startedAt) * 48_000 / 1e9 * (1 - ppm * 1e-6)
            return burst + Int64(frames) / chunk * chunk
        }

        /// When a read that found nothing returns: at a paced writer's next chunk, or after
        /// the read's wait (20 ms).
        func nextRead(after now: Int64) -> Int64 {
            guard case let .paced(startedAt, ppm, chunk, burst) = kind else { return now + 20_000_000 }
            let next = Double(arrived(by: now) - burst + chunk) / (48_000 * (1 - ppm * 1e-6)) * 1e9
            return min(now + 20_000_000, max(now + 1, startedAt + Int64(next.rounded(.up))))
        }
    }

    /// The shell: carries out the machine's steps at manual times, and records what went out.
    struct Shell {
        var machine: SenderMachine
        var now: Int64 = 0
        var sources: [Int: () -> FakeSource] = [:]
        var source: FakeSource?
        var buffered: Int64 = 0
        /// Frames put back for a new epoch, and dropped (skipped) as stale.
        var rewound: Int64 = 0
        var skipped: Int64 = 0
        /// A live input's stretch (ppm), and the fraction of a frame it carries.
        var stretch = 0.0
        var stretchCarry = 0.0
        var sent: [(at: Int64, packet: RTPPacket)] = []
        var news: [PlayerNews] = []
        /// The news given (not asked), and when.
        var newsAt: [(at: Int64, news: PlayerNews)] = []
        var notes: [String] = []
        var opened: [(id: Int, position: MediaFrames)] = []
        /// The house's answer to a realignment.
        var answer: (PlayerNews) -> [TransportAction] = { _ in [] }
        /// How long opening a source anew takes (moving one open already does not).
        var openTakes: Int64 = 0

        init(latency: Int64 = 150_000_000, lookahead: Int64 = 2_000_000_000) {
            var c = SenderMachine.Configuration()
            c.latency = latency
            c.lookahead = lookahead
            c.frameSize = 960
            c.codecDelay = 312
            machine = SenderMachine(configuration: c, ssrc: 5, initialSequence: 100, initialTimestamp: 1_000)
        }

        mutating func take(_ actions: [TransportAction]) { machine.take(actions, now: now) }

        /// Live input 4 from `source`, started at 1 s (heard from 1.15 s), run until `end`.
        mutating func playLive(_ source: FakeSource, until end: Int64) {
            sources[4] = { source }
            now = 1_000_000_000
            take([.start(TimelineSegment(epoch: 1, itemID: 4, position: 0, at: CoordinatorTime(nanoseconds: 1_150_000_000)))])
            run(until: end)
        }

        /// Whether the house was asked to realign (a new epoch).
        var realigned: Bool { news.contains { if case .realigned = $0 { true } else { false } } }

        /// Runs the machine until `end`, jumping to each time it waits for.
        mutating func run(until end: Int64) {
            var steps = 0
            while now < end {
                steps += 1
                precondition(steps < 1_000_000, "the machine does not rest")
                switch machine.next(now: now) {
                case let .wait(until):
                    now = max(now + 1, min(until, end))
                case let .ask(news, _):
                    self.news.append(news)
                    machine.answered(answer(news), now: now)
                case let .send(packet):
                    sent.append((now, packet))
                case .report:
                    break
                case let .news(n):
                    news.append(n)
                    newsAt.append((now, n))
                case let .restart(keep):
                    if !keep { buffered = 0 }
                case let .rewind(frames):
                    buffered += Int64(frames)
                    rewound += Int64(frames)
                case .epoch:
                    break
                case let .open(id, position, reuse):
                    opened.append((id, position))
                    if !reuse { now += openTakes }
                    guard let make = sources[id] else {
                        machine.openFailed(itemID: id, reason: "no such item")
                        continue
                    }
                    let s = make()
                    s.read = position.count
                    source = s
                    let live = switch s.kind {
                    case .live, .ahead, .paced: true
                    default: false
                    }
                    var length: MediaFrames?
                    if case let .stored(frames) = s.kind { length = MediaFrames(frames) }
                    machine.opened(itemID: id, .init(isLive: live, isStored: !live), length: length)
                case .read:
                    let n = source?.take(now: now)
                    let out = Double(n ?? 0) * (1 + stretch * 1e-6) + stretchCarry
                    buffered += Int64(out)
                    stretchCarry = out - out.rounded(.down)
                    // A source with nothing waits for more, 20 ms at most.
                    if n == nil { now = source?.nextRead(after: now) ?? now + 20_000_000 }
                    machine.read(n, buffered: buffered, now: now)
                case let .stretch(ppm):
                    stretch = ppm
                case .finish:
                    if buffered % 960 != 0 { buffered += 960 - buffered % 960 }
                    machine.finished(frames: buffered)
                case .skipFrame:
                    buffered -= 960
                    skipped += 960
                case .encode:
                    buffered -= 960
                    machine.encoded([0xF8])
                case .close:
                    source = nil
                case let .note(text), let .problem(text):
                    notes.append(text)
                }
            }
        }
    }

    static func ms(_ t: Int64) -> Int64 { t * 1_000_000 }

    /// A stored file: sent in a burst and then the lookahead ahead, every packet presented
    /// right after the one before from the epoch's start; at its end the house hears where
    /// its last frame is heard, and with the cut there the last frames go out padded and the
    /// sender rests.
    @Test func aStoredFileGoesAheadAndEndsWhereItsFramesDo() {
        var shell = Shell()
        shell.sources[1] = { FakeSource(.stored(frames: 48_000 * 5 + 500)) }
        let start = CoordinatorTime(nanoseconds: Self.ms(1_200))
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 3, itemID: 1, position: 0, at: start))])
        shell.run(until: Self.ms(3_000))
        let packets = shell.sent.map(\.packet)
        #expect(packets.first?.presentationTime == start - AudioFormat.nanoseconds(forFrames: 312))
        #expect(packets.allSatisfy { $0.epoch == 3 })
        for (a, b) in zip(packets, packets.dropFirst()) {
            #expect(b.presentationTime! - a.presentationTime! == 20_000_000)
            #expect(b.sequenceNumber == a.sequenceNumber.advanced(by: 1))
        }
        // By 3 s, everything heard before 5 s has gone (the lookahead), not much more.
        let last = packets.last!.presentationTime!.nanoseconds
        #expect((Self.ms(4_950)...Self.ms(5_100)).contains(last), "last sent is heard at \(last)")
        #expect(shell.news.first == .opened(itemID: 1, length: 48_000 * 5 + 500))
        // The end: 5 s and 500 frames after the start.
        shell.run(until: Self.ms(5_000))
        let end = start + AudioFormat.nanoseconds(forFrames: 48_000 * 5 + 500)
        #expect(shell.news.contains(.ended(itemID: 1, at: end)))
        // The house cuts there (nothing follows): the frames left go out, padded, and no more.
        shell.take([.cut(epoch: 3, at: end)])
        shell.run(until: Self.ms(8_000))
        let heard = shell.sent.map { $0.packet.presentationTime! }
        #expect(heard.last! < end && heard.last! + 20_000_000 >= end - AudioFormat.nanoseconds(forFrames: 312))
        // Then it rests: nothing to read, nothing to send.
        var rest = false
        if case .wait = shell.machine.next(now: Self.ms(8_000)) { rest = true }
        #expect(rest)
        #expect(shell.sent.allSatisfy { $0.at <= $0.packet.presentationTime!.nanoseconds - 150_000_000 || $0.at <= Self.ms(1_000) + 250_000_000 })
    }

    /// A seek starts a new epoch at once: nothing of the old one goes after it, the source
    /// is opened at the position, and packets of the new epoch follow from its start.
    @Test func aNewEpochReplacesTheOldAtOnce() {
        var shell = Shell()
        shell.sources[1] = { FakeSource(.stored(frames: 48_000 * 60)) }
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 1, itemID: 1, position: 0, at: CoordinatorTime(nanoseconds: Self.ms(1_200))))])
        shell.run(until: Self.ms(2_000))
        let before = shell.sent.count
        let at = CoordinatorTime(nanoseconds: Self.ms(2_100))
        shell.take([.cut(epoch: 1, at: at), .start(TimelineSegment(epoch: 2, itemID: 1, position: 48_000 * 30, at: at))])
        shell.run(until: Self.ms(2_050))
        #expect(shell.opened.last! == (1, 48_000 * 30))
        let after = shell.sent[before...].map(\.packet)
        #expect(after.allSatisfy { $0.epoch == 2 })
        #expect(after.first?.presentationTime == at - AudioFormat.nanoseconds(forFrames: 312))
    }

    /// A live input's frames are heard `latency` after they arrived, never sent further
    /// ahead; when its writer pauses and comes back the input has parted from the timeline,
    /// and the house is asked: its new epoch goes on with the frames the input holds, placed
    /// by their arrival again.
    @Test func aLiveInputIsPlacedByArrivalAndRealignedByTheHouse() {
        var shell = Shell()
        shell.sources[4] = { FakeSource(.live(startedAt: Self.ms(1_000), pause: Self.ms(2_000)..<Self.ms(2_500))) }
        shell.answer = { news in
            guard case let .realigned(id, at, nil) = news else { return [] }
            return [.cut(epoch: 1, at: at), .start(TimelineSegment(epoch: 2, itemID: id, position: 0, at: at))]
        }
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 1, itemID: 4, position: 0, at: CoordinatorTime(nanoseconds: Self.ms(1_150))))])
        shell.run(until: Self.ms(4_000))
        let packets = shell.sent.map(\.packet)
        #expect(packets.count >= 120, "2.5 s of input in 20 ms packets: \(packets.count)")
        for (at, p) in shell.sent {
            let lead = p.presentationTime!.nanoseconds - at
            #expect(lead <= 150_000_000 + 1, "sent \(lead) ns ahead")
            #expect(lead >= 75_000_000 - 20_000_000, "sent only \(lead) ns ahead")
        }
        let realigned = shell.news.compactMap { n -> CoordinatorTime? in if case let .realigned(4, at, nil) = n { return at } else { return nil } }
        #expect(realigned.count == 1)
        // The writer came back at 2.5 s: its frames are heard from about 2.65 s, in epoch 2.
        if let at = realigned.first { #expect(abs(at.nanoseconds - Self.ms(2_650)) < 25_000_000, "realigned at \(at)") }
        let second = packets.filter { $0.epoch == 2 }
        #expect(second.count > 60)
        #expect(packets.filter { $0.epoch == 1 }.allSatisfy { $0.presentationTime!.nanoseconds < Self.ms(2_200) })
        // Once a frame that came would be too late (its writer paused), the rooms heard where
        // epoch 1's audio ends (after its last packet), before they needed it: they fade out
        // there rather than waiting for packets that never come.
        let ends = shell.news.compactMap { n -> CoordinatorTime? in if case let .ranDry(4, 1, at) = n { return at } else { return nil } }
        #expect(ends.count == 1)
        if let end = ends.first, let last = packets.last(where: { $0.epoch == 1 })?.presentationTime {
            #expect(end == last + 20_000_000)
        }
        let told = shell.newsAt.first { if case .ranDry = $0.news { true } else { false } }?.at
        if let told, let end = ends.first { #expect(end.nanoseconds - told >= 40_000_000, "told \((end.nanoseconds - told) / 1_000_000) ms ahead") }
        // It holds what the source gave and it did not send: under a packet's worth and a chunk.
        #expect(shell.machine.buffered < 4_800 + 960)
    }

    /// The packets of one epoch follow each other without a gap: each presented 20 ms after
    /// the one before, its sequence number the next.
    static func continuous(_ packets: [RTPPacket]) -> Bool {
        zip(packets, packets.dropFirst()).allSatisfy { a, b in
            b.epoch == a.epoch && b.presentationTime! - a.presentationTime! == 20_000_000
                && b.sequenceNumber == a.sequenceNumber.advanced(by: 1)
        }
    }

    /// A writer that runs ahead (`cat`, `ffmpeg` without `-re`, librespot): the pipe is
    /// always full. It is read no faster than the stream goes, in one epoch with no gap, and
    /// sent as far ahead as stored audio (the lookahead, after a burst), so that a room rides
    /// out a network that holds its packets; nothing more is read than what is sent and a
    /// read's worth. Paused and played again, nothing it gave is lost: what went out past
    /// the pause's cut goes again.
    @Test func aWriterThatRunsAheadIsReadAtTheStreamsRateAndSentAhead() {
        var shell = Shell()
        let pipe = FakeSource(.ahead(pipe: 16_384))
        shell.playLive(pipe, until: Self.ms(61_000))
        let packets = shell.sent.map(\.packet)
        #expect(Self.continuous(packets))
        // 60 s of audio, and the lookahead's 2 s beyond.
        #expect(abs(packets.count - 3_100) <= 10, "\(packets.count) packets in 60 s")
        #expect(!shell.realigned, "\(shell.news)")
        let leads = shell.sent.suffix(2_000).map { $0.packet.presentationTime!.nanoseconds - $0.at }
        #expect(leads.allSatisfy { $0 == 2_000_000_000 }, "sent \(leads.min()!) to \(leads.max()!) ns ahead")
        #expect(pipe.read - Int64(packets.count) * 960 - shell.skipped <= 8_192 + 960, "read \(pipe.read) frames for \(packets.count) packets")
        #expect(shell.skipped < 7_200, "\(shell.skipped) frames dropped at the start")
        #expect(shell.notes.contains { $0.contains("runs ahead") }, "\(shell.notes)")

        // Paused: the epoch is cut 200 ms on; played again 2 s later.
        shell.answer = { _ in [] }
        let cut = CoordinatorTime(nanoseconds: Self.ms(61_200))
        shell.take([.cut(epoch: 1, at: cut)])
        shell.run(until: Self.ms(63_000))
        let heardBefore = shell.sent.filter { $0.packet.presentationTime! < cut }.count
        let before = shell.sent.count
        let resume = CoordinatorTime(nanoseconds: Self.ms(63_150))
        shell.take([.start(TimelineSegment(epoch: 2, itemID: 4, position: 0, at: resume))])
        shell.run(until: Self.ms(73_000))
        let second = shell.sent[before...].map(\.packet)
        #expect(second.first?.presentationTime == resume - AudioFormat.nanoseconds(forFrames: 312))
        #expect(Self.continuous(second))
        // Every frame read (but those dropped at the start, and those still held) is heard
        // once: before the cut, or in the new epoch.
        #expect(shell.rewound >= 48_000 * 17 / 10, "put back \(shell.rewound) frames")
        let heard = Int64(heardBefore + second.count) * 960
        #expect(heard == pipe.read - shell.skipped - shell.buffered,
                "heard \(heard) frames of \(pipe.read - shell.skipped - shell.buffered) read")
    }

    /// A writer that paces itself by a clock 300 ppm slow or fast, in chunks of 352 frames
    /// (shairport-sync) or 4,096 (a player's period), plays ten minutes in one epoch with no
    /// gap: the input is stretched to the house's clock, and every packet goes between about
    /// half the latency (the first of a block, placed so) and the latency before it is heard.
    @Test(arguments: [(300.0, 352 as Int64), (-300, 352), (300, 4_096), (-300, 4_096)])
    func aPacedWriterOffTheHousesClockPlaysOnInOneEpoch(ppm: Double, chunk: Int64) {
        var shell = Shell()
        shell.playLive(FakeSource(.paced(startedAt: Self.ms(1_000), ppm: ppm, chunk: chunk)), until: Self.ms(601_000))
        let packets = shell.sent.map(\.packet)
        #expect(Self.continuous(packets))
        #expect(abs(packets.count - 30_000) <= 20, "\(packets.count) packets in 600 s: \(shell.notes.prefix(5))")
        #expect(!shell.realigned, "\(shell.notes)")
        let leads = shell.sent.map { $0.packet.presentationTime!.nanoseconds - $0.at }
        #expect(leads.min()! >= 60_000_000 && leads.max()! <= 150_000_000, "sent \(leads.min()! / 1_000) to \(leads.max()! / 1_000) µs ahead")
        #expect(abs(shell.stretch - ppm) < 40, "stretched \(shell.stretch) ppm")
    }

    /// The house sets a paced writer's latency from 150 to 350 ms and back: it grows at 2 %
    /// (the input stretched by as much) and shrinks at 0.5 %, in one epoch, every frame sent
    /// as far ahead as the latency in force, and the house hears where it stands.
    @Test func aPacedWritersLatencyGrowsAndShrinksWithoutAGap() {
        var shell = Shell()
        shell.playLive(FakeSource(.paced(startedAt: Self.ms(1_000), ppm: 0, chunk: 352)), until: Self.ms(10_000))
        // How far ahead a packet goes: the latency, less the packet's own 20 ms and a chunk
        // of the writer's that its last frame waits for.
        let lead = { (shell: Shell) in shell.sent.suffix(50).map { $0.packet.presentationTime!.nanoseconds - $0.at }.max()! }
        let before = lead(shell)
        shell.machine.setLatency(Self.ms(350))
        shell.run(until: Self.ms(14_000))
        // Four seconds at 2 %: 80 ms more.
        #expect(abs(shell.machine.latency - Self.ms(230)) < Self.ms(2), "\(shell.machine.latency)")
        #expect(abs(shell.stretch - 20_000) < 100, "stretched \(shell.stretch) ppm while growing")
        shell.run(until: Self.ms(30_000))
        #expect(shell.machine.latency == Self.ms(350) && abs(shell.stretch) < 100, "\(shell.machine.latency), \(shell.stretch) ppm")
        #expect(abs(lead(shell) - before - Self.ms(200)) < Self.ms(2), "sent \(lead(shell) / 1_000) µs ahead, \(before / 1_000) µs before")
        let told = shell.news.compactMap { if case let .latency(l) = $0 { l } else { nil } }
        #expect(told.count >= 10 && told.last == Self.ms(350) && told == told.sorted(), "\(told)")

        shell.machine.setLatency(Self.ms(150))
        shell.run(until: Self.ms(80_000))
        #expect(shell.machine.latency == Self.ms(150), "\(shell.machine.latency)")
        #expect(abs(lead(shell) - before) < Self.ms(2), "sent \(lead(shell) / 1_000) µs ahead, \(before / 1_000) µs before")
        #expect(Self.continuous(shell.sent.map(\.packet)))
        #expect(!shell.realigned && shell.skipped == 0, "\(shell.notes)")
        #expect(abs(shell.sent.count - 3_950) <= 60, "\(shell.sent.count) packets in 79 s")
    }

    /// A writer that paces itself but gives what it holds at once when it starts. A short
    /// burst (100 ms, a player's prefill; what would be heard before the epoch starts is
    /// dropped) is taken into the placing: the writer is followed as the writer in real time
    /// it is, never sent further ahead than the latency. A long
    /// one (1.5 s, written while nobody read) is more than a writer in real time gives: all
    /// of it but the first latency's worth plays, in one epoch, as a writer that runs ahead
    /// (it holds that much more than the timeline needs, for good).
    @Test(arguments: [(4_800 as Int64, true), (72_000, false)])
    func aPacedWriterThatStartsWithABurst(burst: Int64, paced: Bool) {
        var shell = Shell()
        let pipe = FakeSource(.paced(startedAt: Self.ms(1_000), ppm: 0, chunk: 352, burst: burst))
        shell.playLive(pipe, until: Self.ms(61_000))
        let packets = shell.sent.map(\.packet)
        #expect(Self.continuous(packets))
        #expect(!shell.realigned, "\(shell.notes)")
        let leads = shell.sent.map { $0.packet.presentationTime!.nanoseconds - $0.at }
        if paced {
            #expect(leads.max()! <= 150_000_000, "sent \(leads.max()! / 1_000_000) ms ahead")
            #expect(shell.machine.liveWriter == .paced && shell.skipped <= burst, "\(shell.skipped) frames dropped")
        } else {
            #expect(shell.machine.liveWriter == .ahead && shell.skipped <= 8 * 960, "\(shell.skipped) frames dropped")
            // All it gave but what was dropped at first is sent, or held.
            #expect(Int64(packets.count) * 960 + shell.buffered + shell.skipped == pipe.read)
        }
    }

    /// A remote file that runs dry: once its next packet is due the house hears where the
    /// epoch's audio ends; when frames come again, too late, the house is asked to go on
    /// from the frame reached, `latency` from then.
    @Test func aSourceThatRunsDryEndsItsAudioAndGoesOnInANewEpoch() {
        var shell = Shell(lookahead: 150_000_000)
        shell.sources[2] = { FakeSource(.dry(frames: 48_000 * 60, dryFrom: 48_000 * 2, dryUntil: Self.ms(4_000))) }
        shell.answer = { news in
            guard case let .realigned(id, at, position) = news else { return [] }
            return [.cut(epoch: 1, at: at), .start(TimelineSegment(epoch: 2, itemID: id, position: position ?? 0, at: at))]
        }
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 1, itemID: 2, position: 0, at: CoordinatorTime(nanoseconds: Self.ms(1_200))))])
        shell.run(until: Self.ms(5_000))
        let dryAt = shell.news.compactMap { n -> CoordinatorTime? in if case let .ranDry(2, 1, at) = n { return at } else { return nil } }
        #expect(dryAt.count == 1)
        // Two seconds of audio (less the frames still held) were heard before it ran dry.
        if let end = dryAt.first { #expect(abs(end.nanoseconds - Self.ms(3_200)) < 30_000_000, "ran dry at \(end)") }
        let realigned = shell.news.compactMap { n -> (CoordinatorTime, MediaFrames?)? in
            if case let .realigned(2, at, position) = n { return (at, position) } else { return nil }
        }
        #expect(realigned.count == 1)
        if let (at, position) = realigned.first {
            #expect((Self.ms(4_150)...Self.ms(4_175)).contains(at.nanoseconds), "goes on at \(at)")
            #expect(position.map { abs($0.count - 48_000 * 2) <= 1_024 } == true, "goes on from \(String(describing: position))")
        }
        #expect(shell.sent.last?.packet.epoch == 2)
    }

    /// A start whose source is slow to open (40 ms, against a command's lead of 85 ms): its
    /// first packet would reach the rooms after they needed it, so the house is asked to
    /// start it again, `latency` from then, from the same position, and the source already
    /// open is moved there. Nothing of the first placing goes out; every packet of the
    /// second goes with the lead the schedule gives it, and its first carries the marker.
    /// A source that opens in time is not placed again.
    @Test func aStartWhoseSourceOpensTooLateIsPlacedAgain() {
        var shell = Shell()
        shell.sources[1] = { FakeSource(.stored(frames: 48_000 * 10)) }
        shell.openTakes = Self.ms(40)
        shell.answer = { news in
            guard case let .realigned(id, at, position) = news else { return [] }
            return [.cut(epoch: 1, at: at), .start(TimelineSegment(epoch: 2, itemID: id, position: position ?? -1, at: at))]
        }
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 1, itemID: 1, position: 48_000 * 3, at: CoordinatorTime(nanoseconds: Self.ms(1_085))))])
        shell.run(until: Self.ms(1_500))
        #expect(shell.news.contains(.realigned(itemID: 1, at: CoordinatorTime(nanoseconds: Self.ms(1_040) + 150_000_000), position: 48_000 * 3)))
        #expect(shell.opened.map(\.position) == [48_000 * 3, 48_000 * 3], "opened anew, then moved back to the start")
        #expect(shell.notes.contains { $0.contains("40 ms after the start") }, "\(shell.notes)")
        let packets = shell.sent.map(\.packet)
        #expect(packets.allSatisfy { $0.epoch == 2 })
        #expect(packets.first?.presentationTime == CoordinatorTime(nanoseconds: Self.ms(1_190)) - AudioFormat.nanoseconds(forFrames: 312))
        #expect(packets.first?.marker == true && packets.dropFirst().allSatisfy { !$0.marker })
        #expect(shell.sent.first.map { $0.packet.presentationTime!.nanoseconds - $0.at } == 150_000_000 - AudioFormat.nanoseconds(forFrames: 312))

        // Opened in 5 ms: it starts where the command placed it.
        var quick = Shell()
        quick.sources[1] = { FakeSource(.stored(frames: 48_000 * 10)) }
        quick.openTakes = Self.ms(5)
        quick.now = Self.ms(1_000)
        quick.take([.start(TimelineSegment(epoch: 1, itemID: 1, position: 0, at: CoordinatorTime(nanoseconds: Self.ms(1_085))))])
        quick.run(until: Self.ms(1_500))
        #expect(!quick.realigned)
        #expect(quick.sent.first?.packet.presentationTime == CoordinatorTime(nanoseconds: Self.ms(1_085)) - AudioFormat.nanoseconds(forFrames: 312))
    }

    /// An item that cannot be opened fails (the house goes on); a source that fails at its
    /// first read fails too; one that fails later ends where its frames did.
    @Test func itemsThatCannotBeOpenedFail() {
        var shell = Shell()
        shell.now = Self.ms(1_000)
        shell.take([.start(TimelineSegment(epoch: 1, itemID: 9, position: 0, at: CoordinatorTime(nanoseconds: Self.ms(1_200))))])
        shell.run(until: Self.ms(1_300))
        #expect(shell.news == [.failed(itemID: 9, reason: "no such item")])
        #expect(shell.sent.isEmpty)

        var machine = SenderMachine(configuration: .init(), ssrc: 1, initialSequence: 0, initialTimestamp: 0)
        machine.take([.start(TimelineSegment(epoch: 1, itemID: 3, position: 0, at: CoordinatorTime(nanoseconds: 0)))], now: 0)
        machine.opened(itemID: 3, .init(isLive: false, isStored: true), length: nil)
        machine.readFailed(reason: "broken", atOnce: true)
        var news: [PlayerNews] = []
        for _ in 0..<10 { if case let .news(n) = machine.next(now: 0) { news.append(n) } }
        #expect(news.contains(.failed(itemID: 3, reason: "broken")))
        #expect(machine.source == nil)
    }
}
