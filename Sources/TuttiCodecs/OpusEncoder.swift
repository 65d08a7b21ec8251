import COpus
import COpusShim
import TuttiCore

/// Encodes 48 kHz interleaved float (stereo, or mono where said) into Opus packets with libopus.
public final class OpusFrameEncoder {
    public struct Settings: Sendable {
        public var frameMilliseconds: Double = 20
        public var bitrate: Int = 128_000
        public var inbandFEC = true
        public var expectedLossPercent = 5
        public var complexity = 10
        /// 2 (the house's stream), or 1 (a Sendspin player that asks for mono).
        public var channels = AudioFormat.channels
        public init() {}
        /// Frames (samples per channel) in one Opus packet.
        public var frameSize: Int { Int(Double(AudioFormat.sampleRate) * frameMilliseconds / 1000) }
    }

    public let settings: Settings
    private let encoder: OpaquePointer
    private var packet = [UInt8](repeating: 0, count: 4000)
    /// Samples of codec delay (the encoder's lookahead).
    public let lookahead: Int

    public init(settings: Settings = Settings()) throws(CodecError) {
        guard [2.5, 5, 10, 20, 40, 60].contains(settings.frameMilliseconds) else {
            throw .opus(operation: "configure", code: OPUS_BAD_ARG, message: "frame size must be 2.5, 5, 10, 20, 40 or 60 ms")
        }
        guard (1...2).contains(settings.channels) else {
            throw .opus(operation: "configure", code: OPUS_BAD_ARG, message: "1 or 2 channels")
        }
        self.settings = settings
        var err: Int32 = 0
        guard let enc = opus_encoder_create(Int32(AudioFormat.sampleRate), Int32(settings.channels),
                                            OPUS_APPLICATION_AUDIO, &err), err == OPUS_OK else {
            throw .opus(operation: "encoder_create", code: err, message: Self.message(err))
        }
        encoder = enc
        try Self.check("set bitrate", tutti_opus_set_bitrate(enc, Int32(settings.bitrate)))
        try Self.check("set FEC", tutti_opus_set_inband_fec(enc, settings.inbandFEC ? 1 : 0))
        try Self.check("set loss", tutti_opus_set_packet_loss_perc(enc, Int32(settings.expectedLossPercent)))
        try Self.check("set complexity", tutti_opus_set_complexity(enc, Int32(settings.complexity)))
        try Self.check("set signal", tutti_opus_set_signal_music(enc))
        var la: Int32 = 0
        try Self.check("get lookahead", tutti_opus_get_lookahead(enc, &la))
        lookahead = Int(la)
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes exactly `settings.frameSize` frames starting at `offset` (in floats) of `pcm`.
    public func encode(_ pcm: [Float], offset: Int = 0) throws(CodecError) -> [UInt8] {
        let frames = settings.frameSize
        precondition(pcm.count - offset >= frames * settings.channels, "encode needs a whole frame")
        let n = pcm.withUnsafeBufferPointer { p in
            packet.withUnsafeMutableBufferPointer { out in
                opus_encode_float(encoder, p.baseAddress! + offset, Int32(frames), out.baseAddress!, Int32(out.count))
            }
        }
        if n < 0 { throw .opus(operation: "encode", code: n, message: Self.message(n)) }
        return Array(packet[0..<Int(n)])
    }

    /// Forgets all state: the next frame starts a new, independent stretch (a new epoch).
    public func reset() {
        _ = tutti_opus_encoder_reset(encoder)
    }

    static func check(_ op: String, _ rc: Int32) throws(CodecError) {
        if rc != OPUS_OK { throw .opus(operation: op, code: rc, message: message(rc)) }
    }

    static func message(_ code: Int32) -> String { String(cString: opus_strerror(code)) }
}
