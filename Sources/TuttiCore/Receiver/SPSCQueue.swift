import Synchronization

/// A bounded lock-free queue between exactly one producer thread and one consumer thread:
/// neither ever waits for the other. `push` fails when the queue is full (the producer
/// counts and drops); `pop` returns nil when it is empty.
///
/// This is how the follower's threads hand things to its playout thread (packets, clock
/// exchanges, the coordinator's messages) and how the playout thread hands back what it
/// measured: the real-time thread takes no lock any other thread holds.
///
/// The producer owns `tail`, the consumer `head`; each publishes its index with release
/// ordering after touching the slot, and reads the other's with acquire ordering, so a
/// slot is never read before it is written nor written before it is read.
public final class SPSCQueue<Element: Sendable>: @unchecked Sendable {
    public let capacity: Int
    private let mask: Int
    private let slots: UnsafeMutablePointer<Element?>
    /// The next slot to read; written by the consumer only.
    private let head = Atomic<Int>(0)
    /// The next slot to write; written by the producer only.
    private let tail = Atomic<Int>(0)

    /// - Parameter capacity: rounded up to a power of two.
    public init(capacity: Int) {
        var size = 1
        while size < max(1, capacity) { size <<= 1 }
        self.capacity = size
        mask = size - 1
        slots = .allocate(capacity: size)
        slots.initialize(repeating: nil, count: size)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
    }

    /// Producer only: appends `element`; false, and nothing appended, when the queue is full.
    @discardableResult
    public func push(_ element: Element) -> Bool {
        let t = tail.load(ordering: .relaxed)
        guard t &- head.load(ordering: .acquiring) < capacity else { return false }
        slots[t & mask] = element
        tail.store(t &+ 1, ordering: .releasing)
        return true
    }

    /// Consumer only: the oldest element, moved out of the queue; nil when it is empty.
    public func pop() -> Element? {
        let h = head.load(ordering: .relaxed)
        guard h != tail.load(ordering: .acquiring) else { return nil }
        let element = slots[h & mask].take()
        head.store(h &+ 1, ordering: .releasing)
        return element
    }

    /// Consumer only: pops everything queued now, oldest first; returns how many.
    @discardableResult
    public func drain(_ body: (Element) -> Void) -> Int {
        var count = 0
        while let element = pop() {
            body(element)
            count += 1
        }
        return count
    }

    /// Roughly how many elements are queued (exact from the producer's or the consumer's
    /// own thread when the other is idle).
    public var count: Int { tail.load(ordering: .acquiring) &- head.load(ordering: .acquiring) }
}
