import CAvahi
import TuttiCore
import TuttiNet

extension Discovery {
    /// Looks for coordinators (or another service `type`: an AirPlay sender's remote,
    /// `_dacp._tcp`) for up to `timeout` seconds (on the calling thread): returns as soon as
    /// avahi has told all it knows and every one found is resolved, at most `timeout` later.
    public static func browse(type: String = serviceType, timeout: Double = 3, clock: any MonotonicClock) throws(Failure) -> [Found] {
        guard let poll = avahi_simple_poll_new() else { throw .failed("out of memory") }
        defer { avahi_simple_poll_free(poll) }
        let search = Search()
        let box = Unmanaged.passRetained(search)
        defer { box.release() }
        var error: Int32 = 0
        guard let client = avahi_client_new(avahi_simple_poll_get(poll), AvahiClientFlags(0), nil, nil, &error) else {
            throw error == AVAHI_ERR_NO_DAEMON || error == AVAHI_ERR_DBUS_ERROR ? .noDaemon(message(error)) : .failed(message(error))
        }
        defer { avahi_client_free(client) }
        let browsed: AvahiServiceBrowserCallback = { browser, interface, proto, event, name, type, domain, _, userdata in
            guard let userdata, let browser else { return }
            let search = Unmanaged<Search>.fromOpaque(userdata).takeUnretainedValue()
            switch event {
            case AVAHI_BROWSER_NEW:
                let resolved: AvahiServiceResolverCallback = { resolver, _, _, event, name, _, _, _, address, port, txt, _, userdata in
                    guard let userdata else { return }
                    let search = Unmanaged<Search>.fromOpaque(userdata).takeUnretainedValue()
                    search.pending -= 1
                    if event == AVAHI_RESOLVER_FOUND, let address, let name {
                        var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
                        avahi_address_snprint(&text, text.count, address)
                        search.found.append(Found(name: String(cString: name), host: System.string(filledBy: text), clockPort: port,
                                                  records: Discovery.records(Discovery.strings(of: txt))))
                    }
                    avahi_service_resolver_free(resolver)
                }
                let client = avahi_service_browser_get_client(browser)
                if avahi_service_resolver_new(client, interface, proto, name, type, domain, AvahiProtocol(AVAHI_PROTO_INET), AvahiLookupFlags(0),
                                              resolved, userdata) != nil {
                    search.pending += 1
                }
            case AVAHI_BROWSER_ALL_FOR_NOW:
                search.allForNow = true
            case AVAHI_BROWSER_FAILURE:
                search.failure = Discovery.message(avahi_client_errno(avahi_service_browser_get_client(browser)))
            default:
                break
            }
        }
        guard let browser = avahi_service_browser_new(client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), type, nil, AvahiLookupFlags(0),
                                                      browsed, box.toOpaque()) else {
            throw .failed(message(avahi_client_errno(client)))
        }
        defer { avahi_service_browser_free(browser) }
        let deadline = clock.nanosecondsNow() + Int64(timeout * 1e9)
        while clock.nanosecondsNow() < deadline {
            if search.allForNow && search.pending == 0 { break }
            if let failure = search.failure { throw .failed(failure) }
            let left = Int32(max(1, (deadline - clock.nanosecondsNow()) / 1_000_000))
            guard avahi_simple_poll_iterate(poll, min(left, 100)) >= 0 else { break }
        }
        // The same coordinator seen on two interfaces is one.
        var seen = Set<String>()
        return search.found.filter { seen.insert($0.name + "|" + $0.clockAddress).inserted }.sorted { $0.name < $1.name }
    }

    /// A TXT record list's strings.
    static func strings(of list: UnsafeMutablePointer<AvahiStringList>?) -> [String] {
        var strings: [String] = []
        var item = list
        while let current = item {
            let size = Int(avahi_string_list_get_size(current))
            if let text = avahi_string_list_get_text(current) {
                strings.append(String(decoding: UnsafeBufferPointer(start: text, count: size), as: UTF8.self))
            }
            item = avahi_string_list_get_next(current)
        }
        return strings
    }

    /// What one browse gathered (its callbacks run on the browsing thread).
    final class Search {
        var found: [Found] = []
        var pending = 0
        var allForNow = false
        var failure: String?
    }
}
