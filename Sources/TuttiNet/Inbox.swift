import Glibc

/// State that threads share, and a wake-up for the one that sleeps on it: a lock, and a
/// condition variable on CLOCK_MONOTONIC (a wall clock set back would stretch a wait). The
/// one way tutti's threads hand each other work: a sender's inbox of transport actions, a
/// decoder's buffer, a remote stream's bytes, a TLS link's records.
///
/// `withLock` reads or changes the state; `post` changes it and wakes every waiter; `wait`
/// sleeps until the state is as asked or a timeout passes, then works on it under the lock.
public final class Inbox<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var state: State

    public init(_ initial: State) {
        state = initial
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Reads or changes the state, waking no one.
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Changes the state and wakes every thread waiting on it.
    @discardableResult
    public func post<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Wakes every waiter without a change (one that must look again: a stop flag elsewhere).
    public func wake() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Sleeps until `ready` holds of the state, or `timeout` nanoseconds have passed (nil:
    /// until it holds), then runs `body` on the state under the lock, told whether `ready`
    /// held.
    public func wait<R>(timeout: Int64?, until ready: (State) -> Bool, then body: (inout State, Bool) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let timeout {
            let deadline = SystemClock.hostNanoseconds() + max(0, timeout)
            var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while !ready(state), SystemClock.hostNanoseconds() < deadline {
                _ = pthread_cond_timedwait(condition, mutex, &until)
            }
        } else {
            while !ready(state) { pthread_cond_wait(condition, mutex) }
        }
        return try body(&state, ready(state))
    }

    /// Sleeps until `ready` holds of the state or `timeout` nanoseconds have passed; whether
    /// it holds.
    @discardableResult
    public func wait(timeout: Int64?, until ready: (State) -> Bool) -> Bool {
        wait(timeout: timeout, until: ready) { _, held in held }
    }
}
