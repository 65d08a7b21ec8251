import Synchronization
import TuttiCore
import TuttiMedia

/// The stages between a source and the encoder: the track's loudness (ReplayGain, with its
/// clipping guard), then the house's 48 kHz. One chain runs through the tracks of an epoch:
/// tracks that follow each other at the same rate go through one converter and come out as
/// one continuous signal, with no edge between them. A live input always goes through a
/// converter that can stretch it (`stretch(ppm:)`): its writer's clock is not the house's.
final class SourceChain {
    /// The house's ReplayGain setting, which the house may change at any time.
    let replayGain: Mutex<ReplayGain>
    private var converter: RateConverter?
    /// How much a live input is stretched (ppm), and the converter that does it.
    private var stretching = 0.0
    private var stretcher: RateConverter?
    private var native: [Float] = []
    /// Glides to a new gain (a track of another loudness, a setting changed) in at most 10 ms.
    private var gain = GainStage(rampFrames: 480)
    /// The next read starts at its gain at once (an epoch's first audio), with no glide.
    private var gainSettled = false
    /// Frames of the current source read since it began, and the media frames (48 kHz)
    /// counted for them.
    private var nativeFrames: Int64 = 0
    private var mediaFrames: Int64 = 0
    private var rate = AudioFormat.sampleRate
    private weak var current: (any FrameSource)?

    init(replayGain: ReplayGain = ReplayGain()) {
        self.replayGain = Mutex(replayGain)
        native.reserveCapacity(16_384)
    }

    /// Which converter runs now ("soxr"), for the log; nil at 48 kHz.
    var engine: String? { converter?.engine }

    /// Reads the source's next frames and appends them at 48 kHz to `pcm`. Returns the media
    /// frames (48 kHz) they advance the track by, 0 at its end, nil when the source had
    /// nothing yet (a live input paused, a remote source loading).
    func read(_ source: any FrameSource, into pcm: inout [Float]) throws -> Int? {
        if source !== current {
            current = source
            nativeFrames = 0
            mediaFrames = 0
            stretcher = nil
            stretching = 0
        }
        native.removeAll(keepingCapacity: true)
        guard let n = try source.read(into: &native) else { return nil }
        guard n > 0 else { return 0 }
        let setting = replayGain.withLock { $0 }
        let target = setting.gain(for: source.loudness)
        if gainSettled {
            gain.target = target
        } else {
            gain = GainStage(rampFrames: 480, gain: target)
            gainSettled = true
        }
        gain.apply(to: &native)
        if gain.gain > 1 || gain.target > 1 {
            // The clipping guard where no peak was tagged: nothing past full scale.
            for i in native.indices { native[i] = max(-1, min(1, native[i])) }
        }
        let sourceRate = source.sampleRate
        if sourceRate != rate {
            try finish(into: &pcm)
            rate = sourceRate
            // The frames counted so far stay counted at the old rate.
            nativeFrames = AudioFormat.frames(mediaFrames, at: AudioFormat.sampleRate, to: sourceRate)
        }
        if source.isLive {
            if stretcher?.inputRate != rate {
                stretcher = try RateConverter(from: rate, stretchable: true)
                try stretcher!.stretch(ppm: stretching)
            }
            try stretcher!.process(native[...], into: &pcm)
        } else if rate == AudioFormat.sampleRate {
            pcm.append(contentsOf: native)
        } else {
            if converter == nil { converter = try RateConverter(from: rate) }
            try converter!.process(native[...], into: &pcm)
        }
        nativeFrames += Int64(n)
        let media = AudioFormat.frames(nativeFrames, at: rate)
        defer { mediaFrames = media }
        return Int(media - mediaFrames)
    }

    /// Appends what the converter still holds: the end of a run of tracks (the queue ends,
    /// or the next track is at another rate).
    func finish(into pcm: inout [Float]) throws {
        guard let converter else { return }
        try converter.flush(into: &pcm)
        self.converter = nil
    }

    /// Stretches a live input by `ppm` from now on (positive: more frames out than in).
    func stretch(ppm: Double) throws {
        stretching = ppm
        try stretcher?.stretch(ppm: ppm)
    }

    /// A new epoch (a start, a seek, a skip): nothing of the last carries over.
    func reset() {
        converter = nil
        stretcher = nil
        stretching = 0
        current = nil
        rate = AudioFormat.sampleRate
        gainSettled = false
    }
}
