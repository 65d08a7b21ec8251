import Synchronization
import TuttiCore

/// The coordinator's record of its house's members (docs/security.md, "Members"): each
/// member's own key, whether holders of the house key may still enrol, and the stream's key
/// by generation. The clock service's thread asks it for keys with every message, the house
/// adds and revokes members: one lock, each call in one step. Every change is handed to
/// `save` (outside the lock), which keeps it on disk.
///
/// Revoking a member forgets its key (its messages are a stranger's from then on), closes
/// enrolment (it holds the house key, and must not come back as a new member), and makes a
/// new generation of the stream's key, which every remaining member is given sealed with its
/// own key; the stream moves to it once the members seen lately hold it (`switchDue`), or
/// after `switchDeadline` at most. The revoked member hears noise from then on.
public final class HouseKeyring: MemberKeys {
    /// The most members a house takes (rooms, screens and machines gone but not revoked).
    public static let limit = 256
    /// How long the stream waits for the members to take a new key before it moves to it.
    public static let switchDeadline: Int64 = 5_000_000_000
    /// Members heard from this recently are waited for.
    static let recentlySeen: Int64 = 30_000_000_000

    /// What is kept on disk (`members.json`): the secrets are in it, so mode 0600.
    public struct Saved: Codable, Equatable, Sendable {
        public struct Member: Codable, Equatable, Sendable {
            public var id: UInt16
            public var name: String
            /// The room it speaks for (the first it reported), once it reported one.
            public var room: String?
            public var secret: String
            /// When it joined (Unix seconds).
            public var added: Int64
        }
        public struct Generation: Codable, Equatable, Sendable {
            public var generation: UInt32
            /// Key then salt, in hex.
            public var key: String
        }
        public var version = 1
        public var enrolment: Bool = true
        /// The stream's key in use; nil: generation 0, the house key's own.
        public var stream: Generation?
        /// A newer generation being handed out, not yet in use.
        public var next: Generation?
        public var members: [Member] = []
        public init() {}
    }

    /// A member as the house shows it.
    public struct MemberView: Equatable, Sendable {
        public var id: UInt16
        public var name: String
        public var room: String?
        public var added: Int64
        public var fingerprint: String
        /// The stream key's generation it said it holds, and when it was last heard (monotonic ns).
        public var holds: UInt32?
        public var lastHeard: Int64?
    }

    private struct Entry {
        var key: MemberKey
        var clock: HMACAuthenticator
        var streamTag: StreamTagKey
        var name: String
        var room: String?
        var added: Int64
        var holds: UInt32?
        var heard: Int64?

        init(key: MemberKey, name: String, room: String?, added: Int64) {
            self.key = key
            clock = key.clockPort
            streamTag = key.streamTag
            self.name = name
            self.room = room
            self.added = added
        }
    }

    private struct State {
        var members: [UInt16: Entry] = [:]
        var enrolment = true
        var current: (generation: UInt32, key: SRTPMasterKey)
        var next: (generation: UInt32, key: SRTPMasterKey, since: Int64?)?
        /// The stream each room is to play (its zone's SSRC), as the house last said.
        var roomStreams: [String: UInt32] = [:]
    }

    public let houseKey: HouseKey
    private let houseClock: HMACAuthenticator
    /// False: the stream is plain RTP, and no key is handed out.
    private let sealsStream: Bool
    private let state: Mutex<State>
    private let save: @Sendable (Saved) -> Void
    private let wallClock: @Sendable () -> Int64

    /// When the members were loaded (monotonic ns): those saved count as heard then, until
    /// they are heard again. After a restart a member's name is not free for another machine
    /// to take at once: its own machine has `recentlySeen` to come back first.
    private let loadedAt: Int64?

    /// `saved`: what `save` was last given (nil: a new house). `wallClock`: Unix seconds.
    /// `loadedAt`: now, on the clock `add(name:at:)` is given.
    public init(houseKey: HouseKey, saved: Saved?, sealsStream: Bool = true, loadedAt: Int64? = nil,
                wallClock: @escaping @Sendable () -> Int64, save: @escaping @Sendable (Saved) -> Void) {
        self.houseKey = houseKey
        self.loadedAt = loadedAt
        houseClock = houseKey.clockPort
        self.sealsStream = sealsStream
        self.save = save
        self.wallClock = wallClock
        var state = State(current: (0, houseKey.stream))
        if let saved {
            state.enrolment = saved.enrolment
            if let stream = saved.stream, let key = Self.key(stream.key) { state.current = (stream.generation, key) }
            if let next = saved.next, let key = Self.key(next.key) { state.next = (next.generation, key, nil) }
            for m in saved.members {
                guard let secret = Hex.decode(m.secret, count: MemberKey.size), let key = MemberKey(id: m.id, secret: secret) else { continue }
                state.members[m.id] = Entry(key: key, name: m.name, room: m.room, added: m.added)
            }
        }
        self.state = Mutex(state)
    }

    private static func key(_ hex: String) -> SRTPMasterKey? {
        Hex.decode(hex, count: SRTPMasterKey.keySize + SRTPMasterKey.saltSize).flatMap(SRTPMasterKey.init(bytes:))
    }

    private func saved(_ s: State) -> Saved {
        var out = Saved()
        out.enrolment = s.enrolment
        if s.current.generation != 0 { out.stream = .init(generation: s.current.generation, key: s.current.key.hex) }
        out.next = s.next.map { .init(generation: $0.generation, key: $0.key.hex) }
        out.members = s.members.values.sorted { $0.key.id < $1.key.id }.map {
            .init(id: $0.key.id, name: $0.name, room: $0.room, secret: $0.key.secret.map { $0.hex(digits: 2) }.joined(), added: $0.added)
        }
        return out
    }

    /// Changes the state and, when `body` says so, saves it.
    private func change<T>(_ body: (inout State) -> (T, changed: Bool)) -> T {
        let (result, snapshot) = state.withLock { s -> (T, Saved?) in
            let (result, changed) = body(&s)
            return (result, changed ? saved(s) : nil)
        }
        if let snapshot { save(snapshot) }
        return result
    }

    // MARK: - The clock port's questions

    public func clockKey(member id: UInt16) -> (any MessageAuthenticator)? {
        state.withLock { s in
            id == 0 ? (s.enrolment ? houseClock : nil) : s.members[id]?.clock
        }
    }

    public func enroll(name: String, at now: Int64) -> (member: UInt16, sealed: [UInt8])? {
        guard let key = add(name: name, at: now) else { return nil }
        return (key.id, houseKey.sealEnrolment(key))
    }

    public var streamGeneration: UInt32 {
        state.withLock { $0.next?.generation ?? $0.current.generation }
    }

    public func streamKey(for id: UInt16) -> (generation: UInt32, sealed: [UInt8])? {
        guard sealsStream else { return nil }
        let found: (UInt32, SRTPMasterKey, MemberKey?)? = state.withLock { s in
            let (generation, key) = s.next.map { ($0.generation, $0.key) } ?? s.current
            if id == 0 { return s.enrolment ? (generation, key, nil) : nil }
            return s.members[id].map { (generation, key, $0.key) }
        }
        guard let (generation, key, member) = found else { return nil }
        return (generation, member?.sealStreamKey(key, generation: generation) ?? houseKey.sealStreamKey(key, generation: generation))
    }

    public func holds(member id: UInt16, generation: UInt32, at now: Int64) {
        state.withLock { s in
            guard id != 0 else { return }
            s.members[id]?.holds = generation
            s.members[id]?.heard = now
        }
    }

    public func heard(member id: UInt16, at now: Int64) {
        state.withLock { $0.members[id]?.heard = now }
    }

    public func mayReport(member id: UInt16, room name: String) -> Bool {
        change { s in
            // Member 0 (a holder of the house key, while it may enrol) speaks for any room.
            guard id != 0 else { return (true, false) }
            guard let entry = s.members[id] else { return (false, false) }
            if let room = entry.room { return (room == name, false) }
            s.members[id]?.room = name
            return (true, true)
        }
    }

    // MARK: - The house's questions

    /// Makes a member (pairing, or an enrolment): its credential, or nil when enrolment is
    /// not the way in (`viaPairing` false and enrolment closed) or the house is full. A name
    /// that a member already has gets that member's place, unless that member was heard
    /// within the last 30 s before `now` (monotonic ns): a machine enrolling again (it lost
    /// its credential) does not leave a member behind, and two machines of one name (two
    /// followers of one room) are two members.
    public func add(name: String, viaPairing: Bool = false, at now: Int64? = nil) -> MemberKey? {
        let added = wallClock()
        return change { s in
            guard viaPairing || s.enrolment else { return (nil, false) }
            if !viaPairing, let same = s.members.values.first(where: { entry in
                let heard = entry.heard ?? loadedAt
                return entry.name == name && !(heard.map { heard in now.map { $0 - heard < Self.recentlySeen } ?? false } ?? false)
            }) {
                s.members[same.key.id] = nil
            }
            guard s.members.count < Self.limit,
                  let id = (1...UInt16.max - 1).lazy.first(where: { s.members[$0] == nil }) else { return (nil, false) }
            let key = MemberKey.generate(id: id)
            s.members[id] = Entry(key: key, name: name, room: nil, added: added)
            // Heard now: it is enrolling (a second machine of its name, enrolling before this
            // one said anything as the member, is one of its own too).
            s.members[id]?.heard = now
            return (key, true)
        }
    }

    /// Revokes member `id`: its key forgotten, enrolment closed, a new generation of the
    /// stream's key started (`switchDue` moves the stream to it). False: no such member.
    @discardableResult
    public func revoke(member id: UInt16) -> Bool {
        change { s in
            guard s.members.removeValue(forKey: id) != nil else { return (false, false) }
            Self.rekey(&s)
            return (true, true)
        }
    }

    /// Revokes the members speaking for room `name` (a room removed): their ids.
    public func revoke(room name: String) -> [UInt16] {
        change { s in
            let ids = s.members.values.filter { $0.room == name }.map(\.key.id)
            guard !ids.isEmpty else { return ([], false) }
            for id in ids { s.members[id] = nil }
            Self.rekey(&s)
            return (ids, true)
        }
    }

    private static func rekey(_ s: inout State) {
        s.enrolment = false
        let newest = s.next?.generation ?? s.current.generation
        s.next = (newest &+ 1 == ControlMessage.noGeneration ? 1 : newest &+ 1, SRTPMasterKey.generate(), nil)
    }

    /// Opens or closes enrolment by the house key.
    public func setEnrolment(_ open: Bool) {
        change { s in
            let changed = s.enrolment != open
            s.enrolment = open
            return ((), changed)
        }
    }

    public var enrolmentOpen: Bool { state.withLock { $0.enrolment } }

    /// The stream's key in use, and its generation.
    public var streamInUse: (generation: UInt32, key: SRTPMasterKey) { state.withLock { $0.current } }

    /// The stream's key to move to at `now`, if it is time: a newer generation is handed out
    /// and every member heard within the last 30 s holds it, or `switchDeadline` passed since
    /// it was first asked about.
    public func switchDue(at now: Int64) -> (generation: UInt32, key: SRTPMasterKey)? {
        change { s in
            guard let next = s.next else { return (nil, false) }
            let since = next.since ?? now
            if next.since == nil { s.next?.since = now }
            let waiting = s.members.values.contains { member in
                guard let heard = member.heard, now - heard < Self.recentlySeen else { return false }
                return member.holds != next.generation
            }
            guard !waiting || now - since >= Self.switchDeadline else { return (nil, false) }
            s.current = (next.generation, next.key)
            s.next = nil
            return ((next.generation, next.key), true)
        }
    }

    // MARK: - The stream's questions

    /// The stream (SSRC) each room is to play, as the house decides it (its zone's).
    public func setRoomStreams(_ streams: [String: UInt32]) {
        state.withLock { s in
            if s.roomStreams != streams { s.roomStreams = streams }
        }
    }

    /// The members a packet of stream `ssrc` is tagged for at `now` (`StreamTagKey`): those
    /// speaking for a room that plays it, heard within the last minute (a member gone quiet
    /// for longer is a machine switched off: its tag would only make every packet longer).
    /// At most `RoomRegistry.limit`, by id.
    public func streamTags(for ssrc: UInt32, at now: Int64) -> [StreamTagKey] {
        state.withLock { s in
            guard !s.roomStreams.isEmpty else { return [] }
            var tags: [StreamTagKey] = []
            for entry in s.members.values {
                guard let room = entry.room, s.roomStreams[room] == ssrc,
                      let heard = entry.heard, now - heard < 2 * Self.recentlySeen else { continue }
                tags.append(entry.streamTag)
            }
            tags.sort { $0.member < $1.member }
            return Array(tags.prefix(RoomRegistry.limit))
        }
    }

    public var members: [MemberView] {
        state.withLock { s in
            s.members.values.sorted { $0.key.id < $1.key.id }.map {
                MemberView(id: $0.key.id, name: $0.name, room: $0.room, added: $0.added, fingerprint: $0.key.fingerprint,
                           holds: $0.holds, lastHeard: $0.heard)
            }
        }
    }
}
