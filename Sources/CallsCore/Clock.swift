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
