/// How deeply a JSON text nests its arrays and objects, found without parsing it.
///
/// Foundation's JSON decoder on Linux traps (the process dies) on texts nested more than
/// 512 levels deep: 513 `[` in a room report, a request body or a WebSocket message would
/// kill the coordinator. Every JSON that comes from outside is checked here first; nothing
/// tutti reads nests more than a few levels.
public enum JSONNesting {
    /// Deeper than anything tutti reads, far below where the decoder fails.
    public static let maximumDepth = 32

    /// Whether `bytes` nest no deeper than `maximumDepth` (brackets inside strings do not count).
    public static func isShallow<C: Collection<UInt8>>(_ bytes: C, maximumDepth: Int = maximumDepth) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumDepth { return false }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return true
    }

    /// The same, for text.
    public static func isShallow(_ text: String, maximumDepth: Int = maximumDepth) -> Bool {
        isShallow(text.utf8, maximumDepth: maximumDepth)
    }
}
