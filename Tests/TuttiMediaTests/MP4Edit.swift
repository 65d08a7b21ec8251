import Foundation

/// Adds an iTunes freeform tag (`----`, mean com.apple.iTunes) to an M4A whose `moov` is the
/// last box (as ffmpeg writes it, so that no chunk offset moves) and already holds
/// udta/meta/ilst (ffmpeg writes them when given a tag).
enum MP4Edit {
    struct Failure: Error {}

    static func addFreeformTag(named name: String, value: String, from source: String, to destination: String) throws {
        var d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
        }
        let atom = box("----", box("mean", [0, 0, 0, 0] + Array("com.apple.iTunes".utf8)) + box("name", [0, 0, 0, 0] + Array(name.utf8))
            + box("data", [0, 0, 0, 1, 0, 0, 0, 0] + Array(value.utf8)))
        func find(_ type: String, after: Int) throws -> Int {
            let t = Array(type.utf8)
            var i = after
            while i + 4 <= d.count {
                if Array(d[i..<i + 4]) == t { return i - 4 }
                i += 1
            }
            throw Failure()
        }
        func size(_ at: Int) -> Int { Int(d[at]) << 24 | Int(d[at + 1]) << 16 | Int(d[at + 2]) << 8 | Int(d[at + 3]) }
        func setSize(_ at: Int, _ v: Int) { d[at] = UInt8(v >> 24); d[at + 1] = UInt8(v >> 16 & 0xFF); d[at + 2] = UInt8(v >> 8 & 0xFF); d[at + 3] = UInt8(v & 0xFF) }
        let moov = try find("moov", after: 0)
        let udta = try find("udta", after: moov + 8)
        let meta = try find("meta", after: udta + 8)
        let ilst = try find("ilst", after: meta + 8)
        let end = ilst + size(ilst)
        d.insert(contentsOf: atom, at: end)
        for at in [moov, udta, meta, ilst] { setSize(at, size(at) + atom.count) }
        try Data(d).write(to: URL(fileURLWithPath: destination))
    }
}
