/// What a follower's shells need of a UDP socket: the real one (`UDPSocket`), or in the
/// tests an endpoint of an in-memory network on a manual clock, so that the follower's own
/// loop runs in a simulated house. `receivedAt` is the arrival on the follower's clock.
public protocol DatagramSocket: AnyObject {
    /// Sends a datagram; with `wait: false` it never blocks.
    func send(_ bytes: [UInt8], to address: SocketAddress, wait: Bool) throws(SystemError)
    /// Waits up to `timeoutMilliseconds` for a datagram; nil on timeout.
    func receive(timeoutMilliseconds: Int32) throws(SystemError) -> Datagram?
    /// A datagram already waiting, without waiting for one.
    func receiveWaiting() throws(SystemError) -> Datagram?
    /// A datagram already waiting, its bytes written into `spare`'s storage (kept when it is
    /// not shared and has room: no allocation), which the datagram then holds (`spare` is
    /// left empty); nil, with `spare` as it was, when none is waiting.
    func receiveWaiting(reusing spare: inout [UInt8]) throws(SystemError) -> Datagram?
    /// Asks for arrival stamps of the kernel's; false where there are none.
    func enableReceiveTimestamps() -> Bool
    func localAddress() throws(SystemError) -> SocketAddress
}

extension DatagramSocket {
    /// For a socket that makes each datagram's bytes anew (the tests' in-memory network).
    public func receiveWaiting(reusing spare: inout [UInt8]) throws(SystemError) -> Datagram? {
        try receiveWaiting()
    }
}

extension UDPSocket: DatagramSocket {}

/// The storage of the last `count` datagrams received, to receive into again: a datagram's
/// bytes live on after it is read (a stream packet's payload is a view of them in the jitter
/// buffer until it is played), and are written over only once nothing holds them. Taken in
/// turn, a slot's storage is reused when its last reader has let go, and replaced (one
/// allocation) when one still holds it; so with more slots than datagrams alive at once, a
/// steady stream is received without an allocation.
public struct RecycledStorage {
    private var slots: [[UInt8]]
    private var next = 0

    public init(count: Int) {
        precondition(count > 0)
        slots = Array(repeating: [], count: count)
    }

    /// The storage to receive the next datagram into (`receiveWaiting(reusing:)`).
    public mutating func take() -> [UInt8] {
        var storage: [UInt8] = []
        swap(&storage, &slots[next])
        return storage
    }

    /// What the datagram received into the storage `take` gave holds now (the storage
    /// itself, or a replacement): it is taken again `count` datagrams later.
    public mutating func keep(_ bytes: [UInt8]) {
        slots[next] = bytes
        next = (next + 1) % slots.count
    }
}
