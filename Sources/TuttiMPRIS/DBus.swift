import CDBus

/// A D-Bus value, as the bridge sends and reads them: the few types MPRIS uses.
public indirect enum DBusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case variant(DBusValue)
    /// An array of one element type (its signature).
    case array(String, [DBusValue])
    /// `a{sv}`: a dictionary of strings to variants, in order.
    case dictionary([(String, DBusValue)])

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case let (.string(x), .string(y)), let (.objectPath(x), .objectPath(y)): x == y
        case let (.bool(x), .bool(y)): x == y
        case let (.int32(x), .int32(y)): x == y
        case let (.int64(x), .int64(y)): x == y
        case let (.double(x), .double(y)): x == y
        case let (.variant(x), .variant(y)): x == y
        case let (.array(s, x), .array(t, y)): s == t && x == y
        case let (.dictionary(x), .dictionary(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Its D-Bus type signature.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int32: "i"
        case .int64: "x"
        case .double: "d"
        case .variant: "v"
        case let .array(element, _): "a" + element
        case .dictionary: "a{sv}"
        }
    }

    public static func strings(_ values: [String]) -> DBusValue { .array("s", values.map { .string($0) }) }
}

enum DBusType {
    static func code(_ c: Character) -> Int32 { Int32(c.asciiValue!) }
    static let string = code("s"), objectPath = code("o"), boolean = code("b"), int32 = code("i"), int64 = code("x")
    static let uint32 = code("u"), uint64 = code("q"), double = code("d"), variant = code("v"), array = code("a")
    static let dictEntry = code("e"), invalid: Int32 = 0
}

extension DBusValue {
    /// Appends this value at `iter`.
    func append(to iter: inout DBusMessageIter) {
        switch self {
        case let .string(text), let .objectPath(text):
            text.withCString { pointer in
                var p: UnsafePointer<CChar>? = pointer
                _ = dbus_message_iter_append_basic(&iter, signature == "s" ? DBusType.string : DBusType.objectPath, &p)
            }
        case let .bool(value):
            var v: dbus_bool_t = value ? 1 : 0
            _ = dbus_message_iter_append_basic(&iter, DBusType.boolean, &v)
        case let .int32(value):
            var v = value
            _ = dbus_message_iter_append_basic(&iter, DBusType.int32, &v)
        case let .int64(value):
            var v = value
            _ = dbus_message_iter_append_basic(&iter, DBusType.int64, &v)
        case let .double(value):
            var v = value
            _ = dbus_message_iter_append_basic(&iter, DBusType.double, &v)
        case let .variant(inner):
            var sub = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iter, DBusType.variant, inner.signature, &sub)
            inner.append(to: &sub)
            _ = dbus_message_iter_close_container(&iter, &sub)
        case let .array(element, items):
            var sub = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iter, DBusType.array, element, &sub)
            for item in items { item.append(to: &sub) }
            _ = dbus_message_iter_close_container(&iter, &sub)
        case let .dictionary(entries):
            var sub = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iter, DBusType.array, "{sv}", &sub)
            for (key, value) in entries {
                var entry = DBusMessageIter()
                _ = dbus_message_iter_open_container(&sub, DBusType.dictEntry, nil, &entry)
                DBusValue.string(key).append(to: &entry)
                DBusValue.variant(value).append(to: &entry)
                _ = dbus_message_iter_close_container(&sub, &entry)
            }
            _ = dbus_message_iter_close_container(&iter, &sub)
        }
    }

    /// The value at `iter` (nil for a type the bridge does not read).
    static func read(_ iter: inout DBusMessageIter) -> DBusValue? {
        switch dbus_message_iter_get_arg_type(&iter) {
        case DBusType.string, DBusType.objectPath:
            var p: UnsafePointer<CChar>?
            let type = dbus_message_iter_get_arg_type(&iter)
            dbus_message_iter_get_basic(&iter, &p)
            let text = p.map { String(cString: $0) } ?? ""
            return type == DBusType.string ? .string(text) : .objectPath(text)
        case DBusType.boolean:
            var v: dbus_bool_t = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .bool(v != 0)
        case DBusType.int32:
            var v: Int32 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .int32(v)
        case DBusType.int64:
            var v: Int64 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .int64(v)
        case DBusType.double:
            var v: Double = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .double(v)
        case DBusType.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return read(&sub).map { .variant($0) }
        default:
            return nil
        }
    }

    /// A message's arguments.
    static func arguments(of message: OpaquePointer) -> [DBusValue?] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue?] = []
        repeat { values.append(read(&iter)) } while dbus_message_iter_next(&iter) != 0
        return values
    }

    /// Unwraps variants.
    var plain: DBusValue { if case let .variant(inner) = self { return inner.plain } else { return self } }
}

/// A connection to the session bus, used from one thread: it owns a name, answers method
/// calls through `handle`, and sends signals.
public final class DBusConnection: @unchecked Sendable {
    let connection: OpaquePointer

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Connects to the session bus (`$DBUS_SESSION_BUS_ADDRESS`) and owns `name`.
    public init(owning name: String) throws(Failure) {
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error) else {
            defer { dbus_error_free(&error) }
            throw Failure(description: "cannot connect to the session bus: \(error.message.map { String(cString: $0) } ?? "?") "
                          + "(a desktop session has one; or run under dbus-run-session)")
        }
        self.connection = connection
        dbus_connection_set_exit_on_disconnect(connection, 0)
        let reply = dbus_bus_request_name(connection, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        if dbus_error_is_set(&error) != 0 {
            defer { dbus_error_free(&error) }
            throw Failure(description: "cannot own \(name) on the session bus: \(error.message.map { String(cString: $0) } ?? "?")")
        }
        guard reply == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER else {
            throw Failure(description: "\(name) is already on the session bus: is another `tutti mpris` running?")
        }
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// A method call taken from the bus.
    public struct Call {
        public let path: String
        public let interface: String
        public let member: String
        public let arguments: [DBusValue?]
        let message: OpaquePointer
    }

    /// What a call is answered with.
    public enum Answer {
        case values([DBusValue])
        case error(name: String, message: String)
    }

    /// Waits up to `milliseconds` for traffic, then answers each method call that came.
    /// False once the bus connection is gone.
    public func turn(milliseconds: Int32, handle: (Call) -> Answer) -> Bool {
        guard dbus_connection_read_write(connection, milliseconds) != 0 else { return false }
        while let message = dbus_connection_pop_message(connection) {
            defer { dbus_message_unref(message) }
            guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL else { continue }
            let call = Call(path: dbus_message_get_path(message).map { String(cString: $0) } ?? "",
                            interface: dbus_message_get_interface(message).map { String(cString: $0) } ?? "",
                            member: dbus_message_get_member(message).map { String(cString: $0) } ?? "",
                            arguments: DBusValue.arguments(of: message), message: message)
            let reply: OpaquePointer?
            switch handle(call) {
            case let .values(values):
                reply = dbus_message_new_method_return(message)
                if let reply {
                    var iter = DBusMessageIter()
                    dbus_message_iter_init_append(reply, &iter)
                    for value in values { value.append(to: &iter) }
                }
            case let .error(name, text):
                reply = dbus_message_new_error(message, name, text)
            }
            if let reply, dbus_message_get_no_reply(message) == 0 {
                _ = dbus_connection_send(connection, reply, nil)
            }
            if let reply { dbus_message_unref(reply) }
        }
        dbus_connection_flush(connection)
        return true
    }

    /// Sends a signal.
    public func signal(path: String, interface: String, name: String, _ values: [DBusValue]) {
        guard let message = dbus_message_new_signal(path, interface, name) else { return }
        defer { dbus_message_unref(message) }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values { value.append(to: &iter) }
        _ = dbus_connection_send(connection, message, nil)
        dbus_connection_flush(connection)
    }
}
