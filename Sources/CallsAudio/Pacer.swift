import CallsCore
#if canImport(Glibc)
import Glibc
#endif

/// Sleeps until absolute deadlines one period apart on CLOCK_MONOTONIC, so a synthetic
/// endpoint runs at exactly real-time rate without drift. Falls back to "now" when it has
/// fallen more than a few periods behind (after a stall), rather than bursting to catch up.
/// A value owned by one thread.
public struct Pacer: Sendable {
    public let periodNanoseconds: UInt64
    private var next: UInt64 = 0

    public init(periodNanoseconds: UInt64) { self.periodNanoseconds = periodNanoseconds }

    /// Blocks until the next period starts.
    public mutating func wait() { wait(nanoseconds: periodNanoseconds) }

    /// Blocks until `samples` (at 48 kHz) after the previous deadline: endpoints pace by what
    /// they actually read or wrote, so callers may use chunks shorter than a frame.
    public mutating func wait(samples: Int) {
        wait(nanoseconds: UInt64(samples) * 1_000_000_000 / UInt64(AudioFormat.sampleRate))
    }

    /// Blocks until `step` after the previous deadline (a video sender whose frame rate changes).
    public mutating func wait(nanoseconds step: UInt64) {
        let now = monotonicNanoseconds()
        if next == 0 || now > next + 4 * max(step, periodNanoseconds) { next = now }
        next += step
        var ts = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
