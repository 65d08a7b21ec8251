/// The house's members as the coordinator's clock port knows them (docs/security.md,
/// "Members"): each member's own key, whether holders of the house key may still enrol
/// (member 0), and the stream's key sealed for each. TuttiSecurity's `HouseKeyring` is the
/// coordinator's; tests of pure logic use `OneKey`.
public protocol MemberKeys: Sendable {
    /// Member `id`'s clock-port key; for 0, the house key's while holders of the house key
    /// may enrol; nil for a member the house does not know (never was, or revoked).
    func clockKey(member id: UInt16) -> (any MessageAuthenticator)?
    /// Makes a member named `name`: its id, and its secret sealed for the holder of the
    /// house key that asked, at `now` (monotonic ns); nil when enrolment is closed or the
    /// house has all the members it takes.
    func enroll(name: String, at now: Int64) -> (member: UInt16, sealed: [UInt8])?
    /// The newest generation of the stream's key (the header of every coordinator message
    /// carries it, so that members ask for it when theirs is older).
    var streamGeneration: UInt32 { get }
    /// The newest generation of the stream's key, sealed for member `id`; nil when the
    /// stream's key is not given out (an unsealed stream, or a test).
    func streamKey(for id: UInt16) -> (generation: UInt32, sealed: [UInt8])?
    /// Member `id` says it holds `generation` (the coordinator moves the stream to a new key
    /// once the members hold it).
    func holds(member id: UInt16, generation: UInt32, at now: Int64)
    /// A message of member `id` came at `now` (the members heard lately are waited for).
    func heard(member id: UInt16, at now: Int64)
    /// Whether member `id` may report room `name` (a member speaks for one room: the first it
    /// reports). False refuses the report.
    func mayReport(member id: UInt16, room name: String) -> Bool
}

/// A house of one key, whose holders are all member 0: the clock port as it was before
/// members had keys of their own. No enrolment, no stream key given out. For tests of pure
/// logic, and the simulated house.
public struct OneKey: MemberKeys {
    public let key: any MessageAuthenticator
    public init(_ key: any MessageAuthenticator) { self.key = key }
    public func clockKey(member id: UInt16) -> (any MessageAuthenticator)? { id == 0 ? key : nil }
    public func enroll(name: String, at now: Int64) -> (member: UInt16, sealed: [UInt8])? { nil }
    public var streamGeneration: UInt32 { 0 }
    public func streamKey(for id: UInt16) -> (generation: UInt32, sealed: [UInt8])? { nil }
    public func holds(member id: UInt16, generation: UInt32, at now: Int64) {}
    public func heard(member id: UInt16, at now: Int64) {}
    public func mayReport(member id: UInt16, room name: String) -> Bool { true }

    /// What seals a "not paired" notice: nothing (it carries no tag).
    static let unsigned = Unsigned()
    struct Unsigned: MessageAuthenticator {
        func tag(_ bytes: ArraySlice<UInt8>) -> [UInt8] { [UInt8](repeating: 0, count: ControlMessage.tagSize) }
        func verify(_ tag: ArraySlice<UInt8>, for bytes: ArraySlice<UInt8>) -> Bool { false }
    }
}

/// Which sequence numbers of one member the coordinator took: the highest, and the 64 below
/// it (messages overtake each other on the way). Each number is taken once; one 64 or more
/// below the highest is too old to tell, and refused: a replay.
public struct SequenceWindow: Sendable, Equatable {
    public private(set) var highest: UInt64 = 0
    /// Bit i: `highest - i` was taken.
    private var seen: UInt64 = 0

    public init() {}

    /// Takes `sequence`: true when it is new.
    public mutating func take(_ sequence: UInt64) -> Bool {
        guard sequence != 0 else { return false }
        if sequence > highest {
            let shift = sequence - highest
            seen = shift >= 64 ? 1 : seen << shift | 1
            highest = sequence
            return true
        }
        let back = highest - sequence
        guard back < 64, seen & (1 << back) == 0 else { return false }
        seen |= 1 << back
        return true
    }
}
