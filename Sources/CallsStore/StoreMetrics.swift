import Synchronization

/// Timing of store operations, for `/metrics`. Safe from any thread.
public final class StoreMetrics: Sendable {
    public let operations = Atomic<UInt64>(0)
    public let totalMicroseconds = Atomic<UInt64>(0)
    public let maxMicroseconds = Atomic<UInt64>(0)
    public let failures = Atomic<UInt64>(0)
    /// Write batches committed by the store writer, the requests in them, and requests that
    /// failed (alone, in their savepoint, or with their whole batch).
    public let batches = Atomic<UInt64>(0)
    public let batchedRequests = Atomic<UInt64>(0)
    public let requestFailures = Atomic<UInt64>(0)

    package init() {}

    package func record(micros: UInt64, failed: Bool) {
        operations.add(1, ordering: .relaxed)
        totalMicroseconds.add(micros, ordering: .relaxed)
        if failed { failures.add(1, ordering: .relaxed) }
        var seen = maxMicroseconds.load(ordering: .relaxed)
        while micros > seen {
            let (exchanged, now) = maxMicroseconds.compareExchange(expected: seen, desired: micros, ordering: .relaxed)
            if exchanged { break }
            seen = now
        }
    }
}
