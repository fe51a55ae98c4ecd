import CallsCore
import CallsTransport

/// Token buckets per peer address (by `IPAddress.limitKey`: an IPv6 peer's /64), in a bounded
/// table that spraying addresses cannot reset: when it is full, the buckets dropped first are
/// the full ones (the same as a fresh bucket, so nothing is lost), then the fullest; an
/// exhausted peer's bucket is the last to go.
///
/// Thread rules: a value; its owner serialises access (a lock).
struct PeerLimiter: Sendable {
    let capacity: Double
    let perSecond: Double
    let maxPeers: Int
    private var buckets: [String: RateLimiter] = [:]

    init(capacity: Double, perSecond: Double, maxPeers: Int = 65_536) {
        self.capacity = capacity
        self.perSecond = perSecond
        self.maxPeers = maxPeers
    }

    var count: Int { buckets.count }

    /// The tokens `peer` has now, without taking one.
    func available(_ peer: String, now: UInt64) -> Double { buckets[IPAddress.limitKey(peer)]?.available(now: now) ?? capacity }

    mutating func allow(_ peer: String, now: UInt64) -> Bool {
        let peer = IPAddress.limitKey(peer)
        if buckets[peer] == nil && buckets.count >= maxPeers { evict(now: now) }
        var b = buckets[peer] ?? RateLimiter(capacity: capacity, perSecond: perSecond)
        let ok = b.allow(now: now)
        buckets[peer] = b
        return ok
    }

    private mutating func evict(now: UInt64) {
        buckets = buckets.filter { $0.value.available(now: now) < capacity }
        guard buckets.count >= maxPeers else { return }
        // Every peer is mid-burst: keep the emptiest half (the ones being limited).
        let keep = buckets.sorted { $0.value.available(now: now) < $1.value.available(now: now) }.prefix(maxPeers / 2)
        buckets = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }
}
