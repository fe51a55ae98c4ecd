import CallsCore
import Foundation
import CallsRedis
import CallsTransport

/// A per-peer rate limit that every node shares, kept in Redis: behind a load balancer one
/// address's requests land on any node, and the limit holds for their sum, not per node.
///
/// Each peer's limit is a generic cell rate (GCRA, the token bucket as one timestamp): the key
/// `callroom:rate:{name}:{peer}` (an IPv6 peer by its /64) holds the theoretical arrival time in
/// microseconds of Redis's own clock (`TIME`, so the nodes' clocks never matter); a request is
/// allowed when that time is at most `capacity − 1` intervals ahead of now, and moves it one
/// interval on. One EVAL per check; the key expires when the bucket is full again, so idle
/// peers cost nothing.
///
/// Redis unreachable: `allow` answers nil (the caller's own per-node limit stands alone) and
/// Redis is not tried again for `retryAfterSeconds`, so a black-holed Redis does not hold each
/// request up for the command timeout.
///
/// Thread rules: any thread; the connection is used under its lock, one command at a time.
final class SharedRateLimiter: Sendable {
    let name: String
    private let address: String
    /// The script's ARGV: the interval between requests and the burst's tolerance (µs).
    private let interval: String
    private let tolerance: String
    private let retryAfterNanoseconds: UInt64
    /// The connection (made on first use, dropped when Redis is unavailable) and when to try again.
    private let connection = Locked<(redis: RedisClient?, offlineUntil: UInt64)>((nil, 0))

    /// KEYS[1] the peer's key; ARGV[1] the interval, ARGV[2] the tolerance (µs). 1 allowed, 0 not.
    static let script = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local interval = tonumber(ARGV[1])
        local tat = tonumber(redis.call('GET', KEYS[1])) or now
        if tat < now then tat = now end
        if tat - now > tonumber(ARGV[2]) then return 0 end
        local after = tat + interval
        redis.call('SET', KEYS[1], string.format('%.0f', after), 'PX', math.floor((after - now) / 1000) + 1)
        return 1
        """

    init(redis address: String, name: String, capacity: Double, perSecond: Double, retryAfterSeconds: Double = 5) {
        self.address = address
        self.name = name
        let us = (1e6 / max(0.001, perSecond)).rounded()
        interval = String(format: "%.0f", us)
        tolerance = String(format: "%.0f", us * (max(1, capacity) - 1))
        retryAfterNanoseconds = UInt64(retryAfterSeconds * 1e9)
    }

    static func key(name: String, peer: String) -> String { "callroom:rate:\(name):\(IPAddress.limitKey(peer))" }

    /// Whether `peer` may make one more request, counted cluster-wide; nil when Redis cannot
    /// answer (now, or failed less than `retryAfterSeconds` ago).
    func allow(_ peer: String, now: UInt64 = monotonicNanoseconds()) -> Bool? {
        connection.withLock { c -> Bool? in
            guard now >= c.offlineUntil else { return nil }
            do throws(RedisError) {
                if c.redis == nil { c.redis = try RedisClient(address: address, timeoutMs: 250) }
                guard let r = c.redis else { return nil }
                let reply = try r.command(["EVAL", Self.script, "1", Self.key(name: name, peer: peer), interval, tolerance])
                return reply.integer == 1
            } catch {
                if case .unavailable = error { c.redis = nil }
                c.offlineUntil = now + retryAfterNanoseconds
                return nil
            }
        }
    }
}
