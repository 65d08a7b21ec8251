/// Where an AirPlay sender takes commands back (DACP, the protocol of iTunes' and the Music
/// app's remote control): the sender said, when it began to play, its remote's identity
/// (`DACP-ID`) and a token (`Active-Remote`) for it; it advertises an HTTP service
/// `iTunes_Ctrl_<DACP-ID>` of type `_dacp._tcp` on its own address, and takes
/// `GET /ctrl-int/1/<command>` with the token in an `Active-Remote` header. shairport-sync
/// hands all of it on through its metadata pipe (`ssnc` items `daid`, `acre`, `clip` and,
/// once it resolved the service, `dapo`): `AirPlayMetadata` gathers them here.
///
/// What arrives came from the sender, over the network: each field is held to what it is
/// (a hex identity, a decimal token, an address, a port), so that nothing a sender says can
/// write a second header or line into the request. Pure.
public struct SenderRemote: Sendable, Equatable {
    /// The sender's address (`clip`), as shairport-sync saw it connect.
    public var host: String
    /// The remote's port (`dapo`): nil until shairport-sync resolved it (the coordinator
    /// then looks for the service itself).
    public var port: UInt16?
    /// The remote's identity (`daid`): 16 hex digits.
    public var dacpID: String
    /// The token the sender gave its receiver for it (`acre`): a decimal number.
    public var activeRemote: String

    /// What a sender's remote takes, by the names DACP gives them.
    public enum Command: String, Sendable, CaseIterable {
        case play
        case pause
        case next = "nextitem"
        case previous = "previtem"
        case stop
    }

    /// A remote from the fields as the pipe carried them, or nil when one is missing or is
    /// not what it should be.
    public init?(host: String?, port: String?, dacpID: String?, activeRemote: String?) {
        guard let host = host.flatMap(Self.address), let dacpID, let activeRemote,
              (1...16).contains(dacpID.utf8.count), dacpID.utf8.allSatisfy(\.isHexDigit),
              (1...20).contains(activeRemote.utf8.count), activeRemote.utf8.allSatisfy(\.isDecimalDigit) else { return nil }
        self.host = host
        self.port = port.flatMap { UInt16($0) }.flatMap { $0 == 0 ? nil : $0 }
        self.dacpID = dacpID
        self.activeRemote = activeRemote
    }

    /// The name of the sender's service: DACP's identity, which some senders write with
    /// leading zeros and some without (shairport-sync compares them without).
    public func isService(named name: String) -> Bool {
        let prefix = "iTunes_Ctrl_"
        guard name.hasPrefix(prefix) else { return false }
        let trimmed = { (id: Substring) in id.drop { $0 == "0" }.uppercased() }
        return trimmed(name.dropFirst(prefix.count)) == trimmed(Substring(dacpID))
    }

    /// The path that gives the sender `command`.
    public static func path(_ command: Command) -> String { "/ctrl-int/1/\(command.rawValue)" }

    /// The request's own header: the token the sender gave for it.
    public var headers: [String: String] { ["Active-Remote": activeRemote] }

    /// What the sender is told when the house is (`housePlays`: whether the house plays
    /// now): its own transport follows ours, a toggle included (the house's state decides
    /// it, not the sender's, which a listener may have changed on the phone).
    /// `.next`/`.previous` go to the sender alone (its queue is the one that plays);
    /// seeking and the house's queue stay the house's.
    public static func command(for transport: TransportCommand, housePlays: Bool) -> Command? {
        switch transport {
        case .play: .play
        case .pause: .pause
        case .toggle: housePlays ? .pause : .play
        case .stop: .pause
        case .next: .next
        case .previous: .previous
        case .seek, .skip, .playItem: nil
        }
    }

    /// An IPv4 address, from one written as such or mapped into IPv6 (`::ffff:a.b.c.d`, as a
    /// dual-stack listener sees it); nil for anything else.
    static func address(_ text: String) -> String? {
        var text = Substring(text)
        if text.lowercased().hasPrefix("::ffff:") { text = text.dropFirst(7) }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ (1...3).contains($0.count) && $0.allSatisfy(\.isASCII) && UInt8($0) != nil })
        else { return nil }
        return String(text)
    }
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
    var isDecimalDigit: Bool { (0x30...0x39).contains(self) }
}
