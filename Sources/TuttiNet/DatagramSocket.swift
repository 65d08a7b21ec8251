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
    /// Asks for arrival stamps of the kernel's; false where there are none.
    func enableReceiveTimestamps() -> Bool
    func localAddress() throws(SystemError) -> SocketAddress
}

extension UDPSocket: DatagramSocket {}
