import Dispatch
import TuttiCore
import TuttiDiscovery
import TuttiNet
import TuttiWeb

/// Gives an AirPlay sender a command the house was given (DACP: `SenderRemote`), on a
/// thread of its own: a sender that is slow to answer, or gone, never holds up the house.
enum SenderControl {
    enum Failure: Error, CustomStringConvertible {
        /// Its remote is not (or no longer) announced, and shairport-sync did not say its port.
        case notAnnounced(String)
        case unreachable(String)
        /// It answered, but not with a success.
        case refused(String)

        var description: String {
            switch self {
            case let .notAnnounced(why): "its remote control is not announced on the network (\(why))"
            case let .unreachable(why): "its remote control cannot be reached: \(why)"
            case let .refused(answer): "it refused: \(answer)"
            }
        }
    }

    static let queue = DispatchQueue(label: "tutti.senders")

    /// Sends `command` to `remote` and waits for its answer (at most `timeout` seconds for
    /// each of finding the port, connecting and answering).
    static func send(_ command: SenderRemote.Command, to remote: SenderRemote, clock: any MonotonicClock,
                     timeout: Double = 2) throws(Failure) {
        let port: UInt16
        if let known = remote.port {
            port = known
        } else {
            // shairport-sync says the port only when it resolved the service itself.
            let found: [Discovery.Found]
            do {
                found = try Discovery.browse(type: "_dacp._tcp", timeout: timeout, clock: clock)
            } catch {
                throw .notAnnounced("\(error)")
            }
            guard let service = found.first(where: { remote.isService(named: $0.name) }) else {
                throw .notAnnounced("no iTunes_Ctrl_\(remote.dacpID) among \(found.count) _dacp._tcp services")
            }
            port = service.clockPort
        }
        var http = HTTPClient(host: remote.host, port: port)
        http.timeout = timeout
        let answer: HTTPClient.Response
        do {
            answer = try http.request("GET", SenderRemote.path(command), headers: remote.headers)
        } catch {
            throw .unreachable("\(remote.host):\(port): \(error)")
        }
        guard (200..<300).contains(answer.status) else { throw .refused("HTTP \(answer.status)") }
    }
}
