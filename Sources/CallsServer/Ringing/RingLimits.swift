import CallsCore
/// How often calls may ring (#34): per caller, per callee and per group, each a token bucket
/// (a burst, then a rate per minute; a rate of 0: no limit). Over any of them `initiateCall` is
/// refused with `ERR_RATE_LIMITED` and nothing rings. A value; whoever holds it owns it (the ring core).
public struct RingLimits: Sendable {
    public struct Rule: Sendable, Equatable {
        public var burst: Double
        public var perMinute: Double
        public init(burst: Double, perMinute: Double) { self.burst = burst; self.perMinute = perMinute }
        /// `perMinute` a minute with a burst of half that (at least 1); 0: no limit.
        public init(perMinute: Int) { self.init(burst: max(1, Double(perMinute / 2)), perMinute: Double(perMinute)) }
    }

    /// Calls one user may start.
    public var caller = Rule(burst: 5, perMinute: 10)
    /// Calls that may ring one user.
    public var callee = Rule(burst: 3, perMinute: 6)
    /// Calls that may ring one group.
    public var group = Rule(burst: 2, perMinute: 4)

    public init() {}

    /// No limits (benchmarks of the ringing path itself).
    public static let unlimited: RingLimits = {
        var l = RingLimits()
        l.caller.perMinute = 0
        l.callee.perMinute = 0
        l.group.perMinute = 0
        return l
    }()

    /// The buckets by key (`caller:uid`, `callee:uid`, `group:guid`); at most `maxKeys`, the
    /// full ones (nothing to remember) dropped first when it is reached.
    private var buckets: [String: RateLimiter] = [:]
    static let maxKeys = 50_000

    /// Whether a call from `caller` to `receiver` (a user or a group) may ring at `now`
    /// (monotonic nanoseconds); it takes from every bucket only when all have a token. Returns
    /// nil when allowed, else which limit said no.
    mutating func admit(caller uid: String, receiver: String, isGroup: Bool, now: UInt64) -> String? {
        let keys = [("caller:" + uid, caller), ((isGroup ? "group:" : "callee:") + receiver, isGroup ? group : callee)].filter { $0.1.perMinute > 0 }
        for (key, rule) in keys where (buckets[key]?.available(now: now) ?? rule.burst) < 1 {
            return key.hasPrefix("caller:") ? "You are calling too often; try again in a minute."
                : isGroup ? "This group has been called too often; try again in a minute."
                : "This user has been called too often; try again in a minute."
        }
        if buckets.count >= Self.maxKeys {
            buckets = buckets.filter { $0.value.available(now: now) < $0.value.capacity }
            if buckets.count >= Self.maxKeys { buckets.removeAll() }
        }
        for (key, rule) in keys {
            _ = buckets[key, default: RateLimiter(capacity: rule.burst, perSecond: rule.perMinute / 60)].allow(now: now)
        }
        return nil
    }
}
