/// A dictionary that holds at most `capacity` entries: past it, the tenth used longest ago
/// goes (what the house learns of every track and URL it is asked about would otherwise
/// grow for as long as it runs). Pure; not thread-safe on its own.
public struct BoundedCache<Key: Hashable, Value> {
    public let capacity: Int
    private var entries: [Key: (value: Value, used: UInt64)] = [:]
    private var clock: UInt64 = 0

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// The value for `key`, marked as used now; setting it stores it (nil removes it).
    public subscript(key: Key) -> Value? {
        mutating get {
            guard let entry = entries[key] else { return nil }
            clock += 1
            entries[key]?.used = clock
            return entry.value
        }
        set {
            guard let newValue else {
                entries[key] = nil
                return
            }
            clock += 1
            entries[key] = (newValue, clock)
            if entries.count > capacity { evict() }
        }
    }

    /// Changes the value for `key` in place, when there is one.
    public mutating func update(_ key: Key, _ change: (inout Value) -> Void) {
        guard var entry = entries[key] else { return }
        change(&entry.value)
        clock += 1
        entry.used = clock
        entries[key] = entry
    }

    /// Down to nine tenths of the capacity, those used longest ago first.
    private mutating func evict() {
        let keep = capacity - capacity / 10
        let oldest = entries.sorted { $0.value.used < $1.value.used }.prefix(entries.count - keep).map(\.key)
        for key in oldest { entries[key] = nil }
    }
}
