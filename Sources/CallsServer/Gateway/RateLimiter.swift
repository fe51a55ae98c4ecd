/// A token bucket: `capacity` requests at once, refilled at `perSecond`. A value owned by one
/// thread or queue; the caller supplies the clock (monotonic nanoseconds) so tests are exact.
struct RateLimiter: Sendable {
    let capacity: Double
    let perSecond: Double
    private var tokens: Double
    private var last: UInt64 = 0

    init(capacity: Double, perSecond: Double) {
        self.capacity = capacity
        self.perSecond = perSecond
        tokens = capacity
    }

    /// The tokens it would have at `now` (without taking one).
    func available(now: UInt64) -> Double {
        guard last != 0 && now > last else { return tokens }
        return min(capacity, tokens + Double(now - last) / 1e9 * perSecond)
    }

    /// Takes one token if there is one.
    mutating func allow(now: UInt64) -> Bool {
        if last != 0 && now > last {
            tokens = min(capacity, tokens + Double(now - last) / 1e9 * perSecond)
        }
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
