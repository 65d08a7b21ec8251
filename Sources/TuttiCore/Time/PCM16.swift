/// Conversion between tutti's float samples and signed 16-bit little-endian PCM.
public enum PCM16 {
    /// Clamps each sample to [-1, 1] and writes it as s16le.
    public static func encode(_ samples: [Float]) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(samples.count * 2)
        for s in samples {
            let v = Int16(max(-32768, min(32767, (s * 32767).rounded())))
            bytes.append(UInt8(truncatingIfNeeded: v))
            bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        }
        return bytes
    }
}
