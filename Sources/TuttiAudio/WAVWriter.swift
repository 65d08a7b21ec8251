import TuttiCore
import TuttiNet

/// Writes 16-bit PCM stereo 48 kHz WAV files. The header's sizes are rewritten every
/// second and on close, so a file cut short by a crash is still readable.
public final class WAVWriter {
    public let path: String
    private let file: OutputFile
    private var dataBytes: UInt32 = 0
    private var sinceHeader = 0

    public init(path: String) throws(AudioError) {
        self.path = path
        do {
            file = try OutputFile(creating: path)
        } catch {
            throw .file(path: path, reason: "cannot create the file: \(error) (does its folder exist?)")
        }
        file.write(Self.header(dataBytes: 0))
    }

    deinit { close() }

    public func write(_ samples: [Float]) {
        let bytes = PCM16.encode(samples)
        file.write(bytes)
        dataBytes &+= UInt32(bytes.count)
        sinceHeader += samples.count / 2
        if sinceHeader >= 48_000 {
            sinceHeader = 0
            rewriteHeader()
        }
    }

    public func close() {
        rewriteHeader()
        file.sync()
    }

    private func rewriteHeader() {
        file.write(Self.header(dataBytes: dataBytes), at: 0)
    }

    static func header(dataBytes: UInt32) -> [UInt8] {
        var h: [UInt8] = []
        func u32(_ v: UInt32) { h += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func u16(_ v: UInt16) { h += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        h += Array("RIFF".utf8); u32(36 &+ dataBytes); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(16); u16(1); u16(2); u32(48_000); u32(48_000 * 4); u16(4); u16(16)
        h += Array("data".utf8); u32(dataBytes)
        return h
    }
}
