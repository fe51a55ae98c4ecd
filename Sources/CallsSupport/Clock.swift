import Foundation

/// Wall-clock milliseconds since the Unix epoch, as used in every wire timestamp.
public func epochMilliseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded())
}

/// A monotonic clock reading in nanoseconds (CLOCK_MONOTONIC). Safe from any thread,
/// including real-time audio threads (no allocation, no locks).
@inlinable public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CPU time the calling thread has used, in nanoseconds (CLOCK_THREAD_CPUTIME_ID: a system call,
/// about half a microsecond here). Safe from any thread; no allocation, no locks.
public func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
