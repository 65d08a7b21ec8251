import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiTesting

extension IntegrationTests {
    /// The music a house owns, end to end: a folder of every format queued from the API,
    /// played in order, gaplessly, in sync in two rooms, with its tags, art and lyrics shown.
    @Suite("Every format: a folder plays gaplessly in every room", .serialized, .timeLimit(.minutes(2)))
    struct MediaTests {
        let control = ControlTests()

        /// A 441 Hz tone cut at odd frame counts into one track of each format (48 kHz: Opus
        /// is), tagged; art in three of them, an .lrc beside the FLAC, timed lyrics inside
        /// the Vorbis; and among them a text file named `.flac`, which fails with what it is
        /// while the queue moves on without a seam. The rooms play one unbroken tone: a fit of one sine over the whole run
        /// leaves nothing in any 10 ms window at the joins (a frame too many or too few shifts
        /// the phase of all that follows; a click or a gap shows in its window).
        @Test func aFolderOfEveryFormatPlaysInOrderGaplesslyWithItsTagsArtAndLyrics() throws {
            let h = try Harness("formats")
            let album = h.path("album")
            try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
            // The first track long enough that every join comes after the rooms have settled
            // (a room slews for its first second after it joins: issue 35).
            let cuts = [96_011, 23_333, 25_777, 21_007, 24_501, 26_003, 22_009, 24_567]
            let formats = MediaFixtures.formats
            let tone = MediaFixtures.sine(hz: 441, frames: cuts.reduce(0, +), rate: 48_000, amplitude: 0.4)
            let cover = h.path("cover.png")
            #expect(FileManager.default.createFile(atPath: cover, contents: Data(Harness.tinyPNG)))
            var at = 0
            var files: [String] = []
            for (i, format) in formats.enumerated() {
                let piece = Array(tone[(at * 2)..<((at + cuts[i]) * 2)])
                at += cuts[i]
                let wav = h.path("piece\(i).wav")
                try MediaFixtures.writeWAV(piece, channels: 2, rate: 48_000, to: wav)
                let path = "\(album)/0\(i + 1) \(format.name).\(format.fileExtension)"
                var arguments = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", wav]
                let art = ["MP3", "AAC", "FLAC"].contains(format.name)
                if art { arguments += ["-i", cover, "-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic"] }
                arguments += format.arguments + (format.name == "AIFF" ? ["-write_id3v2", "1"] : [])
                arguments += ["-metadata", "title=Part \(i + 1)", "-metadata", "artist=The Testers", "-metadata", "album=Continuous",
                              "-metadata", "track=\(i + 1)/8"]
                if format.name == "Vorbis" { arguments += ["-metadata", "LYRICS=[00:00.10]Five\n[00:00.30]Five again"] }
                try MediaFixtures.run(arguments + [path])
                if format.name == "FLAC" {
                    try "[00:00.10]Four\n[00:00.30]Four again\n".write(toFile: "\(album)/04 FLAC.lrc", atomically: true, encoding: .utf8)
                }
                files.append(path)
            }
            try "not music\n".write(toFile: "\(album)/04b text.flac", atomically: true, encoding: .utf8)

            let clock = try control.coordinator(h, [])
            try control.follower(h, "a", clock: clock, output: "wav:" + h.path("a.wav"))
            try control.follower(h, "b", clock: clock, output: "wav:" + h.path("b.wav"))
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 10) { (try? api.rooms.filter(\.connected).count) == 2 })
            try api.change("POST", "/queue", #"{"paths": ["\#(album)"]}"#)
            // In order, each by its own tags (the text file has none).
            let all = try api.queue
            #expect(all.items.map(\.title) == (1...4).map { "Part \($0)" } + [nil] + (5...8).map { "Part \($0)" },
                    "\(all.items.map(\.title))")
            let queue = QueueView(items: all.items.filter { $0.title != nil }, currentIndex: nil, loopMode: .once)
            #expect(queue.items.allSatisfy { $0.artist == "The Testers" && $0.album == "Continuous" })
            try api.change("PUT", "/loop", #"{"mode": "once"}"#)
            let started = SystemClock().nanosecondsNow()
            try api.change("POST", "/transport/play")
            var seen: [String] = []
            var failure: String?
            #expect(Harness.wait(timeout: 15) {
                guard let np = try? api.nowPlaying else { return false }
                if let title = np.title, np.state == .playing, seen.last != title, title.hasPrefix("Part") { seen.append(title) }
                failure = failure ?? np.failure
                return (np.state == .stopped || np.state == .failed) && !seen.isEmpty
            })
            // The rooms write their audio a buffer ahead of hearing it, but a busy machine
            // can hold a room's writes back: each has written past the end before it stops.
            let ended = SystemClock().nanosecondsNow()
            for name in ["a", "b"] {
                #expect(Harness.wait(timeout: 5) { Self.wavWritten(h.path("\(name).wav"), past: ended + 100_000_000) },
                        "room \(name) had not written its audio past the end")
            }
            #expect(seen == (1...8).map { "Part \($0)" }, "now playing went \(seen)")
            // Art where the files have it; lyrics beside one, inside another.
            for (i, item) in queue.items.enumerated() {
                let art = try api.call("GET", "/artwork/\(item.id)")
                #expect((art.status == 200) == ["MP3", "AAC", "FLAC"].contains(formats[i].name), "\(formats[i].name): artwork \(art.status)")
            }
            let flacLyrics = try api.get("/lyrics/\(queue.items[3].id)", as: TrackLyrics.self)
            #expect(flacLyrics.lyrics?.lines.map(\.text) == ["Four", "Four again"], "\(String(describing: flacLyrics.lyrics))")
            let vorbisLyrics = try api.get("/lyrics/\(queue.items[4].id)", as: TrackLyrics.self)
            #expect(vorbisLyrics.lyrics?.lines.map(\.text) == ["Five", "Five again"], "\(String(describing: vorbisLyrics.lyrics))")
            for name in ["a", "b"] { h.stop(name) }
            let log = h.log("coordinator")
            #expect(log.contains("04b text.flac is not audio tutti plays"), "\(log.suffix(1500))")
            #expect(log.components(separatedBy: "error").count == 2, "one error, the text file's: \(log.suffix(1500))")
            #expect(failure?.contains("04b text.flac is not audio tutti plays") == true, "now playing said \(String(describing: failure))")

            // One unbroken tone in each room.
            let a = try control.wav(h.path("a.wav")), b = try control.wav(h.path("b.wav"))
            let first = try #require(a.firstSound(after: started))
            let last = try #require(a.samples.lastIndex { abs($0) > 0.002 }).advanced(by: 0)
            let heard = Double(last) / 48_000 - Double(first - a.start) / 1e9
            let expected = Double(tone.count / 2) / 48_000
            #expect(abs(heard - expected) < 0.01, "the rooms played \(heard) s of a \(expected) s tone")
            let from = Int((first - a.start) * 48_000 / 1_000_000_000) + 72_000, to = last - 4_800
            // Each 10 ms window against the sine fitted to the 60 ms around it (the rooms'
            // clocks may run a few ppm apart from the tone's while they settle).
            let windows = stride(from: from + 1_200, to: to - 1_680, by: 480).map { start -> Double in
                Tone.residual(a.samples, Tone.fit(a.samples, hz: 441, range: start - 1_200..<start + 1_680), range: start..<start + 480)
            }
            let typical = windows.sorted()[windows.count / 2]
            // A frame too many or too few at a join (0.4 × 2π × 441 / 48,000: 0.023 at its
            // peak) would stand far above the codecs' own error (about 0.004).
            #expect(windows.max()! < max(3 * typical, 0.008), "a window of the tone is off by \(windows.max()!) (typically \(typical))")
            // In step: the same tone, at the same instant, in both rooms.
            let middle = from + 24_000
            let middleB = middle + Int((a.start - b.start) * 48_000 / 1_000_000_000)
            let offset = Tone.offsetMicroseconds(Tone.fit(a.samples, hz: 441, range: middle..<middle + 4_800),
                                                 Tone.fit(b.samples, hz: 441, range: middleB..<middleB + 4_800),
                                                 startsApart: a.start - b.start, hz: 441)
            #expect(abs(offset) < 100, "the rooms play the album \(offset) µs apart")
        }

        /// Whether the WAV a room writes (16-bit stereo, 48 kHz, its first frame heard at the
        /// local time in `PATH.start`) holds the audio heard up to local time `time`.
        static func wavWritten(_ path: String, past time: Int64) -> Bool {
            guard let text = try? String(contentsOfFile: path + ".start", encoding: .utf8), let start = Int64(text),
                  let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int else { return false }
            return Int64(size - 44) / 4 >= (time - start) * 48_000 / 1_000_000_000
        }
    }
}

/// One sine of a known frequency fitted to a stretch of a recording.
enum Tone {
    struct Fit {
        var sine: Double
        var cosine: Double
        var mean: Double
    }

    static func fit(_ x: [Float], hz: Double, range: Range<Int>) -> Fit {
        var ss = 0.0, cc = 0.0, sc = 0.0, sx = 0.0, cx = 0.0, mean = 0.0
        for i in range { mean += Double(x[i]) }
        mean /= Double(range.count)
        for i in range {
            let w = 2 * Double.pi * hz * Double(i) / 48_000
            let s = sin(w), c = cos(w), v = Double(x[i]) - mean
            ss += s * s; cc += c * c; sc += s * c; sx += s * v; cx += c * v
        }
        let det = ss * cc - sc * sc
        return Fit(sine: (sx * cc - cx * sc) / det, cosine: (cx * ss - sx * sc) / det, mean: mean)
    }

    static func residual(_ x: [Float], _ fit: Fit, range: Range<Int>) -> Double {
        var sum = 0.0
        for i in range {
            let w = 2 * Double.pi * 441 * Double(i) / 48_000
            let e = Double(x[i]) - fit.mean - fit.sine * sin(w) - fit.cosine * cos(w)
            sum += e * e
        }
        return (sum / Double(range.count)).squareRoot()
    }

    /// How far apart (µs, within half a period) two recordings play the tone, each fitted
    /// from its own first sample, the recordings' first samples `startsApart` ns apart.
    static func offsetMicroseconds(_ a: Fit, _ b: Fit, startsApart: Int64, hz: Double) -> Double {
        let period = 1e9 / hz
        let shift = Double(startsApart).truncatingRemainder(dividingBy: period) / period * 2 * Double.pi
        var d = atan2(a.cosine, a.sine) - atan2(b.cosine, b.sine) - shift
        while d > Double.pi { d -= 2 * Double.pi }
        while d < -Double.pi { d += 2 * Double.pi }
        return d / (2 * Double.pi * hz) * 1e6
    }
}
