import CAvahi
import TuttiNet

/// How a coordinator is found on the house's network: DNS-SD over mDNS (RFC 6763, RFC
/// 6762) through the system's avahi-daemon, as the service type `_tutti._udp` on the
/// clock port, with TXT records saying the rest (docs/protocol.md). The only importer of
/// libavahi-client.
public enum Discovery {
    public static let serviceType = "_tutti._udp"

    /// What a coordinator says about itself in its TXT records.
    public struct Announcement: Sendable, Equatable {
        /// The house's name: the service's instance name.
        public var name: String
        /// The clock service's port: the service's port.
        public var clockPort: UInt16
        public var records: [String: String]
        /// Other services of the coordinator's under the same name (its Sendspin server).
        public var also: [Service]

        public init(name: String, clockPort: UInt16, records: [String: String], also: [Service] = []) {
            self.name = name
            self.clockPort = clockPort
            self.records = records
            self.also = also
        }
    }

    /// A service announced beside the coordinator's own: its type, port and TXT records.
    public struct Service: Sendable, Equatable {
        public var type: String
        public var port: UInt16
        public var records: [String: String]
        public init(type: String, port: UInt16, records: [String: String]) {
            self.type = type
            self.port = port
            self.records = records
        }
    }

    /// A coordinator found on the network.
    public struct Found: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        /// Its IPv4 address, dotted.
        public var host: String
        public var clockPort: UInt16
        public var records: [String: String]

        /// HOST:PORT of its clock service.
        public var clockAddress: String { "\(host):\(clockPort)" }

        /// Whether it proves itself with `check` (a `DiscoveryProof` that verifies a record
        /// for a message): a proof over what it says, from the host it names among its
        /// addresses, made lately: its `t` record (Unix seconds, renewed every hour) no older
        /// than `Discovery.freshness` before `now` (an announcement recorded and replayed later,
        /// from an address the coordinator has left, proves nothing; one from the future is
        /// taken: a machine that booted with a stale clock must still find its house).
        public func proves(_ record: String, with check: (String, [UInt8]) -> Bool,
                           now: Int64 = SystemClock.wallNanoseconds() / 1_000_000_000) -> Bool {
            guard let tag = records[record], (records["addresses"] ?? "").split(separator: ",").contains(Substring(host)),
                  let made = records["t"].flatMap({ Int64($0) }), made >= now - Discovery.freshness else { return false }
            return check(tag, Discovery.proofMessage(clockPort: clockPort, records: records))
        }

        /// Its control API's address, from the `control` and `tls` records.
        public var controlURL: String? {
            guard let port = records["control"].flatMap(UInt16.init) else { return nil }
            return "\(records["tls"] == "1" ? "https" : "http")://\(host):\(port)"
        }

        public var description: String {
            "'\(name)' at \(clockAddress)" + (records["house-key"].map { " (house key \($0))" } ?? "")
        }
    }

    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// No avahi-daemon (or no system bus) to ask.
        case noDaemon(String)
        case failed(String)

        public var description: String {
            switch self {
            case let .noDaemon(why): "cannot look for a coordinator on the network: avahi-daemon is not running (\(why))"
            case let .failed(why): "looking for a coordinator on the network failed: \(why)"
            }
        }
    }

    static func message(_ code: Int32) -> String { String(cString: avahi_strerror(code)) }

    /// How old an announcement's proof may be (seconds): a day. The coordinator renews it
    /// every hour (`renewal`).
    public static let freshness: Int64 = 86_400
    public static let renewal: Int64 = 3_600

    /// The records that carry the proofs of an announcement (`DiscoveryProof`): the members'
    /// (house key) and the controllers' (token).
    public static let proofRecords = ["proof", "proof-token"]

    /// What an announcement's proofs are made over: its clock port and its records but the
    /// proofs, sorted, one `key=value` a line. (Not its name: avahi-daemon renames a service
    /// whose name another has.) The `addresses` record, among them, says where the
    /// coordinator is: an announcement replayed from another host does not prove that host.
    public static func proofMessage(clockPort: UInt16, records: [String: String]) -> [UInt8] {
        var text = "tutti announcement v1\nclock=\(clockPort)\n"
        for key in records.keys.sorted() where !proofRecords.contains(key) { text += "\(key)=\(records[key]!)\n" }
        return Array(text.utf8)
    }

    /// The TXT records as `key=value` strings, sorted.
    static func strings(_ records: [String: String]) -> [String] {
        records.keys.sorted().map { "\($0)=\(records[$0]!)" }
    }

    /// Records from TXT strings (`key=value`; a bare `key` is an empty value).
    public static func records(_ strings: [String]) -> [String: String] {
        var records: [String: String] = [:]
        for string in strings {
            let key = String(string.prefix { $0 != "=" }).lowercased()
            guard !key.isEmpty, records[key] == nil else { continue }
            records[key] = String(string.dropFirst(key.count + 1))
        }
        return records
    }

    /// Which coordinator to follow among those found: the only one; else the only one of
    /// the house whose key fingerprint is `houseKey`; else an error that lists them.
    /// `proven`: when given, only those it says prove themselves count (a client that holds
    /// the house key or its token follows, or talks to, no other).
    public static func choose(_ found: [Found], houseKey: String?, proven: ((Found) -> Bool)? = nil) -> Result<Found, Choice> {
        var found = found
        if let proven {
            let unproven = found.filter { !proven($0) }
            found.removeAll { !proven($0) }
            if found.isEmpty, !unproven.isEmpty { return .failure(.unproven(unproven)) }
        }
        if found.count == 1 { return .success(found[0]) }
        if found.isEmpty { return .failure(.none) }
        if let houseKey {
            let ours = found.filter { $0.records["house-key"] == houseKey }
            if ours.count == 1 { return .success(ours[0]) }
        }
        return .failure(.several(found))
    }

    public enum Choice: Error, CustomStringConvertible, Equatable {
        case none
        case several([Found])
        /// Announced, but none proves itself the house's (another house, or a stranger).
        case unproven([Found])

        public var description: String { description(naming: "--coordinator HOST[:PORT]") }

        /// The message, naming the option that gives an address (`--server URL` for `ctl`).
        public func description(naming option: String) -> String {
            switch self {
            case .none: return "no coordinator answered on the network (mDNS, \(Discovery.serviceType)): give its address with \(option)"
            case let .several(found):
                return "\(found.count) coordinators on the network: "
                    + found.map(\.description).joined(separator: "; ") + "; choose one with \(option)"
            case let .unproven(found):
                return "a coordinator is announced on the network (" + found.map(\.description).joined(separator: "; ")
                    + "), but none proves it is this house's (another house's, or a stranger's): not trusted; "
                    + "give the coordinator's address with \(option)"
            }
        }
    }
}

extension Discovery {
    /// The coordinator to follow when none was named, waiting for one to be announced (a
    /// room's machine may start before the coordinator, or before avahi-daemon): browses
    /// (`lookup`) every `interval` seconds until one is found, telling `notice` once why it
    /// waits; then `choose`s (preferring the house whose key is `houseKey`'s fingerprint).
    /// Several houses with none of this key's is an error at once: the user must choose.
    public static func awaitCoordinator(houseKey: String?, proven: ((Found) -> Bool)? = nil, interval: Double = 5, notice: (String) -> Void,
                                        lookup: () throws(Failure) -> [Found],
                                        pause: (Double) -> Void = { System.sleep(nanoseconds: Int64($0 * 1e9)) }) throws(LookupError) -> Found {
        var told = false
        while true {
            let why: String
            switch Result(catching: lookup).map({ choose($0, houseKey: houseKey, proven: proven) }) {
            case let .success(.success(one)): return one
            case .success(.failure(.none)): why = "no coordinator is announced on the network yet (mDNS, \(serviceType))"
            case let .success(.failure(.unproven(found))):
                // Perhaps its own house's coordinator is yet to come: it waits.
                why = Choice.unproven(found).description
            case let .success(.failure(several)): throw LookupError(description: several.description)
            case let .failure(failure): why = failure.description
            }
            if !told {
                notice("\(why); looking again every \(Int(interval)) s (or give its address with --coordinator HOST[:PORT])")
                told = true
            }
            pause(interval)
        }
    }

    /// The Sendspin server announced on the network (`_sendspin-server._tcp`), as
    /// `ws://ADDRESS:PORT/PATH`: waits (saying so once) until one is; several are refused
    /// with their names and addresses, for the user to choose.
    public static func awaitSendspinServer(interval: Double = 5, notice: (String) -> Void, lookup: () throws(Failure) -> [Found],
                                           pause: (Double) -> Void = { System.sleep(nanoseconds: Int64($0 * 1e9)) }) throws(LookupError) -> String {
        var told = false
        while true {
            let why: String
            switch Result(catching: lookup) {
            case let .success(found) where found.count == 1:
                let path = found[0].records["path"].map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/sendspin"
                return "ws://\(found[0].host):\(found[0].clockPort)\(path)"
            case let .success(found) where found.count > 1:
                throw LookupError(description: "\(found.count) Sendspin servers on the network: "
                                  + found.map { "'\($0.name)' at \($0.host):\($0.clockPort)" }.joined(separator: ", ")
                                  + "; choose one with --sendspin ws://HOST:PORT/sendspin")
            case .success:
                why = "no Sendspin server is announced on the network yet (mDNS, _sendspin-server._tcp)"
            case let .failure(failure):
                why = failure.description
            }
            if !told {
                notice("\(why); looking again every \(Int(interval)) s (or give its address with --sendspin ws://HOST:PORT/sendspin)")
                told = true
            }
            pause(interval)
        }
    }

    public struct LookupError: Error, CustomStringConvertible {
        public let description: String
    }
}
