/// Unicast subscriptions on the coordinator: each key holds a lease until a given time;
/// renewing extends it, a zero lease cancels it, expired ones are dropped.
public struct LeaseTable<Key: Hashable & Sendable>: Sendable {
    private var expiries: [Key: Int64] = [:]
    public let maximumEntries: Int

    public init(maximumEntries: Int = 256) { self.maximumEntries = maximumEntries }

    /// Returns false when the table is full and `key` is new.
    @discardableResult
    public mutating func renew(_ key: Key, until expiry: Int64, now: Int64) -> Bool {
        expire(now: now)
        if expiry <= now {
            expiries.removeValue(forKey: key)
            return true
        }
        if expiries[key] == nil && expiries.count >= maximumEntries { return false }
        expiries[key] = expiry
        return true
    }

    public mutating func expire(now: Int64) {
        expiries = expiries.filter { $0.value > now }
    }

    public func active(now: Int64) -> [Key] {
        expiries.filter { $0.value > now }.map(\.key)
    }

    public var count: Int { expiries.count }
}
