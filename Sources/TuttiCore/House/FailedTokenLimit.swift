/// Slows down whoever guesses the control token: each address may fail `allowed` times in
/// `window`; after that every call from it that needs the token is refused (right token or
/// not) until its oldest failure in the window has aged out. Remembers at most `capacity`
/// addresses (the quietest forgotten first), so a flood of addresses cannot grow it.
public struct FailedTokenLimit<Peer: Hashable & Sendable>: Sendable {
    public let allowed: Int
    /// Nanoseconds.
    public let window: Int64
    public let capacity: Int
    private var failures: [Peer: [Int64]] = [:]
    /// Calls refused for too many failures.
    public private(set) var refused = 0

    public init(allowed: Int = 10, window: Int64 = 60_000_000_000, capacity: Int = 1_024) {
        self.allowed = max(1, allowed)
        self.window = window
        self.capacity = max(1, capacity)
    }

    /// Nil when `peer` may try its token at `now`; else the nanoseconds until it may again.
    public mutating func wait(for peer: Peer, at now: Int64) -> Int64? {
        guard var times = failures[peer] else { return nil }
        times.removeAll { now - $0 >= window }
        failures[peer] = times.isEmpty ? nil : times
        guard times.count >= allowed, let oldest = times.first else { return nil }
        refused += 1
        return oldest + window - now
    }

    /// Records that `peer` sent a wrong (or no) token at `now`.
    public mutating func failed(_ peer: Peer, at now: Int64) {
        var times = failures[peer] ?? []
        times.removeAll { now - $0 >= window }
        times.append(now)
        if times.count > allowed { times.removeFirst(times.count - allowed) }
        failures[peer] = times
        if failures.count > capacity,
           let quietest = failures.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key {
            failures.removeValue(forKey: quietest)
        }
    }
}
