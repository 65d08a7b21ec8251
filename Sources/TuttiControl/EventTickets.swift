import Synchronization
import TuttiNet

/// One-time tickets for the event stream (`POST /api/v1/events/ticket`, with the token): a
/// browser cannot send the token on a WebSocket, so the web remote asks for a ticket with it
/// and opens the stream with `?ticket=`. A ticket is 128 random bits, good for one stream
/// within a minute. Streams opened with a ticket (or the token in an `Authorization`
/// header: `tutti ctl`, `tutti mpris`) have a budget of their own that no stranger can
/// spend: a stranger's many event streams from many addresses take the open budget (which
/// lyric screens without the token share), never the house's own.
final class EventTickets: Sendable {
    static let lifetime: UInt64 = 60_000_000_000
    /// At most this many unspent at once (the oldest go first).
    static let limit = 256
    private let issued = Mutex<[String: UInt64]>([:])

    private static func now() -> UInt64 { UInt64(SystemClock.hostNanoseconds()) }

    /// A new ticket.
    func issue() -> String {
        var rng = SystemRandomNumberGenerator()
        let ticket = (0..<2).map { _ in String(rng.next() as UInt64, radix: 16) }.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
        let now = Self.now()
        issued.withLock { table in
            table = table.filter { $0.value > now }
            if table.count >= Self.limit, let oldest = table.min(by: { $0.value < $1.value })?.key { table[oldest] = nil }
            table[ticket] = now + Self.lifetime
        }
        return ticket
    }

    /// Whether `ticket` is good now (it stays so).
    func isValid(_ ticket: String?) -> Bool {
        guard let ticket else { return false }
        let now = Self.now()
        return issued.withLock { ($0[ticket] ?? 0) > now }
    }

    /// Spends `ticket`: true when it was good.
    func take(_ ticket: String?) -> Bool {
        guard let ticket else { return false }
        let now = Self.now()
        return issued.withLock { ($0.removeValue(forKey: ticket) ?? 0) > now }
    }
}
