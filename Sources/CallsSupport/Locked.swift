#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: `withLock` is the only way to it. Used instead of
/// `Synchronization.Mutex` because ThreadSanitizer sees pthread locks (it does not see the
/// futex-based `Mutex`, and reported every access inside its closures as a race), so a
/// `--sanitize=thread` run checks this state for real. Same call shape as `Mutex`.
///
/// Sendable only when `Value` is (as NIO's `NIOLockedValueBox`): a lock makes access to a
/// value exclusive, it does not make a non-Sendable value safe to hand to another thread.
///
/// Thread rules: any thread; never call `withLock` on the same instance from inside its own
/// closure (not recursive).
public final class Locked<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked: @unchecked Sendable where Value: Sendable {}
