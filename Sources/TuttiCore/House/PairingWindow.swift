/// The coordinator's open pairing code, if any: one code at a time, for `lifetime`, spent by
/// the first follower that pairs with it or after `tries` wrong proofs (then a new one must
/// be shown). Whether a proof is right is the caller's to check (TuttiSecurity's `Pairing`).
///
/// The code carries 50 bits, so wrong proofs online are no threat to it: even its whole
/// budget of wrong proofs finds it once in 10^10. What a stranger can threaten is the code
/// itself, by spending it before its member pairs: so each sender (an IPv4 address, an
/// IPv6 /64: `NetworkAddress.sender`) may make `triesPerSender` wrong proofs of a code, and
/// then no more of it; spending the budget takes 10,000 senders, which no house network
/// holds, within the code's five minutes (each sender may also send only 10 wrong tokens or
/// codes a minute, `FailedTokenLimit`). The member's own machine mistyping the code a few
/// times keeps its tries.
public struct PairingWindow: Sendable, Equatable {
    public static let lifetime: Int64 = 300_000_000_000
    public static let tries = 100_000
    public static let triesPerSender = 10

    public enum State: Equatable, Sendable {
        /// No code open (never shown, used, or spent by wrong tries).
        case closed
        case expired
        case open(code: String, triesLeft: Int)
    }

    private var code: String?
    private var expires: Int64 = 0
    private var triesLeft = 0
    /// Wrong proofs of the open code by sender.
    private var wrong: [String: Int] = [:]

    public init() {}

    /// Opens `code` at `now`, replacing any open one.
    public mutating func open(_ code: String, at now: Int64) {
        self.code = code
        expires = now + Self.lifetime
        triesLeft = Self.tries
        wrong = [:]
    }

    /// Whether `sender` may still try the open code (it has not made `triesPerSender`
    /// wrong proofs of it).
    public func admits(_ sender: String) -> Bool {
        wrong[sender, default: 0] < Self.triesPerSender
    }

    public mutating func state(at now: Int64) -> State {
        guard let code else { return .closed }
        guard now < expires else {
            self.code = nil
            wrong = [:]
            return .expired
        }
        return .open(code: code, triesLeft: triesLeft)
    }

    /// A wrong proof from `sender`: one try fewer, for the code and for the sender; the code
    /// is spent at none. Returns the sender's tries left.
    public mutating func failed(by sender: String) -> Int {
        guard code != nil else { return 0 }
        wrong[sender, default: 0] += 1
        triesLeft = max(0, triesLeft - 1)
        if triesLeft == 0 { used() }
        return max(0, Self.triesPerSender - wrong[sender, default: 0])
    }

    /// A follower paired: the code is spent.
    public mutating func used() {
        code = nil
        wrong = [:]
    }

    /// Seconds until the open code expires (0 when none).
    public func secondsLeft(at now: Int64) -> Int {
        code == nil ? 0 : Int(max(0, expires - now) / 1_000_000_000)
    }
}

/// What a new follower sends to pair (`POST /api/v1/pair`): its X25519 public key and its
/// proof of the code, both base64 (TuttiSecurity's `Pairing` makes and checks them), and
/// the name it joins as (its room's; the member's name in `tutti ctl members`).
public struct PairingRequest: Codable, Equatable, Sendable {
    public var publicKey: String
    public var proof: String
    public var name: String?
    public init(publicKey: String, proof: String, name: String? = nil) {
        self.publicKey = publicKey
        self.proof = proof
        self.name = name
    }
}

/// The coordinator's answer: its public key, the house key and the new member's credential
/// sealed for the follower, its proof, and the new member's id (also sealed with the
/// credential: this copy only says it).
public struct PairingAnswer: Codable, Equatable, Sendable {
    public var publicKey: String
    public var sealedKey: String
    public var proof: String
    public var member: UInt16?
    public init(publicKey: String, sealedKey: String, proof: String, member: UInt16? = nil) {
        self.publicKey = publicKey
        self.sealedKey = sealedKey
        self.proof = proof
        self.member = member
    }
}

/// A ticket for one event stream (`POST /api/v1/events/ticket`): open
/// `/api/v1/events?ticket=...` with it within `expiresInSeconds`.
public struct EventTicket: Codable, Equatable, Sendable {
    public var ticket: String
    public var expiresInSeconds: Int
    public init(ticket: String, expiresInSeconds: Int) {
        self.ticket = ticket
        self.expiresInSeconds = expiresInSeconds
    }
}

/// A code just shown (`POST /api/v1/pairing`).
public struct PairingCode: Codable, Equatable, Sendable {
    public var code: String
    public var expiresInSeconds: Int
    public var tries: Int
    public init(code: String, expiresInSeconds: Int, tries: Int) {
        self.code = code
        self.expiresInSeconds = expiresInSeconds
        self.tries = tries
    }
}
