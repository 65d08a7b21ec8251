import Foundation
import Synchronization
import TuttiNet
import TuttiSecurity
import TuttiSendspin

/// The Sendspin players paired with this house: each one's id (its X25519 key) and the
/// long-term key it handed over at pairing, under which its sessions open from then on.
/// Kept in the state folder (`sendspin-pairings.json`, 0600, written atomically), read at
/// start; a file that does not parse is moved aside with a warning (its players pair again),
/// never taken for an empty list that the next pairing would write over.
final class SendspinPairings: Sendable {
    struct Record: Codable, Equatable, Sendable {
        var client_id: String
        var name: String
        /// The long-term key, base64url.
        var psk: String
        var method: String
        /// Unix seconds.
        var paired_at: Int64
    }

    let path: String
    private let records: Mutex<[String: Record]>
    /// At most this many players are kept (the oldest pairing goes first).
    static let capacity = 256

    init(directory: String, log: Log) {
        path = directory + "/sendspin-pairings.json"
        var loaded: [String: Record] = [:]
        if let bytes = Files.read(path, limit: 1 << 20) {
            if let list = try? JSONDecoder().decode([Record].self, from: Data(bytes)) {
                for record in list where Base64URL.decode(record.psk)?.count == 32 { loaded[record.client_id] = record }
            } else {
                let aside = path + ".unreadable"
                _ = rename(path, aside)
                log.warning("\(path) does not parse: moved to \(aside); Sendspin players paired with this house pair again")
            }
        }
        records = Mutex(loaded)
    }

    /// The long-term key of a paired player.
    func psk(for clientID: String) -> SendspinPSK? {
        records.withLock { $0[clientID] }.flatMap { Base64URL.decode($0.psk) }.map { SendspinPSK(key: $0, category: .longTerm) }
    }

    var all: [Record] { records.withLock { Array($0.values) }.sorted { $0.paired_at < $1.paired_at } }

    /// Forgets a player's pairing (on disk before it returns); false when it had none.
    func remove(_ clientID: String) throws -> Bool {
        try records.withLock { records in
            guard records[clientID] != nil else { return false }
            var next = records
            next[clientID] = nil
            try save(next)
            records = next
            return true
        }
    }

    /// Keeps a pairing (replacing the player's last), on disk before it returns; a pairing
    /// that cannot be written is not kept at all.
    func add(_ record: Record) throws {
        try records.withLock { records in
            var next = records
            next[record.client_id] = record
            if next.count > Self.capacity, let oldest = next.values.min(by: { $0.paired_at < $1.paired_at }) {
                next[oldest.client_id] = nil
            }
            try save(next)
            records = next
        }
    }

    private func save(_ records: [String: Record]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(Array(records.values).sorted { $0.paired_at < $1.paired_at }), to: path, permissions: 0o600)
    }
}
