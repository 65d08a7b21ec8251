import Foundation
import Testing
import TuttiNet
import TuttiSendspin
@testable import TuttiNode

/// The house's record of its paired Sendspin players: kept on disk (0600) and read back at
/// start; a file that does not parse is moved aside, not written over; a pairing that cannot
/// be written is not kept.
@Suite("Sendspin pairings kept")
struct SendspinPairingsTests {
    static let key = Base64URL.encode([UInt8](repeating: 7, count: 32))

    @Test func aPairingIsKeptAndReadBack() throws {
        let folder = NSTemporaryDirectory() + "tutti-pairings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pairings = SendspinPairings(directory: folder, log: Log("test"))
        #expect(pairings.psk(for: "player") == nil)
        try pairings.add(.init(client_id: "player", name: "Porch", psk: Self.key, method: "dynamic_pairing_code", paired_at: 1))
        #expect(pairings.psk(for: "player")?.key == [UInt8](repeating: 7, count: 32))
        #expect(pairings.psk(for: "player")?.category == .longTerm)
        let mode = (try FileManager.default.attributesOfItem(atPath: pairings.path)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        let again = SendspinPairings(directory: folder, log: Log("test"))
        #expect(again.all.map(\.name) == ["Porch"] && again.psk(for: "player") != nil)
    }

    @Test func anUnreadableFileIsMovedAsideAndAnUnwritableOneKeepsNothing() throws {
        let folder = NSTemporaryDirectory() + "tutti-pairings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("not json".utf8).write(to: URL(fileURLWithPath: folder + "/sendspin-pairings.json"))
        let pairings = SendspinPairings(directory: folder, log: Log("test"))
        #expect(pairings.all.isEmpty)
        #expect(FileManager.default.fileExists(atPath: folder + "/sendspin-pairings.json.unreadable"))
        // A folder that is gone: the pairing is refused, and nothing of it is kept.
        let gone = SendspinPairings(directory: folder + "/no/such/folder", log: Log("test"))
        #expect(throws: (any Error).self) {
            try gone.add(.init(client_id: "player", name: "Porch", psk: Self.key, method: "static_pairing_code", paired_at: 1))
        }
        #expect(gone.psk(for: "player") == nil)
    }
}
