/// The coordinator's return-routability cookies: a time answer gives the asker a cookie made
/// from its address (and the current 30-second slot) with a key only this coordinator
/// process knows, and every later message of the follower carries it. A message whose
/// cookie is right for its source address proves that the sender receives at that address:
/// only such senders get a subscription, a room, or retransmissions. A stranger spoofing
/// another host's address never sees the cookie, so it cannot point the stream at that host.
public struct ReturnRoutability: Sendable {
    /// A cookie is good for the slot it was made in and the next.
    public static let slot: Int64 = 30_000_000_000
    private let key: any MessageAuthenticator

    /// `key`: a random key of this coordinator process (cookies need not outlive it).
    public init(key: any MessageAuthenticator) {
        self.key = key
    }

    /// The cookie for `address` (its bytes: host and port) at `now` (never 0: 0 means none).
    public func cookie(for address: [UInt8], at now: Int64) -> UInt64 {
        cookie(for: address, slot: now / Self.slot)
    }

    public func isValid(_ cookie: UInt64, for address: [UInt8], at now: Int64) -> Bool {
        check(cookie, for: address, at: now).valid
    }

    /// Whether `cookie` is valid for `address` at `now`, and the cookie to give it now (one
    /// computation serves both).
    public func check(_ cookie: UInt64, for address: [UInt8], at now: Int64) -> (valid: Bool, current: UInt64) {
        let slot = now / Self.slot
        let current = self.cookie(for: address, slot: slot)
        guard cookie != 0, cookie != current else { return (cookie != 0, current) }
        return (cookie == self.cookie(for: address, slot: slot - 1), current)
    }

    private func cookie(for address: [UInt8], slot: Int64) -> UInt64 {
        var bytes = address
        bytes.appendBigEndian(UInt64(bitPattern: slot))
        let value = key.tag(bytes[...]).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return max(value, 1)
    }
}

/// A follower's side of the clock port's trust: which of its time requests are awaiting an
/// answer (an answer counts only once, and only for a request sent in the last second: a
/// replayed answer is refused), the cookie its coordinator gave it, and the coordinator's
/// clock as the last answer read it, by which the follower dates every other message of the
/// coordinator: one stamped more than `freshness` from the coordinator's now is a replay
/// (or from a coordinator that restarted since), and is dropped.
public struct CoordinatorLink: Sendable {
    public static let freshness: Int64 = 2_000_000_000
    /// Requests awaiting an answer: originate (local ns) → sent.
    private var outstanding: Set<UInt64> = []
    private var oldestKept: Int64 = .min
    /// The newest cookie the coordinator gave (0: none yet).
    public private(set) var cookie: UInt64 = 0
    /// The coordinator's transmit time of the last answer, and its local arrival.
    private var reference: (coordinator: Int64, local: Int64)?

    public init() {}

    /// A time request went out, stamped `originate` (local ns).
    public mutating func sent(originate: Int64) {
        if outstanding.count >= 2_048 { expire(before: originate - 1_000_000_000) }
        guard outstanding.count < 2_048 else { return }
        outstanding.insert(UInt64(bitPattern: originate))
    }

    /// An authenticated time answer: true (and taken as the coordinator's clock and cookie)
    /// when it answers a request of the last second not answered before.
    public mutating func answer(originate: UInt64, transmit: CoordinatorTime, cookie: UInt64, arrived: LocalTime) -> Bool {
        let sent = Int64(bitPattern: originate)
        guard arrived.nanoseconds - sent < 1_000_000_000, outstanding.remove(originate) != nil else { return false }
        if cookie != 0 { self.cookie = cookie }
        reference = (transmit.nanoseconds, arrived.nanoseconds)
        expire(before: arrived.nanoseconds - 1_000_000_000)
        return true
    }

    /// Whether a coordinator message stamped `stamp` (its clock when it sent it) that arrived
    /// at `arrived` is fresh. Before any answer nothing is: the follower cannot date it.
    public func isFresh(stamp: CoordinatorTime, arrived: LocalTime) -> Bool {
        guard let reference else { return false }
        let now = reference.coordinator + (arrived.nanoseconds - reference.local)
        return abs(stamp.nanoseconds - now) <= Self.freshness
    }

    /// The coordinator's clock at local `now`, as the last answer read it; nil before any.
    public func coordinatorTime(at now: Int64) -> Int64? {
        reference.map { $0.coordinator + (now - $0.local) }
    }

    private mutating func expire(before horizon: Int64) {
        guard horizon > oldestKept else { return }
        oldestKept = horizon
        outstanding = outstanding.filter { Int64(bitPattern: $0) >= horizon }
    }
}
