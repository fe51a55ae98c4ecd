/// A token bucket: `capacity` requests at once, refilled at `perSecond`. A value owned by one
/// thread or queue; the caller supplies the clock (monotonic nanoseconds) so tests are exact.
public struct RateLimiter: Sendable {
    public let capacity: Double
    public let perSecond: Double
    private var tokens: Double
    private var last: UInt64 = 0

    public init(capacity: Double, perSecond: Double) {
        self.capacity = capacity
        self.perSecond = perSecond
        tokens = capacity
    }

    /// The tokens it would have at `now` (without taking one).
    public func available(now: UInt64) -> Double {
        guard last != 0 && now > last else { return tokens }
        return min(capacity, tokens + Double(now - last) / 1e9 * perSecond)
    }

    /// Whole seconds until a bucket refilling at `perSecond` that holds `tokens` (less than one)
    /// has one again, for "try again in N s": at least 1. (Less a microsecond: 20 s into a 30 s
    /// wait is 10 s, not 10.000000001 rounded up.)
    public static func secondsUntilOne(tokens: Double, perSecond: Double) -> Int {
        max(1, Int(((1 - tokens) / perSecond - 1e-6).rounded(.up)))
    }

    /// Takes one token if there is one.
    public mutating func allow(now: UInt64) -> Bool {
        if last != 0 && now > last {
            tokens = min(capacity, tokens + Double(now - last) / 1e9 * perSecond)
        }
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
