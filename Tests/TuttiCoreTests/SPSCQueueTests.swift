import Foundation
import Testing
@testable import TuttiCore

@Suite("SPSCQueue")
struct SPSCQueueTests {
    @Test func keepsOrderRefusesWhenFullAndEmptiesBack() {
        let queue = SPSCQueue<Int>(capacity: 3)
        #expect(queue.capacity == 4, "rounded up to a power of two")
        #expect(queue.pop() == nil)
        for k in 0..<4 { #expect(queue.push(k)) }
        #expect(!queue.push(4), "full: refused, nothing overwritten")
        #expect(queue.count == 4)
        #expect(queue.pop() == 0)
        #expect(queue.push(5))
        var seen: [Int] = []
        #expect(queue.drain { seen.append($0) } == 4)
        #expect(seen == [1, 2, 3, 5])
        #expect(queue.pop() == nil && queue.count == 0)
    }

    @Test func releasesWhatItHoldsWhenPoppedAndWhenFreed() {
        final class Token: Sendable {
            let freed: @Sendable () -> Void
            init(_ freed: @escaping @Sendable () -> Void) { self.freed = freed }
            deinit { freed() }
        }
        let count = Counter()
        do {
            let queue = SPSCQueue<Token>(capacity: 4)
            queue.push(Token { count.add() })
            queue.push(Token { count.add() })
            _ = queue.pop()
            #expect(count.value == 1, "a popped element is moved out, not kept in its slot")
        }
        #expect(count.value == 2, "the queue frees what is left in it")
    }

    /// One producer and one consumer thread hammer a small queue: every element arrives,
    /// once, in order, and the producer's refusals are exactly the elements it retried.
    @Test func oneProducerOneConsumerLoseNothingAndKeepOrder() async {
        let queue = SPSCQueue<[UInt8]>(capacity: 8)
        let total = 200_000
        let producer = Thread {
            var k = 0
            while k < total {
                let value = [UInt8(truncatingIfNeeded: k), UInt8(truncatingIfNeeded: k >> 8), UInt8(truncatingIfNeeded: k >> 16)]
                if queue.push(value) { k += 1 }
            }
        }
        producer.start()
        var next = 0
        var outOfOrder = 0
        let deadline = Date().addingTimeInterval(30)
        while next < total, Date() < deadline {
            guard let value = queue.pop() else { continue }
            let k = Int(value[0]) | Int(value[1]) << 8 | Int(value[2]) << 16
            if k != next { outOfOrder += 1 }
            next += 1
        }
        #expect(next == total)
        #expect(outOfOrder == 0)
        #expect(queue.pop() == nil)
    }
}

private final class Counter: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
