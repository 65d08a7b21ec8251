import CAvahi
import TuttiNet

extension Discovery {
    /// Announces a coordinator on the network for as long as it lives, on avahi's thread of
    /// its own. Without a running avahi-daemon it says so once and announces when one
    /// starts (and again after the daemon restarts); a name taken by another house gets
    /// the next free one ("Home #2").
    public final class Publisher: @unchecked Sendable {
        private let poll: OpaquePointer
        private var client: OpaquePointer?
        private var group: OpaquePointer?
        private var announcement: Announcement
        private let log = Log("coordinator")
        private var toldNoDaemon = false
        private var box: Unmanaged<Publisher>?

        public init(_ announcement: Announcement) throws(Failure) {
            guard let poll = avahi_threaded_poll_new() else { throw .failed("out of memory") }
            self.poll = poll
            self.announcement = announcement
            let box = Unmanaged.passUnretained(self)
            self.box = box
            var error: Int32 = 0
            client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, Self.clientChanged, box.toOpaque(), &error)
            // (deinit frees the poll: it runs for an init that throws here.)
            guard client != nil else {
                throw error == AVAHI_ERR_NO_DAEMON || error == AVAHI_ERR_DBUS_ERROR ? .noDaemon(message(error)) : .failed(message(error))
            }
            avahi_threaded_poll_start(poll)
        }

        /// Announces `records` from now on in place of the old ones (a renewed proof).
        public func update(records: [String: String]) {
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            announcement.records = records
            guard let group, avahi_entry_group_is_empty(group) == 0 else { return }
            var list: UnsafeMutablePointer<AvahiStringList>?
            for string in Discovery.strings(records).reversed() { list = avahi_string_list_add(list, string) }
            defer { avahi_string_list_free(list) }
            let result = avahi_entry_group_update_service_txt_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET),
                                                                      AvahiPublishFlags(0), announcement.name, serviceType, nil, list)
            if result < 0 { log.warning("cannot renew the announcement on the network: \(message(result))") }
        }

        /// Announces `service` too, from now on.
        public func add(_ service: Discovery.Service) {
            avahi_threaded_poll_lock(poll)
            defer { avahi_threaded_poll_unlock(poll) }
            announcement.also.append(service)
            guard let group, let client else { return }
            avahi_entry_group_reset(group)
            publish(client)
        }

        /// Withdraws the announcement.
        public func stop() {
            avahi_threaded_poll_stop(poll)
            if let client { avahi_client_free(client) }
            client = nil
            group = nil
        }

        deinit {
            if client != nil { stop() }
            avahi_threaded_poll_free(poll)
        }

        /// The client's state changes, handed to the publisher they are for (on avahi's thread).
        private static let clientChanged: AvahiClientCallback = { client, state, userdata in
            guard let userdata, let client else { return }
            Unmanaged<Publisher>.fromOpaque(userdata).takeUnretainedValue().changed(client, state)
        }

        /// On avahi's thread.
        private func changed(_ client: OpaquePointer, _ state: AvahiClientState) {
            switch state {
            case AVAHI_CLIENT_S_RUNNING:
                publish(client)
            case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
                if let group { avahi_entry_group_reset(group) }
            case AVAHI_CLIENT_CONNECTING:
                if !toldNoDaemon {
                    log.warning("not announced on the network: avahi-daemon is not running (followers need --coordinator HOST "
                                + "until it runs; announced as soon as it does)")
                    toldNoDaemon = true
                }
            case AVAHI_CLIENT_FAILURE:
                // The daemon went away: a new client waits for it to come back.
                group = nil
                avahi_client_free(client)
                self.client = nil
                var error: Int32 = 0
                self.client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, Self.clientChanged, box?.toOpaque(), &error)
            default:
                break
            }
        }

        private func publish(_ client: OpaquePointer) {
            if group == nil {
                let groupChanged: AvahiEntryGroupCallback = { group, state, userdata in
                    guard let userdata, let group else { return }
                    Unmanaged<Publisher>.fromOpaque(userdata).takeUnretainedValue().groupChanged(group, state)
                }
                group = avahi_entry_group_new(client, groupChanged, box?.toOpaque())
            }
            guard let group else { return }
            guard avahi_entry_group_is_empty(group) != 0 else { return }
            var list: UnsafeMutablePointer<AvahiStringList>?
            for string in Discovery.strings(announcement.records).reversed() { list = avahi_string_list_add(list, string) }
            defer { avahi_string_list_free(list) }
            var result = avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), AvahiPublishFlags(0), announcement.name,
                                                              serviceType, nil, nil, announcement.clockPort, list)
            for service in announcement.also where result >= 0 {
                var records: UnsafeMutablePointer<AvahiStringList>?
                for string in Discovery.strings(service.records).reversed() { records = avahi_string_list_add(records, string) }
                defer { avahi_string_list_free(records) }
                result = avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), AvahiPublishFlags(0),
                                                              announcement.name, service.type, nil, nil, service.port, records)
            }
            if result == AVAHI_ERR_COLLISION {
                avahi_entry_group_reset(group)
                rename()
                return publish(client)
            }
            if result >= 0 { result = avahi_entry_group_commit(group) }
            if result < 0 { log.warning("cannot announce '\(announcement.name)' on the network: \(message(result))") }
        }

        private func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
            switch state {
            case AVAHI_ENTRY_GROUP_ESTABLISHED:
                log.info("announced on the network as '\(announcement.name)' (\(([serviceType] + announcement.also.map(\.type)).joined(separator: ", ")), mDNS)")
            case AVAHI_ENTRY_GROUP_COLLISION:
                rename()
                avahi_entry_group_reset(group)
                if let client = avahi_entry_group_get_client(group) { publish(client) }
            case AVAHI_ENTRY_GROUP_FAILURE:
                log.warning("announcing on the network failed: \(message(avahi_client_errno(avahi_entry_group_get_client(group))))")
            default:
                break
            }
        }

        private func rename() {
            guard let next = avahi_alternative_service_name(announcement.name) else { return }
            let name = String(cString: next)
            avahi_free(next)
            log.info("the name '\(announcement.name)' is taken on the network: announced as '\(name)'")
            announcement.name = name
        }
    }
}
