#if canImport(Glibc)
import Glibc
#endif

/// State that is not `Sendable` (C handles, the buffers handed to them) owned behind a pthread
/// mutex: `Synchronization.Mutex`'s contract on the lock ThreadSanitizer sees (see `Locked`).
/// The value goes in once (`sending`), `withLock` lends it as `inout sending`, and results leave
/// as `sending`, so the compiler checks that nothing of the state escapes the lock and that no
/// caller's non-Sendable value (a pointer into its buffer) is kept with it — which is what makes
/// the box Sendable whatever it holds (a caller's samples are copied in, not pointed to).
///
/// Thread rules: any thread; not recursive.
public final class LockedState<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    public init(_ initial: consuming sending Value) {
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
